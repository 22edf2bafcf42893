"""Reference prover timings: setup and prove for a squaring chain of 2^k constraints.

    python3 benchmarks/reference_prove.py [--min-log 6] [--max-log 10] [--reduction both]

Prints one row per (reduction, size) with the per-stage prove seconds. Target on the
2-core CI machine: a 2^10-constraint proof in <= 15 s.
"""

from __future__ import annotations

import argparse
import platform
import random
import time

from cuzk_sim.reference.circuits import squaring_chain
from cuzk_sim.reference.prove import STAGES, prove_stages
from cuzk_sim.reference.setup import generator_tables, setup
from cuzk_sim.reference.verify import verify

TARGET_SECONDS_2_10 = 15.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-log", type=int, default=6)
    parser.add_argument("--max-log", type=int, default=10)
    parser.add_argument("--reduction", choices=["bellman", "snarkjs", "both"], default="both")
    args = parser.parse_args()
    reductions = ["bellman", "snarkjs"] if args.reduction == "both" else [args.reduction]

    print(f"# python {platform.python_version()} on {platform.machine()}, {platform.node()}")
    t0 = time.perf_counter()
    generator_tables()
    print(f"# one-off fixed-base generator tables: {time.perf_counter() - t0:.2f} s")
    header = ["reduction", "constraints", "domain", "setup_s", "prove_s", *STAGES, "verified"]
    print(" | ".join(header))
    worst_2_10 = 0.0
    for reduction in reductions:
        for log_n in range(args.min_log, args.max_log + 1):
            r1cs, witness = squaring_chain(1 << log_n, 3)
            t0 = time.perf_counter()
            pk = setup(r1cs, rng=random.Random(log_n), reduction=reduction)
            setup_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            stages = prove_stages(pk, witness, rng=random.Random(log_n + 1))
            prove_s = time.perf_counter() - t0
            ok = verify(pk.vk, r1cs.public_inputs(witness), stages.proof)
            if log_n == 10:
                worst_2_10 = max(worst_2_10, prove_s)
            row = [reduction, f"2^{log_n}", str(pk.domain_size), f"{setup_s:.2f}", f"{prove_s:.2f}"]
            row += [f"{stages.seconds[s]:.3f}" for s in STAGES] + [str(ok)]
            print(" | ".join(row), flush=True)
    if worst_2_10:
        verdict = "PASS" if worst_2_10 <= TARGET_SECONDS_2_10 else "FAIL"
        print(f"# 2^10 prove: {worst_2_10:.2f} s (target <= {TARGET_SECONDS_2_10} s): {verdict}")


if __name__ == "__main__":
    main()
