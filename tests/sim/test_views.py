"""Plots and traces from the bounded recording: host panel, lanes, markers, buckets,
windows, decimated counters, slice args, the detail budget."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuzk_sim.cli import app
from cuzk_sim.results.recording import Buckets, Timeline, parse_window
from cuzk_sim.results.run_plot import MARKERS, lanes_of, markers
from cuzk_sim.results.run_trace import chrome_trace, step_args
from cuzk_sim.scenario import load_scenario
from cuzk_sim.simulate.runner import simulate, simulate_recorded

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
GIB = 2**30
runner = CliRunner()


@pytest.fixture(scope="module")
def host_oom():
    scn = load_scenario(SCENARIOS / "host-pinned-prestage-two-workers-small-ram.toml")
    return scn, simulate_recorded(scn, Timeline())


def test_host_oom_is_drawn_on_the_host_panel(host_oom):
    """Hand arithmetic in the scenario: budget 218.7 GiB, 69.7 GiB resident (SRS + PCE),
    140 GiB synthesis + 2 x 4 GiB pinned_a in use; pinned_bc (2 GiB) fails with 1 GiB
    free: at 217.7 GiB in use."""
    _, r = host_oom
    lanes = lanes_of(r)
    got = [(m.panel, m.kind, m.y) for m in markers(r, lanes)]
    assert ("host", "OOM", pytest.approx(69.7 + 148.0)) in got
    assert not any(p.startswith("gpu") for p, _, _ in got)  # not on a VRAM axis
    assert ("lanes", "OOM", float(lanes.index("gpu0-w0"))) in got


def test_every_worker_has_a_lane_even_without_a_partition_span(host_oom):
    _, r = host_oom
    # gpu0-w1 holds pinned_a when the run stops at the OOM: no partition span, a lane
    assert not any(s.track == "gpu0-w1" and s.cat == "partition" for s in r.spans)
    assert lanes_of(r) == ["gpu0-w0", "gpu0-w1", "synth0"]


def test_the_plot_file_is_written(host_oom, tmp_path):
    _, r = host_oom
    from cuzk_sim.results.run_plot import write_plot

    write_plot(r, str(tmp_path / "p.png"))
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_markers_do_not_hide_each_other():
    # an OOM is a filled cross; fallback and skip are hollow, larger, other shapes
    assert MARKERS["OOM"]["marker"] != MARKERS["fallback"]["marker"] != MARKERS["skip"]["marker"]
    for k in ("fallback", "skip"):
        assert MARKERS[k]["markerfacecolor"] == "none"
        assert MARKERS[k]["markersize"] > MARKERS["OOM"]["markersize"]


def test_buckets_keep_peaks_and_widen_by_doubling():
    b = Buckets(width=1.0, limit=4)
    for t, v in [(0.5, 3), (1.2, 7), (1.8, 2), (3.5, 5)]:
        b.add(t, v)
    assert [(t, x.peak, x.end) for t, x in b.series(4.0)] == [
        (0.0, 3, 3),
        (1.0, 7, 2),
        (2.0, 2, 2),
        (3.0, 5, 5),  # bucket 2 carries bucket 1's end
    ]
    b.add(6.0, 1)  # beyond 4 buckets of 1 s: width 2 s, neighbours merged (peak: the max)
    assert b.width == 2.0
    assert [(t, x.peak, x.end) for t, x in b.series(8.0)] == [
        (0.0, 7, 2),
        (2.0, 5, 5),
        (4.0, 5, 5),
        (6.0, 1, 1),
    ]


def test_replayed_sections_keep_their_peaks_in_the_recording():
    """The three-part fix replays learnt critical sections (allocations skipped): the
    bucketed peak must still reach the model's peak, and each peak's parts sum to it."""
    scn = load_scenario(SCENARIOS / "phase9-dual-worker-three-part-fix.toml")
    tl = Timeline()
    r = simulate_recorded(scn, tl)
    assert tl.learnt  # sections were learnt, so some were replayed
    rows = tl.device_series(0, r.sim_time_s)
    assert max(b.peak for _, b in rows) == r.peak_vram_bytes[0]
    for _, b in rows:
        assert sum(b.peak_parts.values()) == b.peak
    plain = simulate(scn)  # the recording does not change the run
    assert [p for p, _, _ in plain.proof_done_times] == [p for p, _, _ in r.proof_done_times]
    assert [t for _, _, t in plain.proof_done_times] == pytest.approx(
        [t for _, _, t in r.proof_done_times], rel=1e-12
    )


def test_trace_slices_carry_args_and_counters_are_decimated():
    scn = load_scenario(SCENARIOS / "phase9-single-worker.toml")
    r = simulate_recorded(scn, Timeline(buckets=50))
    events = chrome_trace(r, step_args(scn.plans))["traceEvents"]
    copies = [e for e in events if e.get("cat") == "copy"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert copies and all("bytes" in e["args"] and "partition" in e["args"] for e in copies)
    assert kernels and all({"kind", "size", "partition"} <= set(e["args"]) for e in kernels)
    vram = [e for e in events if e["ph"] == "C" and e["name"] == "VRAM used (GiB)"]
    assert 0 < len(vram) <= 50
    by_buffer = [e for e in events if e["ph"] == "C" and e["name"] == "VRAM by buffer (GiB)"]
    assert any("d_a_stage" in e["args"] for e in by_buffer)


def test_trace_window_and_detail_budget():
    scn = load_scenario(SCENARIOS / "phase9-single-worker.toml")
    r = simulate_recorded(scn, Timeline(window=(100.0, 150.0), detail=(100.0, 150.0)))
    events = chrome_trace(r, window=(100.0, 150.0))["traceEvents"]
    timed = [e for e in events if e["ph"] in ("X", "C", "i")]
    assert timed and all(e["ts"] + e.get("dur", 0) >= 100e6 and e["ts"] <= 150e6 for e in timed)
    kernels = [e for e in timed if e.get("cat") == "kernel"]
    assert kernels and min(e["ts"] for e in kernels) >= 90e6  # detail starts near the window
    tl = Timeline(max_detail_spans=100)
    r = simulate_recorded(scn, tl)
    detail = [s for s in r.spans if s.cat not in ("partition", "synthesis")]
    assert 100 <= len(detail) <= 200 and tl.detail_cut_at is not None
    assert "detail_until_s" in chrome_trace(r)["otherData"]


def test_parse_window():
    assert parse_window("2h..3h", "--window") == (7200.0, 10800.0)
    assert parse_window("100..200 s", "--window") == (100.0, 200.0)
    for bad in ("2h", "3h..2h", "0..1e999", "a..b"):
        with pytest.raises(Exception, match="--window"):
            parse_window(bad, "--window")


def test_cli_plot_trace_windows_and_set(tmp_path):
    path = SCENARIOS / "phase9-single-worker.toml"
    trace, plot = tmp_path / "t.json", tmp_path / "p.png"
    result = runner.invoke(
        app,
        [
            "run",
            str(path),
            "--plot",
            str(plot),
            "--window",
            "100s..200s",
            "--trace",
            str(trace),
            "--trace-window",
            "150 s..160 s",
            "--set",
            "workload[0].count=6",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["proofs_submitted"] == 6
    xs = [e for e in json.loads(trace.read_text())["traceEvents"] if e["ph"] == "X"]
    assert xs and all(e["ts"] <= 160e6 and e["ts"] + e["dur"] >= 150e6 for e in xs)
    assert plot.read_bytes()[:4] == b"\x89PNG"
    bad = runner.invoke(app, ["run", str(path), "--set", "hardware.vramm=1"])
    assert bad.exit_code == 2 and "vramm" in bad.output


def test_user_text_with_markup_is_printed_as_text(tmp_path):
    text = (SCENARIOS / "phase9-single-worker.toml").read_text()
    text = text.replace('name = "phase9-single-worker"', 'name = "odd [/] [bold]name"')
    (tmp_path / "odd.toml").write_text(text)
    result = runner.invoke(app, ["run", str(tmp_path / "odd.toml")])
    assert result.exit_code == 0, result.output
    assert "odd [/] [bold]name" in result.output
    result = runner.invoke(app, ["check", str(tmp_path / "odd.toml")])
    assert result.exception is None or isinstance(result.exception, SystemExit)
