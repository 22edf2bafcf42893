"""`run --jitter X%` without `--replicas` says under its table that its figures carry
timing noise (the new-user review of 2026-12-03): the table was a plain run's, title and
rows alike, so a noisy s/proof read as the model's prediction, and the `[expect]` line a
plain run prints was dropped."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from cuzk_sim.cli import app

SCENARIO = Path(__file__).parents[2] / "scenarios" / "phase8-baseline.toml"


def test_the_noisy_run_is_labelled():
    res = CliRunner().invoke(app, ["run", str(SCENARIO), "--jitter", "5%"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert (
        "jitter: --jitter 5.0% uniform on every step and arrival (seed 1): one run with "
        "timing noise, not the plain prediction" in lines
    )
    # the scenario's [expect] range, 33.66-41.14 s, as a plain run prints it
    assert any(line.startswith("predicted ") and "33.66-41.14" in line for line in lines)


def test_a_plain_run_has_no_jitter_line():
    res = CliRunner().invoke(app, ["run", str(SCENARIO)])
    assert res.exit_code == 0, res.output
    assert not any(line.startswith("jitter:") for line in res.output.splitlines())
