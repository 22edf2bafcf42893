"""`sweep --replicas R` without `--jitter` is refused (the new-user review of 2026-12-03):
a sweep's replicas take only `--jitter`'s noise (never a profile's measured [jitter]), so
with the default 0 % they were R identical runs that summary.md reported as "safe = no OOM
in R jittered replicas"."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuzk_sim.cli import app

SPEC = Path(__file__).parents[2] / "scenarios" / "sweeps" / "phase9-workers-vram-prestage.toml"


@pytest.mark.parametrize("extra", [[], ["--jitter", "0%"]])
def test_replicas_without_noise_are_refused(tmp_path: Path, extra):
    out = tmp_path / "o"
    res = CliRunner().invoke(
        app, ["sweep", str(SPEC), "--out", str(out), "--replicas", "2", *extra]
    )
    assert res.exit_code == 2, res.output
    assert res.output.strip().startswith("error: --replicas 2: needs --jitter X% above 0")
    assert len(res.output.strip().splitlines()) == 1
    assert not out.exists()
