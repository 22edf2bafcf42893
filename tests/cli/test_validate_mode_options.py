"""`validate` refuses options its mode would not read (the new-user review of 2026-12-03):
`--report-only` took `--only`, `--fresh` and `--profile` and ignored them (the report is
rebuilt from the folder's files), `--report-only --predict-only` silently reported, and
`--predict-only --only` predicted every configuration."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuzk_sim.cli import app

SPEC = str(Path(__file__).parents[2] / "scenarios" / "validation" / "h200-production.toml")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--report-only", "--only", "w2*"], "--only: --report-only rebuilds the report"),
        (["--report-only", "--fresh"], "--fresh: --report-only rebuilds the report"),
        (["--report-only", "--profile", "h200"], "--profile: --report-only rebuilds"),
        (["--report-only", "--predict-only"], "--report-only and --predict-only: give one"),
        (["--predict-only", "--only", "w2*"], "--only: --predict-only predicts every"),
    ],
)
def test_an_option_the_mode_would_not_read_is_refused(tmp_path: Path, args, says):
    out = tmp_path / "o"
    res = CliRunner().invoke(app, ["validate", SPEC, "--out", str(out), *args])
    assert res.exit_code == 2, res.output
    assert res.output.strip().startswith(f"error: {says}"), res.output
    assert not out.exists()


def test_an_only_glob_matching_no_configuration_is_refused(tmp_path: Path):
    out = tmp_path / "o"
    args = ["validate", SPEC, "--out", str(out), "--device", "dry-run", "--only", "w3-*"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, res.output
    # h200-production.toml's configurations are w1-* and w2-*
    assert res.output.strip().startswith("error: --only 'w3-*': matches no configuration")
    assert "w2-stream14-27" in res.output
    assert not out.exists()
