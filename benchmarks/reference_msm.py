"""Pippenger against the naive MSM (n double-and-add scalar multiplications) in one run,
on the same raw-int group arithmetic, so the ratio measures the algorithm.

    python3 benchmarks/reference_msm.py [--points 1024] [--g2-points 256] [--repeat 3]

Target: Pippenger >= 5x faster than naive at 1024 G1 points.
"""

from __future__ import annotations

import argparse
import platform
import random
import time

from cuzk_sim.reference.curve import G1, G2, Group
from cuzk_sim.reference.field import R
from cuzk_sim.reference.fixed_base import FixedBaseTable
from cuzk_sim.reference.msm import naive, pippenger, window_bits

TARGET_SPEEDUP = 5.0


def best_of(repeat: int, fn) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def compare(group: Group, n: int, repeat: int, rng: random.Random) -> float:
    table = FixedBaseTable.build(group, group.generator)
    points = table.multiply_many([rng.randrange(1, R) for _ in range(n)])
    scalars = [rng.randrange(R) for _ in range(n)]
    t_pip, fast = best_of(repeat, lambda: pippenger(group, points, scalars))
    t_naive, slow = best_of(1, lambda: naive(group, points, scalars))
    same = group.normalize_many([fast]) == group.normalize_many([slow])
    speedup = t_naive / t_pip
    print(
        f"{group.name} | {n} | c={window_bits(n)} | pippenger {t_pip:.3f} s | "
        f"naive {t_naive:.3f} s | speedup {speedup:.1f}x | equal {same}",
        flush=True,
    )
    if not same:
        raise SystemExit("Pippenger and naive MSM disagree")
    return speedup


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=1024)
    parser.add_argument("--g2-points", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(2024)
    print(f"# python {platform.python_version()} on {platform.machine()}, {platform.node()}")
    print("group | points | window | pippenger (best of repeats) | naive | speedup | equal")
    speedup = compare(G1, args.points, args.repeat, rng)
    if args.g2_points:
        compare(G2, args.g2_points, args.repeat, rng)
    verdict = "PASS" if speedup >= TARGET_SPEEDUP else "FAIL"
    print(f"# G1 speedup at {args.points} points: {speedup:.1f}x (target >= 5x): {verdict}")


if __name__ == "__main__":
    main()
