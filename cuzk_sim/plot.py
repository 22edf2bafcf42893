"""PNG of a run: VRAM per device over time with OOM markers, and a worker Gantt chart."""

from __future__ import annotations

from cuzk_sim.result import SimResult

GIB = 2**30


def write_plot(result: SimResult, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_mem, ax_gantt) = plt.subplots(
        2, 1, figsize=(12, 7), sharex=True, gridspec_kw={"height_ratios": [1, 1]}
    )
    for dev in sorted(result.vram_total_bytes):
        pts = [(t, used) for t, d, used in result.vram_samples if d == dev]
        if pts:
            ts, used = zip(*pts, strict=True)
            ax_mem.step(ts, [u / GIB for u in used], where="post", label=f"GPU {dev} used")
        ax_mem.axhline(
            result.vram_total_bytes[dev] / GIB, linestyle="--", linewidth=0.8, color="grey"
        )
    for e in result.oom_events:
        ax_mem.plot(
            e.time_s,
            (result.vram_total_bytes[e.device] - e.free_bytes) / GIB,
            "x" if e.fatal else "o",
            color="red" if e.fatal else "orange",
            markersize=9,
        )
    ax_mem.set_ylabel("VRAM (GiB)")
    ax_mem.set_title(f"{result.scenario}: VRAM per device (x = OOM, o = fallback)")
    ax_mem.legend(loc="upper right", fontsize=8)

    tracks = sorted({s.track for s in result.spans if s.cat in ("partition", "synthesis")})
    colors = {"partition": "tab:blue", "synthesis": "tab:green", "lock": "tab:purple"}
    layer = {"synthesis": 0, "partition": 0, "lock": 1}  # mutex bars on top
    for row, track in enumerate(tracks):
        for s in sorted(result.spans, key=lambda s: layer.get(s.cat, 2)):
            if s.track == track and s.cat in colors:
                height = 0.8 if s.cat != "lock" else 0.3
                ax_gantt.broken_barh(
                    [(s.start_s, s.end_s - s.start_s)],
                    (row - 0.4, height),
                    color="thistle" if s.name.startswith("wait") else colors[s.cat],
                    alpha=0.8 if s.cat != "lock" else 1,
                )
    for e in result.fatal_ooms:
        if e.worker in tracks:
            ax_gantt.plot(e.time_s, tracks.index(e.worker), "x", color="red", markersize=9)
    ax_gantt.set_yticks(range(len(tracks)), tracks)
    ax_gantt.set_xlabel("simulated time (s)")
    ax_gantt.set_title(
        "workers (blue: partition, purple: mutex held, pale: waiting, green: synthesis)"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
