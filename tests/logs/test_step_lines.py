"""CUZK_SIM_STEP lines (our pipeline's own, `gpu-run --log`): parsed, and fitted by
`calibrate` into every kernel kind, the copy rates and the assembly.

The oracle is a set of chosen figures: a log whose step lines are generated from them
(microsecond readings, as gpu-run writes them) must calibrate back to them within 1 %."""

from __future__ import annotations

import math
import types
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuzk_sim.cli import app
from cuzk_sim.logs import emit
from cuzk_sim.logs.parse import parse_lines
from cuzk_sim.profiles.profile import load_profile

runner = CliRunner()
MIB = 1 << 20
MSM_G1 = (7.0e-3, 1.5e-8)  # fixed s, s per point
MSM_G2 = (24.0e-3, 5.0e-8)
NTT = (0.05e-3, 3.0e-11)  # fixed s, s per n log2 n
LATENCY, PAGEABLE = 0.2e-3, 7.5 * 2**30  # s, B/s
ASSEMBLE = 2.5e-3


def _calibrate(tmp_path: Path, lines: list[str]) -> tuple[Path, str]:
    """`cuzk-sim calibrate` of a log of these lines (base h200): the profile written, and
    what the command printed."""
    log = tmp_path / "steps.log"
    log.write_text("\n".join(lines) + "\n")
    out = tmp_path / "steps.toml"
    r = runner.invoke(app, ["calibrate", str(log), "--base", "h200", "-o", str(out)])
    assert r.exit_code == 0, r.output
    return out, r.output


def t_msm(cost: tuple[float, float], n: int) -> float:
    return cost[0] + cost[1] * n


def t_ntt(n: int) -> float:
    return NTT[0] + NTT[1] * n * math.log2(n)


def step_lines() -> list[str]:
    out = []
    for log2 in (16, 18, 20):
        n = 1 << log2
        for _ in range(3):  # three partitions per size
            out.append(emit.sim_step("msm_h", "msm_g1", n, 0, False, int(t_msm(MSM_G1, n) * 1e6)))
            out.append(
                emit.sim_step("msm_b_g2", "msm_g2", n, 0, False, int(t_msm(MSM_G2, n) * 1e6))
            )
            out.append(emit.sim_step("compute_h.intt_a", "ntt", n, 0, False, int(t_ntt(n) * 1e6)))
            for nbytes in (32 * n, 96 * n):
                us = int((LATENCY + nbytes / PAGEABLE) * 1e6)
                out.append(emit.sim_step("upload", "copy_htod", 0, nbytes, False, us))
            out.append(emit.sim_step("assemble", "assemble", 1, 0, False, int(ASSEMBLE * 1e6)))
    return out


def test_step_lines_parse_and_a_malformed_one_names_its_line():
    lines = [*step_lines()[:2], "CUZK_SIM_STEP: msm_h kind=msm_g1 size=abc bytes=0 pinned=0 us=5"]
    recs = list(parse_lines(lines))
    assert [r.kind for r in recs] == ["sim_step", "sim_step", "malformed"]
    assert recs[0].fields == {
        "name": "msm_h", "kind": "msm_g1", "size": 65536, "bytes": 0, "pinned": 0,
        "us": int(t_msm(MSM_G1, 65536) * 1e6),
    }  # fmt: skip
    assert recs[2].lineno == 3 and "size=abc" in str(recs[2].fields["why"])


def test_calibrate_recovers_the_figures_the_step_lines_were_made_from(tmp_path):
    out, printed = _calibrate(tmp_path, step_lines())
    p = load_profile(str(out))
    for n in (1 << 16, 1 << 20, 1 << 24):  # inside and beyond the sizes measured
        assert p.kernels["msm_g1"].seconds(n) == pytest.approx(t_msm(MSM_G1, n), rel=0.01)
        assert p.kernels["msm_g2"].seconds(n) == pytest.approx(t_msm(MSM_G2, n), rel=0.01)
        assert p.kernels["ntt"].seconds(n) == pytest.approx(t_ntt(n), rel=0.01)
    assert p.pageable_bw == pytest.approx(PAGEABLE, rel=0.01)
    assert p.copy_latency == pytest.approx(LATENCY, rel=0.02)
    assert p.cpus["assemble"].seconds(1) == pytest.approx(ASSEMBLE, rel=0.01)
    # the figures no line measured stay the base's, and say so
    base = load_profile("h200")
    assert p.kernels["pointwise"] == base.kernels["pointwise"]
    assert "kept from base h200" in out.read_text()
    assert "CUZK_SIM_STEP" in printed


# the layout a RealRun's spec gives gpu-run's log (its start-up lines)
ONE_WORKER = types.SimpleNamespace(devices=(0,), workers_per_device=1, mutex_scope="device")


