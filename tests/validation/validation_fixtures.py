"""Shared fixtures of the validation tests: small scenarios on the dry-run device."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).parents[2]
VALIDATION = ROOT / "scenarios" / "validation"


def small_scenario(tmp: Path, body: str, name: str = "s.toml") -> Path:
    """A scenario file in `tmp`."""
    path = tmp / name
    path.write_text(textwrap.dedent(body))
    return path


BASE = """
seed = 1
profile = "h200"
on_oom = "{on_oom}"
[hardware]
gpus = 1
vram = "{vram}"
[engine.gpus]
gpu_workers_per_device = {workers}
[plan]
gpu_prover = {{ domain_log2 = 10 }}
[plan.host]
synthesis = "0 s"
pce = false
[[workload]]
kind = "porep"
count = {count}
partitions = {partitions}
"""


@pytest.fixture
def scenario_file(tmp_path: Path):
    def make(
        vram: str = "140 GiB",
        workers: int = 2,
        on_oom: str = "continue",
        count: int = 2,
        partitions: int = 4,
    ) -> Path:
        body = BASE.format(
            vram=vram, workers=workers, on_oom=on_oom, count=count, partitions=partitions
        )
        return small_scenario(tmp_path, body)

    return make
