"""`gate --tolerance 5` is refused, not read as 500 % (the new-user review of 2026-12-03):
a bare number is a fraction, so `5` made the gate pass any slow-down under six times the
baseline, and said so only in the table's title."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuzk_sim.cli import app

ROOT = Path(__file__).parents[2]
GATE = [str(ROOT / "scenarios" / "gate"), "--baseline", str(ROOT / "scenarios/gate/baseline.json")]


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--tolerance", "5", "5 is 500%; write '5%' for 5 percent, or '500%'"),
        ("--tolerance", "1", "1 is 100%"),
        ("--max-vram-growth", "2", "2 is 200%"),
        ("--max-buffer-growth", "1.5", "1.5 is 150%"),
    ],
)
def test_a_bare_number_of_one_or_more_is_refused(option, value, says):
    res = CliRunner().invoke(app, ["gate", *GATE, option, value])
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.replace("│", " ").split())
    assert option in text and says in text, res.output


@pytest.mark.parametrize("value", ["0.05", "5%", "500%"])
def test_a_fraction_or_a_percentage_is_taken(value):
    res = CliRunner().invoke(app, ["gate", *GATE, "--tolerance", value])
    assert res.exit_code == 0, res.output
