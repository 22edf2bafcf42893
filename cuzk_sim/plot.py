"""The picture of a run, in the style of PyTorch's memory_viz: per device, VRAM as areas
stacked by buffer; the host RAM budget (reservations, pinned); one lane per worker and
synthesizer; OOM, fallback and skip markers drawn so that none hides another.

It reads a bounded recording (cuzk_sim/recording.py): the VRAM and host series are
bucketed (each bucket shows its peak and what made it up), lanes merge bars closer than a
pixel, so a 24 h farm draws as fast as a one-minute run.
"""

from __future__ import annotations

from dataclasses import dataclass

from cuzk_sim.recording import RESIDUAL
from cuzk_sim.result import OomEvent, SimResult

GIB = 2**30
TOP_BUFFERS = 9  # buffers drawn in their own colour; the rest as "other buffers"
LANE_PIXELS = 2500  # lane bars closer than 1 / LANE_PIXELS of the x range are merged


def _kind(e: OomEvent) -> str:
    """OOM (the worker panicked), fallback (an allocation failed, a fallback path was
    taken) or skip (a memory-aware check declined before allocating)."""
    if e.fatal:
        return "OOM"
    return "skip" if e.reason.startswith("skip") else "fallback"


MARKERS = {  # hollow and of different sizes: a fallback ring around an OOM cross shows both
    "OOM": dict(marker="X", color="red", markersize=9, zorder=7, linestyle="none"),
    "fallback": dict(
        marker="o",
        markerfacecolor="none",
        markeredgecolor="darkorange",
        markeredgewidth=1.8,
        markersize=14,
        zorder=6,
        linestyle="none",
    ),
    "skip": dict(
        marker="v",
        markerfacecolor="none",
        markeredgecolor="tab:blue",
        markeredgewidth=1.5,
        markersize=11,
        zorder=8,
        linestyle="none",
    ),
}


def _merge(intervals: list[tuple[float, float]], gap: float) -> list[tuple[float, float]]:
    """Sorted (start, duration) bars with neighbours closer than `gap` joined."""
    out: list[list[float]] = []
    for start, end in sorted(intervals):
        if out and start - out[-1][1] <= gap:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(a, b - a) for a, b in out]


def _in_window(t: float, window: tuple[float, float] | None) -> bool:
    return window is None or window[0] <= t <= window[1]


@dataclass(frozen=True)
class Marker:
    panel: str  # "gpu<d>" (its VRAM), "host" (the host RAM budget) or "lanes"
    kind: str  # OOM | fallback | skip
    t: float
    y: float  # GiB in use when it happened (memory panels) or the lane's row


def markers(
    result: SimResult, lanes: list[str], window: tuple[float, float] | None = None
) -> list[Marker]:
    """Where each OOM, fallback and skip is drawn: on the memory that refused (a host
    OOM on the host panel, at the budget in use then) and on the worker's lane."""
    out: list[Marker] = []
    for e in result.oom_events:
        if not _in_window(e.time_s, window):
            continue
        kind = _kind(e)
        if e.where == "host":
            out.append(
                Marker("host", kind, e.time_s, (result.host_budget_bytes - e.free_bytes) / GIB)
            )
        else:
            y = (result.vram_total_bytes[e.device] - e.free_bytes) / GIB
            out.append(Marker(f"gpu{e.device}", kind, e.time_s, y))
        if e.worker in lanes:
            out.append(Marker("lanes", kind, e.time_s, float(lanes.index(e.worker))))
    return out


def lanes_of(result: SimResult) -> list[str]:
    """Every GPU worker (busy or not, holding pinned memory or not), then synthesizers."""
    tl = result.timeline
    assert tl is not None
    return list(tl.workers) + [f"synth{i}" for i in range(tl.synthesizers)]


