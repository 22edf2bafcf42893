"""`gpu-run --fault-seed N` without `--fault` is refused (the new-user review of
2026-12-03): it seeds the fault injections only, and was accepted and ignored."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from cuzk_sim.cli import app

BASE = str(Path(__file__).parents[2] / "scenarios" / "validation" / "base.toml")
ONE = ["--device", "dry-run", "--set", "workload[0].count=1"]


def test_a_seed_without_a_fault_is_refused():
    res = CliRunner().invoke(app, ["gpu-run", BASE, *ONE, "--fault-seed", "3"])
    assert res.exit_code == 2, res.output
    assert res.output.strip() == "error: --fault-seed seeds the --fault injections: give --fault"


def test_a_seed_with_a_fault_is_taken():
    args = ["gpu-run", BASE, *ONE, "--fault", "exception:0", "--fault-seed", "3"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
