"""PNG plots of a sweep: a verdict/throughput heatmap over two axes, and the frontiers.

Heatmap: one panel per combination of the remaining axes (at most MAX_PANELS); a safe
cell is coloured by seconds per proof (yellow = fastest, purple = slowest) and labelled
with it, an OOM cell is red and names the first failing buffer, a stall orange, unusable
input grey.
Frontier: seconds per proof against card VRAM and against workers per device, every
configuration drawn (safe dots, unsafe crosses), the Pareto frontier as a step line.
Files are written to a temporary name and renamed, like the rows.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from cuzk_sim.sweep.spec import SweepSpec

MAX_PANELS = 12
MAX_LABELLED_CELLS = 400  # beyond this, colours only (text would be unreadable and slow)
OOM_RGB = (0.84, 0.19, 0.15)
STALL_RGB = (0.99, 0.6, 0.2)
ERROR_RGB = (0.8, 0.8, 0.8)
EMPTY_RGB = (1.0, 1.0, 1.0)


def _save(fig, path: Path) -> None:
    from cuzk_sim.io.outputs import save_figure

    save_figure(fig, path, dpi=110, bbox_inches="tight")


def _label(v: Any) -> str:
    return str(v)


def _short(path: str) -> str:
    return path.rsplit(".", 1)[-1]


def write_heatmap(spec: SweepSpec, rows: list[dict], summary: dict, path: Path) -> bool:
    fig = heatmap_figure(spec, rows, summary)
    if fig is None:
        return False
    import matplotlib.pyplot as plt

    _save(fig, path)
    plt.close(fig)
    return True


def heatmap_figure(spec: SweepSpec, rows: list[dict], summary: dict):
    """The heatmap's figure (None without a plot axis). Constrained layout keeps the
    figure's title clear of the panels' titles, whatever the number of panels."""
    if spec.plot_x is None:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import colormaps
    from matplotlib.colors import Normalize

    xa = spec.axis(spec.plot_x)
    ya = spec.axis(spec.plot_y) if spec.plot_y else None
    assert xa is not None
    others = [a for a in spec.axes if a.path not in (xa.path, ya.path if ya else None)]
    combos = list(itertools.product(*(a.values for a in others)))
    shown = combos[:MAX_PANELS]
    by_cell = {}
    for r in rows:
        by_cell[tuple(repr(r[a.path]) for a in spec.axes)] = r
    yvals = list(ya.values) if ya else [None]
    spp = [r["seconds_per_proof"] for r in rows if r["safe"] and r["seconds_per_proof"]]
    norm = Normalize(min(spp), max(spp)) if spp else Normalize(0, 1)
    cmap = colormaps["viridis_r"]  # fast = yellow

    cols = min(len(shown), 3)
    nrows = (len(shown) + cols - 1) // cols
    fig, axes = plt.subplots(
        nrows,
        cols,
        figsize=(1.6 + 1.35 * len(xa.values) * cols, 1.3 + 0.55 * len(yvals) * nrows + 0.5),
        squeeze=False,
        layout="constrained",
    )
    labelled = len(shown) * len(xa.values) * len(yvals) <= MAX_LABELLED_CELLS
    for n, combo in enumerate(shown):
        ax = axes[n // cols][n % cols]
        fixed = {a.path: v for a, v in zip(others, combo, strict=True)}
        image = []
        for yv in yvals:
            line = []
            for xv in xa.values:
                cfg = {xa.path: xv, **fixed}
                if ya:
                    cfg[ya.path] = yv
                r = by_cell.get(tuple(repr(cfg[a.path]) for a in spec.axes))
                line.append(r)
            image.append(line)
        rgb = [[_colour(r, cmap, norm) for r in line] for line in image]
        ax.imshow(rgb, aspect="auto", origin="lower")
        for i, line in enumerate(image if labelled else []):
            for j, r in enumerate(line):
                red, green, blue = rgb[i][j]
                light = 0.299 * red + 0.587 * green + 0.114 * blue > 0.5
                ax.text(
                    j,
                    i,
                    _cell_text(r),
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="black" if light else "white",
                )
        ax.set_xticks(range(len(xa.values)), [_label(v) for v in xa.values], fontsize=8)
        ax.set_xlabel(_short(xa.path))
        if ya:
            ax.set_yticks(range(len(yvals)), [_label(v) for v in yvals], fontsize=8)
            ax.set_ylabel(_short(ya.path))
        else:
            ax.set_yticks([])
        ax.set_title(", ".join(f"{_short(k)}={v}" for k, v in fixed.items()), fontsize=8)
    if spp:
        from matplotlib.cm import ScalarMappable

        bar = fig.colorbar(ScalarMappable(norm, cmap), ax=axes.ravel().tolist(), shrink=0.8)
        bar.set_label("s/proof (safe)", fontsize=8)
    for n in range(len(shown), nrows * cols):
        axes[n // cols][n % cols].axis("off")
    more = f" (first {MAX_PANELS} of {len(combos)} panels)" if len(combos) > len(shown) else ""
    fig.suptitle(
        f"{spec.name}: s/proof when safe; OOM red, stall orange, error grey{more}", fontsize=9
    )
    return fig


def _colour(r: dict | None, cmap, norm) -> tuple[float, float, float]:
    if r is None:
        return EMPTY_RGB
    if r["error"] is not None:
        return ERROR_RGB
    if r["oom"] or (r["oom_probability"] or 0) > 0:
        return OOM_RGB
    if r["stalled"]:
        return STALL_RGB
    if r["seconds_per_proof"] is None:
        return ERROR_RGB
    return tuple(cmap(norm(r["seconds_per_proof"]))[:3])


def _cell_text(r: dict | None) -> str:
    if r is None:
        return ""
    if r["error"] is not None:
        return "error"
    if r["oom"] or (r["oom_probability"] or 0) > 0:
        p, low, high = (
            r["oom_probability"],
            r.get("oom_probability_low"),
            r.get("oom_probability_high"),
        )
        buf = r["first_oom_buffer"] or ""
        if p is None:
            return f"OOM\n{buf}"
        ci = f"\n[{low:.2f}, {high:.2f}]" if low is not None and high is not None else ""
        return f"OOM p={p:.2f}{ci}\n{buf}"
    if r["stalled"]:
        return "stall"
    s = r["seconds_per_proof"]
    return f"{s:.1f} s" if s is not None else "-"


def write_frontier(spec: SweepSpec, rows: list[dict], summary: dict, path: Path) -> bool:
    fig = frontier_figure(spec, rows, summary)
    if fig is None:
        return False
    import matplotlib.pyplot as plt

    _save(fig, path)
    plt.close(fig)
    return True


def frontier_figure(spec: SweepSpec, rows: list[dict], summary: dict):
    """Seconds per proof against VRAM and against workers (a column of panels each): the
    safe configurations and the Pareto frontier on the s/proof axis; the OOM, stalled
    and unusable ones in their own marker row below it (they have no throughput), on
    the same x axis. None when no row is usable."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    usable = [r for r in rows if r["error"] is None and r["vram_bytes"] is not None]
    if not usable:
        return None
    panels = [
        p
        for p in (
            ("vram_bytes", "frontier_vram", 2**30, "card VRAM (GiB)"),
            ("workers_per_device", "frontier_workers", 1, "GPU workers per device"),
        )
        if len({r[p[0]] for r in usable}) > 1  # a panel over one value says nothing
    ] or [("vram_bytes", "frontier_vram", 2**30, "card VRAM (GiB)")]
    fig, axes = plt.subplots(
        2,
        len(panels),
        figsize=(5 * len(panels), 4.4),
        squeeze=False,
        sharex="col",
        gridspec_kw={"height_ratios": [5, 1]},
        layout="constrained",
    )
    for n, (column, front_key, scale, label) in enumerate(panels):
        ax, strip = axes[0][n], axes[1][n]
        safe = [r for r in usable if r["safe"] and r["seconds_per_proof"] is not None]
        unsafe = [r for r in usable if not r["safe"]]
        xs = [r[column] / scale for r in usable]
        ax.scatter(
            [r[column] / scale for r in safe],
            [r["seconds_per_proof"] for r in safe],
            s=14,
            label="safe",
            gid="safe",
        )
        front = summary[front_key]
        if front:
            fx = [p[column] / scale for p in front] + [max(xs)]
            fy = [p["seconds_per_proof"] for p in front]
            ax.step(fx, fy + fy[-1:], where="post", color="black", lw=1.2, label="Pareto frontier")
            ax.scatter(fx[:-1], fy, color="black", s=22, zorder=3, gid="frontier")
        ax.set_ylabel("seconds per proof (safe)")
        ax.ticklabel_format(axis="y", useOffset=False, style="plain")
        ys = [r["seconds_per_proof"] for r in safe]
        if ys and max(ys) - min(ys) < 0.02 * max(ys):  # a flat row: a readable span around it
            mid = (max(ys) + min(ys)) / 2
            ax.set_ylim(mid * 0.95, mid * 1.05)
        ax.grid(alpha=0.3)
        ax.tick_params(labelbottom=False)
        # no throughput to draw: a row of their own, one cross per configuration
        strip.scatter(
            [r[column] / scale for r in unsafe],
            [0.0] * len(unsafe),
            marker="x",
            color=OOM_RGB,
            s=22,
            gid="unsafe",
        )
        at: dict[float, int] = {}
        for r in unsafe:
            at[r[column] / scale] = at.get(r[column] / scale, 0) + 1
        for x, count in at.items():  # several configurations on one x: say how many
            if count > 1:
                strip.annotate(
                    f"{count}",
                    (x, 0.0),
                    xytext=(0, 6),
                    textcoords="offset points",
                    ha="center",
                    fontsize=7,
                )
        strip.set_yticks([0.0], [f"OOM / stall ({len(unsafe)})"], fontsize=7)
        strip.set_ylim(-1, 1)
        strip.grid(alpha=0.3, axis="x")
        if column == "workers_per_device":
            strip.xaxis.get_major_locator().set_params(integer=True)
        strip.set_xlabel(label)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(
        f"{spec.name}: seconds per proof of the safe configurations (lower is better); "
        "OOM / stall in the row below",
        fontsize=9,
    )
    return fig