def test_gpu_run_log_writes_a_step_line_per_step_event(tmp_path):
    from cuzk_sim.cli.gpu_run import write_cuzk_log

    run = types.SimpleNamespace(
        spec=ONE_WORKER,
        events=[
            (0.1, "step", {"worker": "gpu0-w0", "step": "msm_h", "kind": "msm_g1",
                           "size": 1024, "nbytes": 0, "pinned": False, "seconds": 0.0123456}),
            (0.2, "step", {"worker": "gpu0-w0", "step": "upload_a", "kind": "copy_htod",
                           "size": 0, "nbytes": 4096, "pinned": True, "seconds": 0.0005}),
        ]
    )  # fmt: skip
    path = tmp_path / "run.log"
    write_cuzk_log(path, run)
    recs = [r for r in parse_lines(path.read_text().splitlines()) if r.kind == "sim_step"]
    assert [(r.fields["name"], r.fields["us"], r.fields["pinned"]) for r in recs] == [
        ("msm_h", 12345, 0),
        ("upload_a", 500, 1),
    ]


def test_sizes_a_few_points_apart_are_one_size_not_a_slope(tmp_path):
    """msm_l has 2 fewer points than msm_a: a least squares over 262142..262144 points
    would fit noise. They are one size: the base's fixed cost is kept and the per-point
    cost refitted to the mean time there."""
    base = load_profile("h200").kernels["msm_g1"]
    n = 1 << 18
    lines = []
    for size, us in ((n - 2, 8100), (n - 1, 7900), (n, 8000), (n, 8000)):
        lines.append(emit.sim_step("msm", "msm_g1", size, 0, False, us))
    out, _ = _calibrate(tmp_path, lines)
    fit = load_profile(str(out)).kernels["msm_g1"]
    assert fit.fixed == pytest.approx(base.fixed)
    assert fit.seconds(n) == pytest.approx(8.0e-3, rel=0.01)  # the mean of the four


def test_the_profile_reads_off_every_size_measured_even_off_a_line(tmp_path):
    """The new G1 MSM on the H200 (docs/benchmarks.md: 5.92, 7.84, 15.81 ms at 2^16, 2^18,
    2^20; 49.2 ms at 2^22) is no straight line in n: a line through them misses 2^18 by
    about 10 %. The calibrated profile gives each measured size its own time, linear in
    between, and the last segment's slope beyond."""
    times = {16: 5.92e-3, 18: 7.84e-3, 20: 15.81e-3, 22: 49.2e-3}
    lines = [
        emit.sim_step("msm_h", "msm_g1", 1 << k, 0, False, int(t * 1e6))
        for k, t in times.items()
        for _ in range(3)
    ]
    out, _ = _calibrate(tmp_path, lines)
    cost = load_profile(str(out)).kernels["msm_g1"]
    for k, t in times.items():
        assert cost.seconds(1 << k) == pytest.approx(t, rel=1e-3)
    mid = ((1 << 18) + (1 << 20)) // 2  # halfway in n between 2^18 and 2^20
    assert cost.seconds(mid) == pytest.approx((7.84e-3 + 15.81e-3) / 2, rel=1e-3)
    slope = (49.2e-3 - 15.81e-3) / ((1 << 22) - (1 << 20))
    assert cost.seconds(1 << 24) == pytest.approx(
        49.2e-3 + slope * ((1 << 24) - (1 << 22)), rel=1e-3
    )
    assert "points" in out.read_text()


def test_a_profile_with_points_out_of_order_names_the_figure(tmp_path):
    import re

    text = (Path(__file__).parents[2] / "cuzk_sim" / "profiles" / "h200.toml").read_text()
    head, _, tail = text.partition("[kernel.ntt]")
    tail = re.sub(r"\npoints = \[.*?\]\]\n", "\n", tail, count=1)  # its own points, if any
    bad = head + '[kernel.ntt]\npoints = [[1024, "1 ms"], [512, "2 ms"]]' + tail
    path = tmp_path / "bad.toml"
    path.write_text(bad)
    r = runner.invoke(app, ["profile", "show", str(path)])
    assert r.exit_code == 2 and "points" in r.output and "ascending" in r.output
    assert "Traceback" not in r.output


def test_copies_are_read_off_the_sizes_measured_at_their_mean_time(tmp_path):
    """The H200's pageable copies (docs/validation.md: 1.57 ms at 8 MiB, 2.83 at 16 MiB,
    4.13 at 32 MiB) are no line latency + bytes / rate. The calibrated profile reads each
    measured size back at its mean time -- 16 MiB logged as 2.5, 2.5, 2.5 and 3.5 ms is
    2.75 ms, not the median 2.5: s/proof is a mean -- linear in bytes in between."""
    times_us = {8 * MIB: [1570] * 4, 16 * MIB: [2500, 2500, 2500, 3500], 32 * MIB: [4130] * 4}
    lines = [
        emit.sim_step("upload_a", "copy_htod", 0, nbytes, False, us)
        for nbytes, uss in times_us.items()
        for us in uss
    ]
    lines += [emit.sim_step("upload_h", "copy_htod", 0, 24 * MIB, True, 600) for _ in range(2)]
    lines += [emit.sim_step("upload_l", "copy_htod", 0, 48 * MIB, True, 1000) for _ in range(2)]
    out, _ = _calibrate(tmp_path, lines)
    p = load_profile(str(out))
    assert p.copy_seconds(8 * MIB, False) == pytest.approx(1.57e-3, rel=1e-3)
    assert p.copy_seconds(16 * MIB, False) == pytest.approx(2.75e-3, rel=1e-3)
    assert p.copy_seconds(24 * MIB, False) == pytest.approx((2.75e-3 + 4.13e-3) / 2, rel=1e-3)
    assert p.copy_seconds(36 * MIB, True) == pytest.approx(0.8e-3, rel=1e-3)  # pinned, between
    assert "pageable_points" in out.read_text() and "pinned_points" in out.read_text()


