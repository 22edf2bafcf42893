"""The part of a shaped MSM's time that its 0 and 1 scalars do not shrink (`shape_fixed`
of [kernel.msm_g1] / [kernel.msm_g2] in cuzk_sim/profiles/h200.toml), from the committed
H200 race call (docs/validation/h200-2026-12-03-races/call/real.jsonl.gz).

The mutex control of that call (w2-caching-18-control: two workers, the device mutex, so
one worker's GPU section at a time) timed every step with CUDA events on the card
(`details.steps`: per run, each step's mean GPU time over its 8 partitions). Its MSMs at
2^18 run over the PoRep witness shape (msm_a, msm_b_g1, msm_b_g2, msm_l: ~52 % zeros,
~48 % ones) or random scalars (msm_h). For each shaped MSM: its random-scalar price at
its size (the profile's `points`), the mean weight of its scalars (the profile's
zero/one shares) and its measured time give
    F = (measured - random x weight) / (1 - weight)
(cuzk_sim.profiles.cost.solve_shape_fixed). Prints each MSM's figures and each kind's
mean F; msm_h (random scalars) is printed as the check of the random-scalar price.

Usage: python benchmarks/msm_shape_fixed.py [CALL_DIR]   (~5 s)
"""

from __future__ import annotations

import gzip
import json
import statistics
import sys
from pathlib import Path

from cuzk_sim.profiles.cost import solve_shape_fixed
from cuzk_sim.validation.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]
CALL = ROOT / "docs/validation/h200-2026-12-03-races/call"
SPEC = ROOT / "scenarios/validation/h200-races.toml"
CONTROL = "w2-caching-18-control"


def measured_ms(call: Path) -> dict[str, list[float]]:
    """Per MSM step, the per-run mean GPU ms of the control's runs that fit."""
    out: dict[str, list[float]] = {}
    with gzip.open(call / "real.jsonl.gz", "rt") as f:
        for line in f:
            d = json.loads(line)
            if d["config"] != CONTROL or d["real"]["oom"]:
                continue
            for name, st in d["details"]["steps"].items():
                if name.startswith("msm_") and "." not in name:
                    out.setdefault(name, []).append(st["gpu_ms"])
    return out


def main() -> None:
    call = Path(sys.argv[1]) if len(sys.argv) > 1 else CALL
    real = measured_ms(call)
    spec = load_spec(str(SPEC))
    scn = next(c.scenario for c in spec.configs if c.name == CONTROL)
    prof = scn.profile
    per_kind: dict[str, list[float]] = {}
    head = ("step", "kind", "n", "zeros", "ones", "runs", "real ms", "sd %", "random ms")
    print("{:9s} {:7s} {:>7s} {:>7s} {:>7s} {:>4s} {:>8s} {:>5s} {:>9s}".format(*head), end="")
    print(" weight   F ms")
    for s in scn.plans["porep"].steps:
        if s.op != "kernel" or not s.kind.startswith("msm_") or s.name not in real:
            continue
        cost = prof.kernels[s.kind]
        t = cost.seconds(s.size)
        z, o = s.zeros or 0, s.ones or 0
        zs, os_ = cost.shares or (1.0, 1.0)
        w = (s.size - z - o + zs * z + os_ * o) / s.size
        ms = real[s.name]
        m = statistics.mean(ms) / 1e3
        sd = 100 * statistics.stdev(ms) / statistics.mean(ms)
        f = solve_shape_fixed(t, w, m) if w < 1 else float("nan")
        if w < 1:
            per_kind.setdefault(s.kind, []).append(f)
        print(f"{s.name:9s} {s.kind:7s} {s.size:7d} {z:7d} {o:7d} {len(ms):4d} {m * 1e3:8.3f} "
              f"{sd:5.1f} {t * 1e3:9.3f} {w:6.3f} {f * 1e3:6.3f}")  # fmt: skip
    for kind, fs in per_kind.items():
        spread = f", spread {min(fs) * 1e3:.3f}-{max(fs) * 1e3:.3f}" if len(fs) > 1 else ""
        mean = statistics.mean(fs) * 1e3
        print(f"{kind}: shape_fixed {mean:.3f} ms over {len(fs)} MSM(s){spread}")


if __name__ == "__main__":
    main()
