"""A quantity written as a bare number in a scenario is refused with the quantity's own
message, naming the key (the new-user review of 2026-12-03): `vram = 16` said "Input
should be a valid string", which does not say that a size needs its unit; the `[expect]`
ranges and the size-or-word keys (`pool_release_threshold`, `total_budget`) said the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuzk_sim.cli import app

BASE = """
name = "bare"
profile = "rtx5070ti"
[hardware]
gpus = 1
vram = {vram}
[engine.memory]
total_budget = {budget}
[variant]
pool_release_threshold = {threshold}
[[workload]]
kind = "porep"
count = 1
[expect]
seconds_per_proof = [{lo}, "100 s"]
"""
GOOD = {"vram": '"16 GiB"', "budget": '"auto"', "threshold": '"0 B"', "lo": '"1 s"'}


@pytest.mark.parametrize(
    ("field", "value", "key", "says"),
    [
        ("vram", "16", "hardware.vram", "expected size as a string with a unit, got 16"),
        (
            "budget",
            "100",
            "engine.memory.total_budget",
            "expected 'auto' or a size as a string with a unit, got 100",
        ),
        (
            "threshold",
            "0",
            "variant.pool_release_threshold",
            "expected 'max' or a size as a string with a unit, got 0",
        ),
        (
            "lo",
            "33.66",
            "expect.seconds_per_proof[0]",
            "expected duration as a string with a unit, got 33.66",
        ),
    ],
)
def test_a_bare_number_names_the_key_and_the_unit(tmp_path: Path, field, value, key, says):
    path = tmp_path / "s.toml"
    path.write_text(BASE.format(**{**GOOD, field: value}))
    res = CliRunner().invoke(app, ["run", str(path)])
    assert res.exit_code == 2, res.output
    assert res.output.strip() == f"error: {path}: {key}: {says}"


def test_the_same_file_with_units_runs(tmp_path: Path):
    path = tmp_path / "s.toml"
    path.write_text(BASE.format(**GOOD))
    res = CliRunner().invoke(app, ["run", str(path)])
    assert res.exit_code in (0, 1), res.output  # a verdict, not an input error
