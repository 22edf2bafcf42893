"""Constants and helpers shared by the sweep tests (imported by name: no packages under
tests/)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "scenarios"
BASE = SCENARIOS / "phase9-dual-worker-three-part-fix.toml"

# 3 x 3 x 2 = 18 configurations; 12 GiB and the 'off' variant include OOM rows (the
# 8 GiB d_b cudaMalloc beside idle async-pool bytes), so both verdicts are covered.
SMALL_SPEC = f"""
name = "small"
base = "{BASE}"
[axes]
"engine.gpus.gpu_workers_per_device" = "1..3"
"hardware.vram" = ["12 GiB", "16 GiB", "20 GiB"]
"variant.prestage" = ["off", "outside_mutex"]
"""


def write_spec(folder: Path, text: str = SMALL_SPEC, name: str = "small.toml") -> Path:
    path = folder / name
    path.write_text(text)
    return path
