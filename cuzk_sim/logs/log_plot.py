"""A PNG (or PDF/SVG) of a log: each worker's GPU sections and mutex waits over time,
and synthesis, like the model's Gantt chart (cuzk_sim/results/run_plot.py)."""

from __future__ import annotations

from cuzk_sim.logs.timeline import Analyzer


def write_log_plot(a: Analyzer, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    parts = [p for p in a.closed if p.start is not None]
    tracks = sorted({a.worker_name(p.worker) for p in parts}) + ["synthesis"]
    fig, ax = plt.subplots(figsize=(12, 1.2 + 0.5 * len(tracks)))
    color = {"done": "tab:blue", "failed": "tab:red", "unfinished": "tab:orange"}
    for p in a.closed:
        off = a.run_offsets.get(p.run, 0.0)
        if p.synth_start is not None and p.synth_end is not None:
            row = len(tracks) - 1
            ax.broken_barh(
                [(off + p.synth_start / 1000, (p.synth_end - p.synth_start) / 1000)],
                (row - 0.4, 0.8),
                color="tab:green",
                alpha=0.3,
            )
        if p.start is None:
            continue
        row = tracks.index(a.worker_name(p.worker))
        end = p.end if p.end is not None else p.start
        ax.broken_barh(
            [(off + p.start / 1000, (end - p.start) / 1000)],
            (row - 0.4, 0.8),
            color=color.get(p.outcome, "grey"),
            alpha=0.8,
        )
        wait = p.timing.get("mutex_wait_ms")
        if wait:
            t0 = off + (p.start + p.timing.get("pre_lock_cpu_ms", 0)) / 1000
            ax.broken_barh([(t0, wait / 1000)], (row - 0.15, 0.3), color="thistle")
    ax.set_yticks(range(len(tracks)), tracks)
    ax.set_xlabel("time since the engine started (s)")
    ax.set_title(
        "GPU sections per worker (blue done, red failed, orange unfinished; pale: "
        "mutex wait), synthesis (green)"
    )
    fig.tight_layout()
    from cuzk_sim.io.outputs import save_figure

    try:
        save_figure(fig, path, dpi=110)  # whole or not at all
    finally:
        plt.close(fig)
