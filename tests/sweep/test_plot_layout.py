"""The sweep's plots: OOM configurations have no throughput, so the frontier plot draws
them in a marker row of their own, not at a made-up height on the s/proof axis; and no
title overlaps another (a one-panel heatmap's panel title against the figure's)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from sweep_fixtures import BASE, write_spec  # noqa: E402

from cuzk_sim import api  # noqa: E402
from cuzk_sim.sweep import plots  # noqa: E402


def _figure(monkeypatch, write, outcome, tmp_path):
    """The figure `write` saves (kept: its _save is replaced by a capture)."""
    saved = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: saved.append(fig))
    assert write(outcome.spec, outcome.rows, outcome.summary, tmp_path / "p.png")
    (fig,) = saved
    return fig


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    # workers 1..3 x 12 / 20 GiB with pre-staging outside the mutex: both verdicts
    # (12 GiB: 2 and 3 workers OOM; docs/capacity-planning.md), and a one-value axis
    # (workload[0].count) that gives the one heatmap panel a title of its own
    spec = write_spec(
        tmp_path_factory.mktemp("spec"),
        f'name = "layout"\nbase = "{BASE}"\n[axes]\n'
        '"engine.gpus.gpu_workers_per_device" = "1..3"\n'
        '"hardware.vram" = ["12 GiB", "20 GiB"]\n'
        '"variant.prestage" = ["outside_mutex"]\n'
        '"workload[0].count" = [3]\n',
    )
    return api.sweep(spec, jobs=1, plots=False)


def _offsets(ax, gid: str) -> list[tuple[float, float]]:
    return [tuple(p) for c in ax.collections if c.get_gid() == gid for p in c.get_offsets()]


def test_oom_points_are_not_on_the_seconds_per_proof_axis(outcome, monkeypatch, tmp_path):
    rows = outcome.rows
    unsafe = [r for r in rows if not r["safe"]]
    safe = [r for r in rows if r["safe"]]
    assert unsafe and safe
    fig = _figure(monkeypatch, plots.write_frontier, outcome, tmp_path)
    try:
        # panels against VRAM and against workers: the s/proof axes in the first row, the
        # marker rows below them
        n = len(fig.axes) // 2
        top, strip = fig.axes[0], fig.axes[n]
        assert top.get_ylabel().startswith("seconds per proof")
        # the s/proof axis holds exactly the safe rows, each at its own s/proof
        assert sorted(_offsets(top, "safe")) == sorted(
            (r["vram_bytes"] / 2**30, r["seconds_per_proof"]) for r in safe
        )
        assert _offsets(top, "unsafe") == []
        # every OOM configuration is a cross in the marker row, at its VRAM
        assert sorted(x for x, _ in _offsets(strip, "unsafe")) == sorted(
            r["vram_bytes"] / 2**30 for r in unsafe
        )
        assert "OOM" in strip.get_yticklabels()[0].get_text()
        lo, hi = top.get_ylim()  # the s/proof scale spans the safe rows only
        spp = [r["seconds_per_proof"] for r in safe]
        assert hi - lo < 2 * (max(spp) - min(spp)) + 0.2 * max(spp)
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


def test_one_panel_heatmap_titles_do_not_overlap(outcome, monkeypatch, tmp_path):
    fig = _figure(monkeypatch, plots.write_heatmap, outcome, tmp_path)
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        canvas = FigureCanvasAgg(fig)
        canvas.draw()  # the layout as saved
        renderer = canvas.get_renderer()
        panels = [ax for ax in fig.axes if ax.get_title()]
        assert len(panels) == 1 and panels[0].get_title() == "prestage=outside_mutex, count=3"
        panel = panels[0].title.get_window_extent(renderer)
        suptitle = fig._suptitle.get_window_extent(renderer)
        assert not panel.overlaps(suptitle), (panel, suptitle)
        assert suptitle.y0 >= panel.y1  # the figure's title above the panel's
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)