def write_plot(result: SimResult, path: str, window: tuple[float, float] | None = None) -> None:
    tl = result.timeline
    if tl is None:
        raise ValueError("write_plot needs a result recorded with a Timeline")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    window = window or tl.window
    end = result.sim_time_s if window is None else min(window[1], result.sim_time_s)
    x0 = 0.0 if window is None else window[0]
    devices = sorted(result.vram_total_bytes)
    lanes = lanes_of(result)
    heights = [1.6] * len(devices) + [1.6, max(1.2, 0.28 * len(lanes))]
    fig, axes = plt.subplots(
        len(heights),
        1,
        figsize=(13, sum(heights) + 1.2),
        sharex=True,
        gridspec_kw={"height_ratios": heights},
        squeeze=False,
    )
    axes = [a[0] for a in axes]
    device_axes = dict(zip(devices, axes, strict=False))
    ax_host, ax_lanes = axes[len(devices)], axes[len(devices) + 1]

    layers, colours = _vram_panels(result, device_axes, end)
    _host_panel(result, ax_host, end)
    # --- markers: on the memory that failed, and on the worker's lane ---
    panels = {f"gpu{d}": ax for d, ax in device_axes.items()}
    panels.update(host=ax_host, lanes=ax_lanes)
    for m in markers(result, lanes, window):
        panels[m.panel].plot(m.t, m.y, **MARKERS[m.kind])
    _lane_panel(result, lanes, ax_lanes, x0, end)
    _legend_and_title(fig, result, devices, layers, colours)
    height = sum(heights) + 1.2
    fig.tight_layout(rect=(0, 0.8 / height, 1, 1 - 0.45 / height))  # legend and title room
    from cuzk_sim.outputs import save_figure

    try:
        save_figure(fig, path, dpi=100)  # whole or not at all
    finally:
        plt.close(fig)


def _vram_panels(
    result: SimResult, device_axes: dict, end: float
) -> tuple[list[str], dict[str, object]]:
    """VRAM per device, stacked by buffer (each bucket: its peak and its make-up); the
    layers drawn and their colours, for the legend."""
    import matplotlib.pyplot as plt

    tl = result.timeline
    assert tl is not None
    devices = list(device_axes)
    series = {d: tl.device_series(d, end) for d in devices}
    totals: dict[str, float] = {}
    for rows in series.values():
        for _, b in rows:
            for name, n in (b.peak_parts or {}).items():
                totals[name] = max(totals.get(name, 0), n)
    named = [n for n in sorted(totals, key=lambda n: -totals[n]) if n != RESIDUAL]
    shown = named[:TOP_BUFFERS]
    layers = [RESIDUAL, *shown, "other buffers"]
    cmap = plt.get_cmap("tab20")
    colours = {RESIDUAL: "lightgrey", "other buffers": "dimgrey"}
    colours.update({n: cmap(i % 20) for i, n in enumerate(shown)})
    for d in devices:
        ax = device_axes[d]
        rows = series[d]
        if rows:
            xs = [t for t, _ in rows] + [min(rows[-1][0] + tl.vram[d].width, end)]
            base = [0.0] * len(rows)
            for layer in layers:
                ys = []
                for _, b in rows:
                    parts = b.peak_parts or {RESIDUAL: b.peak}
                    if layer == "other buffers":
                        ys.append(
                            sum(v for k, v in parts.items() if k not in shown and k != RESIDUAL)
                        )
                    else:
                        ys.append(parts.get(layer, 0))
                if not any(ys):
                    continue
                top = [b + y / GIB for b, y in zip(base, ys, strict=True)]
                ax.fill_between(
                    xs,
                    base + base[-1:],
                    top + top[-1:],
                    step="post",
                    color=colours[layer],
                    linewidth=0,
                )
                base = top
        ax.axhline(result.vram_total_bytes[d] / GIB, linestyle="--", linewidth=0.8, color="k")
        ax.set_ylabel(f"GPU {d}\nGiB", fontsize=8)
        ax.set_ylim(0, result.vram_total_bytes[d] / GIB * 1.08)
        ax.tick_params(labelsize=7)
    return layers, colours


