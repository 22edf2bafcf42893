"""The jitter's cost (issue 27: <= 5 s on 2 cores): wall time of `run --replicas 100` on
the bundled race scenario through the CLI (start-up included) under the h200 profile's
measured [jitter], and of 100 replicas of the race spec's w2-nomutex-18 at its boundary
in process (`run_replicas`, what `validate` asks per race cap). Each twice; prints the
seconds and P(OOM). Same seed, same numbers: the two runs of each must agree.

Usage: python benchmarks/race_replicas_time.py   (~10 s)
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from cuzk_sim.simulate.replicas import run_replicas
from cuzk_sim.validation.boundary import at_vram, vram_boundary
from cuzk_sim.validation.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios/race-two-workers-prestage-at-once.toml"
SPEC = ROOT / "scenarios/validation/h200-races.toml"


def cli_once() -> tuple[float, float]:
    cmd = [sys.executable, "-m", "cuzk_sim", "run", str(SCENARIO), "--replicas", "100"]
    cmd += ["--set", "profile=h200", "--json"]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    return wall, json.loads(out.stdout)["oom_probability"]


def spec_once() -> tuple[float, float]:
    spec = load_spec(str(SPEC))
    c = next(c for c in spec.configs if c.name == "w2-nomutex-18")
    at = at_vram(c.scenario, vram_boundary(c.scenario, spec.tolerance).vram)
    t0 = time.perf_counter()
    rep = run_replicas(at, 100, None)
    return time.perf_counter() - t0, rep.oom_probability


def main() -> None:
    for name, fn in (("CLI run --replicas 100 (race scenario, h200)", cli_once),
                     ("run_replicas 100 (w2-nomutex-18 at its boundary)", spec_once)):  # fmt: skip
        a, b = fn(), fn()
        same = "same P" if a[1] == b[1] else "DIFFERENT P"
        print(f"{name}: {a[0]:.2f} s, {b[0]:.2f} s wall; P(OOM) {a[1]:.2f}, {b[1]:.2f} ({same})")


if __name__ == "__main__":
    main()
