"""`run --window` / `--trace-window` are refused where nothing reads them (the new-user
review of 2026-12-03): without --plot or --trace, with --jitter, or past the run's end,
each was accepted and ignored (an empty plot, or no plot at all, exit 0)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuzk_sim.cli import app

SCENARIO = str(Path(__file__).parents[2] / "scenarios" / "phase8-baseline.toml")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--window", "100s..200s"], "--window chooses what --plot or --trace records"),
        (["--trace-window", "100s..200s"], "--trace-window chooses what --plot or --trace"),
        (
            ["--jitter", "5%", "--plot", "{tmp}/p.png", "--window", "100s..200s"],
            "--window/--trace-window: not with --replicas or --jitter",
        ),
        # phase8-baseline's 10 proofs end well within an hour of simulated time
        (["--plot", "{tmp}/p.png", "--window", "2h..3h"], "--window '2h..3h': starts after"),
        (["--trace", "{tmp}/t.json", "--trace-window", "5h..6h"], "--trace-window '5h..6h'"),
    ],
)
def test_an_unread_window_is_refused(tmp_path: Path, args, says):
    argv = ["run", SCENARIO, *(a.format(tmp=tmp_path) for a in args)]
    res = CliRunner().invoke(app, argv)
    assert res.exit_code == 2, res.output
    last = res.output.strip().splitlines()[-1]
    assert last.startswith(f"error: {says}"), res.output
    assert not list(tmp_path.iterdir())  # no plot, no trace


def test_a_window_inside_the_run_is_drawn(tmp_path: Path):
    out = tmp_path / "p.png"
    res = CliRunner().invoke(app, ["run", SCENARIO, "--plot", str(out), "--window", "100s..200s"])
    assert res.exit_code == 0, res.output
    assert out.stat().st_size > 0
