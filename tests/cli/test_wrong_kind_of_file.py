"""A TOML file of another kind than the command reads is named as what it is (the
new-user review of 2026-12-03): `run` on a sweep spec listed "base: unknown key; axes:
unknown key; ...; workload: required key is missing", `sweep` on a scenario "seed: unknown
key; profile: unknown key; ...", and `validate` on a scenario said that CuPy was missing."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuzk_sim.cli import app

ROOT = Path(__file__).parents[2]
SCENARIO = ROOT / "scenarios" / "phase8-baseline.toml"
SWEEP = ROOT / "scenarios" / "sweeps" / "phase9-workers-vram-prestage.toml"
VALIDATION = ROOT / "scenarios" / "validation" / "h200-grid.toml"
PROFILE = ROOT / "cuzk_sim" / "profiles" / "h200.toml"


@pytest.mark.parametrize(
    ("args", "path", "says"),
    [
        (["run"], SWEEP, "a sweep spec, not a scenario: run it with cuzk-sim sweep"),
        (["run"], VALIDATION, "a validation spec, not a scenario: run it with cuzk-sim validate"),
        (["run"], PROFILE, "a calibration profile, not a scenario"),
        (["gpu-run", "--device", "dry-run"], SWEEP, "a sweep spec, not a scenario"),
        (["sweep", "--out", "{tmp}/o"], SCENARIO, "a scenario, not a sweep spec"),
        (["sweep", "--out", "{tmp}/o"], VALIDATION, "a validation spec, not a sweep spec"),
        (["validate", "--out", "{tmp}/o"], SCENARIO, "a scenario, not a validation spec"),
        (["validate", "--out", "{tmp}/o"], SWEEP, "a sweep spec, not a validation spec"),
    ],
)
def test_the_file_is_named_as_what_it_is(tmp_path: Path, args, path, says):
    argv = [args[0], str(path), *(a.format(tmp=tmp_path) for a in args[1:])]
    res = CliRunner().invoke(app, argv)
    assert res.exit_code == 2, res.output
    assert res.output.strip().startswith(f"error: {path}: {says}"), res.output
    assert "\n" not in res.output.strip()
    assert not (tmp_path / "o").exists()  # nothing written for bad input


def test_check_reports_a_spec_given_by_name(tmp_path: Path):
    res = CliRunner().invoke(app, ["check", str(VALIDATION)])
    assert res.exit_code == 2, res.output
    assert "a validation spec, not a scenario" in " ".join(res.output.split())


def test_profile_show_names_a_scenario_as_one():
    res = CliRunner().invoke(app, ["profile", "show", str(SCENARIO)])
    assert res.exit_code == 2, res.output
    assert res.output.strip() == (
        f"error: {SCENARIO}: a scenario, not a calibration profile: run it with cuzk-sim run "
        "or check"
    )
    assert CliRunner().invoke(app, ["profile", "show", str(PROFILE)]).exit_code == 0


def test_a_missing_profile_path_says_where_it_was_looked_for(tmp_path: Path):
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.read_text().replace('profile = "rtx5070ti"', 'profile = "p/my.toml"'))
    res = CliRunner().invoke(app, ["run", str(path)])
    assert res.exit_code == 2, res.output
    line = res.output.strip()
    assert line.startswith(f"error: {path}: profile: profile 'p/my.toml': no such file")
    assert line.endswith(
        f"a path is read from the scenario's folder: {tmp_path / 'p/my.toml'} does not exist"
    )