def test_copy_points_out_of_order_name_the_figure(tmp_path):
    import re

    text = (Path(__file__).parents[2] / "cuzk_sim" / "profiles" / "h200.toml").read_text()
    text = re.sub(r"\npageable_points = \[.*?\]\]\n", "\n", text, count=1)  # its own, if any
    bad = text.replace(
        "[copy_engine]\n", '[copy_engine]\npageable_points = [[2048, "1 ms"], [1024, "2 ms"]]\n'
    )
    path = tmp_path / "bad.toml"
    path.write_text(bad)
    r = runner.invoke(app, ["profile", "show", str(path)])
    assert r.exit_code == 2 and "pageable_points" in r.output and "ascending" in r.output
    assert "Traceback" not in r.output


def test_the_context_lines_set_the_profiles_context_overhead(tmp_path):
    """Two runs measured 1400 and 1402 MiB at their start: the profile's context is the
    mean, 1401 MiB, and says where it came from; without the lines it stays the base's."""
    ctx = [emit.sim_context(0, 1400 * MIB), emit.sim_context(0, 1402 * MIB)]
    recs = list(parse_lines([*ctx, "CUZK_SIM_CONTEXT: gpu=0", "CUZK_SIM_CONTEXT: gpu=0 bytes=x"]))
    assert [r.kind for r in recs] == ["sim_context", "sim_context", "malformed", "malformed"]
    assert recs[0].fields == {"gpu": 0, "bytes": 1400 * MIB}
    out, _ = _calibrate(tmp_path, [*ctx, *step_lines()])
    assert load_profile(str(out)).context_overhead == 1401 * MIB
    assert "2 CUZK_SIM_CONTEXT lines" in out.read_text()
    (tmp_path / "b").mkdir()
    plain, _ = _calibrate(tmp_path / "b", step_lines())
    assert load_profile(str(plain)).context_overhead == load_profile("h200").context_overhead


def test_gpu_run_log_writes_the_context_it_measured(tmp_path):
    from cuzk_sim.cli.gpu_run import write_cuzk_log

    run = types.SimpleNamespace(
        spec=ONE_WORKER, events=[], context_real={0: 1517 * MIB, 1: 1519 * MIB}
    )
    path = tmp_path / "run.log"
    write_cuzk_log(path, run)
    recs = [r for r in parse_lines(path.read_text().splitlines()) if r.kind == "sim_context"]
    assert [r.fields for r in recs] == [
        {"gpu": 0, "bytes": 1517 * MIB},
        {"gpu": 1, "bytes": 1519 * MIB},
    ]


def test_shaped_msm_lines_are_written_and_kept_out_of_the_random_scalar_fit(tmp_path):
    """An MSM over porep scalars (zeros= ones= on its line) runs ~6 x faster than over
    random ones: calibrate must not fit the random-scalar price from it, and keeps the
    base's shares, saying where they came from."""
    shaped = emit.sim_step("msm_l", "msm_g1", 1 << 18, 0, False, 1000, zeros=135000, ones=127000)
    assert shaped.endswith("us=1000 zeros=135000 ones=127000")
    assert emit.sim_step("msm_h", "msm_g1", 8, 0, False, 5).endswith("us=5")
    fields = next(iter(parse_lines([shaped]))).fields
    assert (fields["zeros"], fields["ones"]) == ("135000", "127000")
    lines = step_lines()
    for log2 in (16, 18, 20):  # one shaped line per size, far below the random price
        lines.append(emit.sim_step("msm_l", "msm_g1", 1 << log2, 0, False, 100, 1, 1))
    out, _ = _calibrate(tmp_path, lines)
    p = load_profile(str(out))
    for n in (1 << 16, 1 << 20):
        assert p.kernels["msm_g1"].seconds(n) == pytest.approx(t_msm(MSM_G1, n), rel=0.01)
    assert p.kernels["msm_g1"].shares == load_profile("h200").kernels["msm_g1"].shares
    rows = {f.key: f for f in p.figures}
    assert rows["kernel.msm_g1.scalars"].source.startswith("kept from base h200: ")
