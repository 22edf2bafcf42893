"""Where a partition's host assembly goes (gpu/assembler.py): the deferred MSM tail
(Horner over the window sums + points, `msm_results`) and `assemble` timed in this
process, then the same work through the assembler process pool: in one task (tune
`serialtail`), back to back and with an idle gap before each call (a worker's GPU
section), so the pool's round trip and a helper's wake-up show beside the arithmetic; and
as the pipeline sends it by default, the tails side by side in three tasks then the
assembly (`finish_in_pool`), after the same idle gap. CPU only.

    python3 benchmarks/assembler_timing.py [--log2 16 18] [--reps 30] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

import numpy as np
import py_ecc.optimized_bls12_381 as bls
from cuzk_sim.gpu import msm_tail
from cuzk_sim.gpu.assembler import (
    TAIL_PROCESSES,
    _assemble_remote,
    assembler,
    cpu_halves,
    finish_in_pool,
)
from cuzk_sim.gpu.msm import SignedShape, WindowSums
from cuzk_sim.gpu.msm_results import msm_results
from cuzk_sim.gpu.prover import HostKey, assemble

STAGES = [("msm_h", "g1"), ("msm_a", "g1"), ("msm_b_g1", "g1"), ("msm_b_g2", "g2"), ("msm_l", "g1")]


def _window_sums(group: str, n: int, rng: random.Random) -> WindowSums:
    shape = SignedShape.of(group, n)
    gen = bls.G1 if group == "g1" else bls.G2
    words = []
    for _ in range(shape.windows):
        x, y = bls.normalize(bls.multiply(gen, rng.randrange(1, 2**64)))
        coords = [x, y, x.one()]
        if group == "g1":
            pt = tuple(int(c.n) for c in coords)
        else:
            pt = tuple((int(c.coeffs[0]), int(c.coeffs[1])) for c in coords)
        words.append(msm_tail._words_from_point(group, pt))
    return WindowSums(group, shape.c, np.concatenate(words))


def _median_ms(fn, reps: int, gap_s: float) -> float:
    ts = []
    for _ in range(reps):
        if gap_s:
            time.sleep(gap_s)
        t = time.perf_counter()
        fn()
        ts.append(1000 * (time.perf_counter() - t))
    return statistics.median(ts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log2", type=int, nargs="+", default=[16, 18])
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    rng = random.Random(1)
    ends = (bls.G1, bls.G1, bls.G2, bls.G1, bls.G2)
    r, s = 3, 4  # as the pipeline's synthetic partitions (gpu/pipeline.py); --verify: random
    halves = cpu_halves()
    pool = assembler(TAIL_PROCESSES, halves[1] if halves else None)
    out = {"cpus_for_assemblers": sorted(halves[1]) if halves else None, "rows": []}
    print(f"assembler CPUs: {out['cpus_for_assemblers'] or 'any'}")
    print(
        f"{'domain':>7} {'tail+points':>12} {'assemble':>9} {'pool, back to back':>19} "
        f"{'pool, 30 ms idle before':>24} {'side by side, idle before':>26}"
        f"  (ms, medians of {a.reps})"
    )
    for lg in a.log2:
        raw = {st: [_window_sums(g, 1 << lg, rng)] for st, g in STAGES}
        res = msm_results(raw)
        tail = _median_ms(lambda raw=raw: msm_results(raw), a.reps, 0)
        asm = _median_ms(lambda res=res: assemble(HostKey({}, *ends), res, r, s), a.reps, 0)

        def remote(raw=raw):
            return pool.submit(_assemble_remote, ends, raw, r, s, True).result()

        back = _median_ms(remote, a.reps, 0)
        idle = _median_ms(remote, a.reps, 0.03)
        split = _median_ms(lambda raw=raw: finish_in_pool(pool, ends, raw, r, s), a.reps, 0.03)
        row = {
            "log2": lg,
            "tail_ms": tail,
            "assemble_ms": asm,
            "pool_ms": back,
            "pool_after_idle_ms": idle,
            "side_by_side_after_idle_ms": split,
        }
        out["rows"].append(row)
        print(
            f"{'2^' + str(lg):>7} {tail:12.2f} {asm:9.2f} {back:19.2f} {idle:24.2f} {split:26.2f}"
        )
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
