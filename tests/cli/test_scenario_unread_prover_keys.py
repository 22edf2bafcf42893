"""A scenario's `[plan] gpu_prover` keys that the replayed plan would not read are refused
(the new-user review of 2026-12-03): `margin` and `assume_free` are read only by the
memory-aware pre-staging check (`prestage = true, memory_aware = true`), `memory_aware`
only with `prestage`. Before, `run` accepted each and replayed the plan without it."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuzk_sim.cli import app

SCENARIO = """
name = "unread"
profile = "h200"
[hardware]
gpus = 1
[plan]
gpu_prover = {{ domain_log2 = 12, {flags} }}
[plan.host]
synthesis = "0 s"
pce = false
[[workload]]
kind = "porep"
count = 1
partitions = 1
"""


def _run(tmp_path: Path, flags: str):
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.format(flags=flags))
    return path, CliRunner().invoke(app, ["run", str(path)])


@pytest.mark.parametrize(
    ("flags", "key"),
    [
        ("memory_aware = true", "plan.gpu_prover.memory_aware"),
        ('margin = "1 GiB"', "plan.gpu_prover.margin"),
        ('prestage = true, margin = "1 GiB"', "plan.gpu_prover.margin"),
        ('assume_free = "1 GiB"', "plan.gpu_prover.assume_free"),
        ('prestage = true, assume_free = "1 GiB"', "plan.gpu_prover.assume_free"),
    ],
)
def test_a_key_the_plan_would_not_read_is_refused(tmp_path, flags, key):
    path, res = _run(tmp_path, flags)
    assert res.exit_code == 2, res.output
    line = res.output.strip()
    assert "\n" not in line and "Traceback" not in line
    assert line.startswith(f"error: {path}: {key}:") and "prestage = true" in line


def test_the_memory_aware_keys_together_replay(tmp_path):
    flags = 'prestage = true, memory_aware = true, margin = "1 MiB", assume_free = "1 GiB"'
    _, res = _run(tmp_path, flags)
    assert res.exit_code == 0, res.output
