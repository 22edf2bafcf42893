"""P(OOM) is an estimate from R replicas: printed with its 95 % Wilson interval (run
--replicas, its JSON, sweep rows, the API), and the API returns the warnings the CLI
prints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuzk_sim.cli import app
from cuzk_sim.simulate.replicas import format_probability, wilson_interval

ROOT = Path(__file__).resolve().parents[2]
RACE = ROOT / "scenarios" / "race-two-workers-prestage-at-once.toml"
runner = CliRunner()


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        # Newcombe (1998), "Two-sided confidence intervals for the single proportion:
        # comparison of seven methods", Stat. Med. 17:857-872, Table II, method 3 (score
        # interval without continuity correction), to the 4 decimals published
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_interval_against_published_values(k, n, low, high):
    lo, hi = wilson_interval(k, n)
    assert lo == pytest.approx(low, abs=5e-5) and hi == pytest.approx(high, abs=5e-5)


def test_wilson_interval_by_hand():
    z2 = 1.959963984540054**2  # 3.841458820694124
    # 0 of 50: the lower end is 0, the upper z^2 / (n + z^2) = 3.8415 / 53.8415 = 0.07135
    assert wilson_interval(0, 50) == (0.0, pytest.approx(z2 / (50 + z2)))
    assert wilson_interval(0, 50)[1] == pytest.approx(0.071348, abs=1e-6)
    # n of n: mirrored, n / (n + z^2)
    assert wilson_interval(50, 50) == (pytest.approx(50 / (50 + z2)), 1.0)
    # 35 of 100: centre (0.35 + 3.8415/200) / (1 + 3.8415/100) = 0.369207 / 1.038415
    # = 0.355549; half 1.96 / 1.038415 * sqrt(0.35 * 0.65 / 100 + 3.8415 / 40000)
    # = 1.887458 * sqrt(0.002275 + 0.0000960) = 1.887458 * 0.048693 = 0.091907
    lo, hi = wilson_interval(35, 100)
    assert lo == pytest.approx(0.355549 - 0.091907, abs=2e-6)
    assert hi == pytest.approx(0.355549 + 0.091907, abs=2e-6)
    assert format_probability(0, 50) == "0.000 (0 of 50; 95 % interval 0.000-0.071)"
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def test_run_replicas_prints_the_interval():
    r = runner.invoke(app, ["run", str(RACE), "--replicas", "40", "--jitter", "5%"])
    assert r.exit_code == 1  # some replica OOMed
    line = next(x for x in r.stdout.splitlines() if "OOM probability" in x)
    k = int(line.split("(")[1].split(" of ")[0])
    lo, hi = wilson_interval(k, 40)
    assert f"({k} of 40; 95 % interval {lo:.3f}-{hi:.3f})" in line
    d = json.loads(
        runner.invoke(
            app, ["run", str(RACE), "--replicas", "40", "--jitter", "5%", "--json"]
        ).stdout
    )
    assert d["oom_probability_ci95"] == pytest.approx(list(wilson_interval(k, 40)))


def test_zero_of_r_is_not_shown_as_proven_safe():
    # one worker cannot race itself: no OOM in any replica, yet the bound is not 0
    r = runner.invoke(
        app,
        [
            "run",
            str(RACE),
            "--replicas",
            "50",
            "--jitter",
            "5%",
            "--set",
            "engine.gpus.gpu_workers_per_device=1",
        ],
    )
    assert r.exit_code == 0, r.output
    assert "0.000 (0 of 50; 95 % interval 0.000-0.071)" in r.stdout


def test_api_results_carry_the_warnings_the_cli_prints():
    from cuzk_sim import api

    # a VRAM the profile's card does not have: the run warns that its timings are that card's
    snap = ROOT / "scenarios" / "phase9-dual-worker-three-part-fix.toml"
    cli = runner.invoke(app, ["run", str(snap), "--set", "hardware.vram=20 GiB"])
    printed = [x.removeprefix("warning: ") for x in cli.stderr.splitlines() if "warning" in x]
    assert printed and "hardware.vram = 20 GiB" in printed[0]
    scn = api.load(snap, {"hardware.vram": "20 GiB"})
    result = api.simulate(scn)
    assert result.warnings == printed
    assert result.to_dict()["warnings"] == printed
    assert (result.profile, result.card) == ("rtx5070ti", None)
    report = api.simulate(scn, replicas=3, jitter=0.05)
    assert report.warnings == printed
    assert report.to_json()["warnings"] == printed
    assert report.oom_interval == wilson_interval(report.ooms, 3)
    assert (report.profile, report.card) == ("rtx5070ti", None)
    assert report.to_json()["profile"] == "rtx5070ti"
    assert report.to_json()["vram_total_bytes"] == {"0": 20 * 2**30}  # the card's 20 GiB


def test_sweep_rows_carry_the_interval(tmp_path):
    from cuzk_sim import api

    spec = tmp_path / "s.toml"
    spec.write_text(
        f'name = "t"\nbase = "{RACE}"\n[axes]\n"engine.gpus.gpu_workers_per_device" = "1..2"\n'
    )
    outcome = api.sweep(spec, jobs=1, replicas=20, jitter=0.05, plots=False)
    for row in outcome.rows:
        k = round(row["oom_probability"] * 20)
        lo, hi = wilson_interval(k, 20)
        assert (row["oom_probability_low"], row["oom_probability_high"]) == (lo, hi)
    assert outcome.summary["replicas"] == {
        "replicas": 20,
        "safe_oom_probability_high": pytest.approx(0.1611, abs=5e-5),  # Newcombe, 0 of 20
    }
    from cuzk_sim.sweep.plots import _cell_text
    from cuzk_sim.sweep.table import summary_lines, summary_tables

    (group,) = outcome.summary["max_safe_workers"]
    assert group["first_unsafe_workers"] == 2  # two workers race; one cannot
    p, lo, hi = group["first_unsafe_oom_probability"]
    assert 0 < p < 1 and (lo, hi) == wilson_interval(round(p * 20), 20)
    table = str(summary_tables(outcome.summary))
    assert f"(P(OOM) {p:.2f}, 95 % {lo:.2f}-{hi:.2f})" in table

    assert any("P(OOM) < 0.161" in line for line in summary_lines(outcome.summary))
    unsafe = next(r for r in outcome.rows if r["oom_probability"])
    text = _cell_text(unsafe)
    assert f"[{unsafe['oom_probability_low']:.2f}, {unsafe['oom_probability_high']:.2f}]" in text