def _host_panel(result: SimResult, ax_host, end: float) -> None:
    """The host RAM budget: reservations (synthesis, PCE) and pinned buffers."""
    tl = result.timeline
    assert tl is not None
    rows = tl.host.series(end)
    pinned = {t: b.peak for t, b in tl.pinned.series(end)}
    if rows:
        xs = [t for t, _ in rows] + [min(rows[-1][0] + tl.host.width, end)]
        used = [b.peak / GIB for _, b in rows]
        pin = [pinned.get(t, 0) / GIB for t, _ in rows]
        ax_host.fill_between(xs, used + used[-1:], step="post", color="wheat", linewidth=0)
        ax_host.fill_between(xs, pin + pin[-1:], step="post", color="peru", linewidth=0)
    ax_host.axhline(result.host_budget_bytes / GIB, linestyle="--", linewidth=0.8, color="k")
    ax_host.set_ylabel("host RAM\nGiB", fontsize=8)
    ax_host.set_ylim(0, result.host_budget_bytes / GIB * 1.08)
    ax_host.tick_params(labelsize=7)


def _lane_panel(result: SimResult, lanes: list[str], ax_lanes, x0: float, end: float) -> None:
    """The lanes: partitions, synthesis, mutex holds and waits (where recorded)."""
    gap = max(end - x0, 1e-9) / LANE_PIXELS
    by_lane: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for s in result.spans:
        if s.end_s < x0 or s.start_s > end:
            continue
        cat = "wait" if s.cat == "lock" and s.name.startswith("wait") else s.cat
        if cat in ("partition", "synthesis", "lock", "wait"):
            by_lane.setdefault((s.track, cat), []).append((s.start_s, s.end_s))
    style = {
        "partition": ("tab:blue", 0.8, 0.8),
        "synthesis": ("tab:green", 0.8, 0.8),
        "lock": ("tab:purple", 0.3, 1.0),
        "wait": ("thistle", 0.3, 1.0),
    }
    for (track, cat), bars in sorted(by_lane.items(), key=lambda kv: kv[0][1] == "lock"):
        if track not in lanes:
            continue
        colour, height, alpha = style[cat]
        row = lanes.index(track)
        ax_lanes.broken_barh(
            _merge(bars, gap), (row - height / 2, height), color=colour, alpha=alpha
        )
    ax_lanes.set_yticks(range(len(lanes)), lanes, fontsize=7)
    ax_lanes.set_ylim(len(lanes) - 0.5, -0.5)
    ax_lanes.set_xlabel("simulated time (s)")
    span = end - x0 if end > x0 else 1.0
    ax_lanes.set_xlim(x0 - 0.005 * span, x0 + 1.015 * span)  # markers at the ends stay whole


def _legend_and_title(
    fig, result: SimResult, devices: list[int], layers: list[str], colours: dict[str, object]
) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    tl = result.timeline
    assert tl is not None
    handles = [Patch(color=colours[n], label=n) for n in layers if n in colours]
    handles += [
        Patch(color="wheat", label="host: reserved"),
        Patch(color="peru", label="host: pinned"),
        Patch(color="tab:blue", label="partition"),
        Patch(color="tab:green", label="synthesis"),
        Patch(color="tab:purple", label="mutex held"),
        Patch(color="thistle", label="mutex wait"),
    ]
    handles += [Line2D([], [], label=k, **MARKERS[k]) for k in ("OOM", "fallback", "skip")]
    fig.legend(handles=handles, loc="lower center", ncol=8, fontsize=7, frameon=False)
    note = ""
    if tl.detail_cut_at is not None:
        note = f"; mutex bars up to t={tl.detail_cut_at:.0f} s (detail budget)"
    width = tl.vram[devices[0]].width if devices and devices[0] in tl.vram else 0
    fig.suptitle(
        f"{result.scenario}: VRAM per device stacked by buffer (peak of each "
        f"{width:.3g} s bucket), host RAM, worker lanes{note}",
        fontsize=10,
    )
