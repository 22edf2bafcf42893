"""Products per entry of the affine batch accumulation (kernels/msm_affine.cuh) against the
balanced Jacobian one, on runs of one bucket drawn as with random scalars (Poisson sizes,
mean entries / buckets: 32 at 2^20 points, c = 16). Counts the passes and pairs exactly as
the kernel does (pairs at distance 2^(p-1) inside each run of a batch, a pass only with at
least `min_pairs` pairs); the costs per operation are the Fq product counts of the formulas
and the inverse's SASS-instruction estimate (docs/benchmarks.md). No GPU: a prediction.
Usage: python3 benchmarks/msm_affine_model.py [--mean 32] [--batches 1500] [--sizes 64,256]
(--sizes: batch sizes, default AFFINE_BATCH and twice it; a thread's range shorter than the
batch is one smaller batch)
"""

from __future__ import annotations

import argparse

import numpy as np

# group -> (products per affine pair, per mixed Jacobian addition, per batch inverse)
COSTS = {"g1": (6, 11, 65), "g2": (18, 33, 69), "g2 FQ2_SQR=1": (17, 29, 69)}


def batch_stats(starts: np.ndarray, bs: int, be: int, min_pairs: int) -> tuple[int, int, int]:
    """(pairs, passes, runs) of one batch [bs, be) of the sorted entries."""
    b = int(np.searchsorted(starts, bs, side="right")) - 1
    runs = []
    while starts[b] < be:
        s, e = max(int(starts[b]), bs) - bs, min(int(starts[b + 1]), be) - bs
        if e > s:
            runs.append((s, e))
        b += 1
    pairs = passes = 0
    h = 1
    while h < be - bs:
        count = 0
        for s, e in runs:  # i in (s, e), i = h mod 2h (first_pair)
            i = (s + h) // (2 * h) * 2 * h + h
            i += 2 * h if i <= s else 0
            count += (e - 1 - i) // (2 * h) + 1 if i < e else 0
        if count < min_pairs:
            break
        pairs, passes, h = pairs + count, passes + 1, 2 * h
    return pairs, passes, len(runs)


def main() -> None:
    from cuzk_sim.gpu.msm import AFFINE_BATCH, AFFINE_MIN_PAIRS

    ap = argparse.ArgumentParser()
    ap.add_argument("--mean", type=float, default=32.0, help="entries per bucket")
    ap.add_argument("--batches", type=int, default=1500)
    ap.add_argument("--sizes", default=f"{AFFINE_BATCH},{2 * AFFINE_BATCH}")
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    for name, (pair, jac, inv) in COSTS.items():
        min_pairs = AFFINE_MIN_PAIRS[name[:2]]
        for batch in (int(x) for x in args.sizes.split(",")):
            total = batch * args.batches
            sizes = rng.poisson(args.mean, size=int(total / args.mean * 1.3) + 10)
            starts = np.concatenate([[0], np.cumsum(sizes[sizes > 0])])
            pairs = passes = runs = 0
            for t in range(args.batches):
                p, n, r = batch_stats(starts, t * batch, (t + 1) * batch, min_pairs)
                pairs, passes, runs = pairs + p, passes + n, runs + r
            jacobian = total - pairs - runs  # representatives after the passes, less firsts
            cost = pairs * pair + passes * inv + jacobian * jac
            base = (total - runs) * jac
            k = args.batches
            print(
                f"{name} batch {batch}: pairs {pairs / k:.1f}, passes {passes / k:.2f}, "
                f"Jacobian additions {jacobian / k:.1f}, runs {runs / k:.1f} per batch; "
                f"products x{cost / base:.3f} of the balanced accumulation"
            )


if __name__ == "__main__":
    main()
