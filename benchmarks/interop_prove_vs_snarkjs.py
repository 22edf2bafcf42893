"""Our Groth16 prove against `snarkjs groth16 prove`, same zkey and witness, one run.

    python3 benchmarks/interop_prove_vs_snarkjs.py [--circuit bench_700] [--repeats 3]

Builds the circuit with the pinned circom2/snarkjs (tests/interop), then times, as whole
commands (process start, file parsing and proof writing included on both sides):
  snarkjs:  node snarkjs groth16 prove <zkey> <wtns> <proof> <public>
  ours:     cuzk-sim groth16 prove <zkey> <wtns> <proof> <public>   (reference backend)
and reports the medians, their ratio (the bar: ours <= 10x snarkjs at ~700 constraints),
our per-stage split, and checks both proofs with `snarkjs groth16 verify`.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "interop"))

from snarkjs_toolchain import (  # noqa: E402
    SNARKJS,
    build_circuit,
    ensure_node_modules,
    powers_of_tau,
    snarkjs_status,
)

BAR = 10.0


def wall(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--circuit", default="bench_700")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", type=Path, default=ROOT / ".pytest_cache" / "d")
    args = parser.parse_args()

    ensure_node_modules()
    ptau = powers_of_tau(12, args.work / "cuzk-interop-ptau")  # shared with the tests
    files = build_circuit(args.circuit, ptau, args.work / "cuzk-interop-bench")
    d = files.directory

    from cuzk_sim.reference.formats import read_r1cs, read_wtns, read_zkey
    from cuzk_sim.reference.prove import prove_stages

    header = read_r1cs(files.r1cs).header
    cuzk = [sys.executable, "-m", "cuzk_sim"]
    theirs_cmd = ["node", str(SNARKJS), "groth16", "prove", str(files.zkey), str(files.wtns),
                  "theirs.json", "theirs_public.json"]  # fmt: skip
    ours_cmd = [*cuzk, "groth16", "prove", "--seed", "1", str(files.zkey), str(files.wtns),
                "ours.json", "ours_public.json"]  # fmt: skip
    theirs, ours = [], []
    for _ in range(args.repeats):  # interleaved, so drift hits both alike
        theirs.append(wall(theirs_cmd, d))
        ours.append(wall(ours_cmd, d))
    for proof, public in (("theirs.json", "theirs_public.json"), ("ours.json", "ours_public.json")):
        vk = files.vk_json
        if snarkjs_status("groth16", "verify", vk, public, proof, cwd=d) != 0:
            print(f"FAILED: snarkjs rejects {proof}")
            return 1

    t0 = time.perf_counter()
    pk = read_zkey(files.zkey)
    t1 = time.perf_counter()
    w = read_wtns(files.wtns)
    stages = prove_stages(pk, w, r=1, s=2)
    split = {"read_zkey": t1 - t0, **stages.seconds}

    t_theirs, t_ours = statistics.median(theirs), statistics.median(ours)
    ratio = t_ours / t_theirs
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}")  # fmt: skip
    print(f"circuit: {args.circuit}: {header.num_constraints} constraints, "
          f"{header.num_wires} wires, domain {pk.domain_size}")  # fmt: skip
    print(f"snarkjs groth16 prove   median {t_theirs:6.2f} s  runs {[round(t, 2) for t in theirs]}")
    print(f"cuzk-sim groth16 prove  median {t_ours:6.2f} s  runs {[round(t, 2) for t in ours]}")
    print(f"ratio ours/snarkjs: {ratio:.2f}x (bar: <= {BAR:.0f}x) -> "
          f"{'PASS' if ratio <= BAR else 'FAIL'}")  # fmt: skip
    print("both proofs accepted by snarkjs groth16 verify")
    print("our in-process split (s): " + ", ".join(f"{k} {v:.2f}" for k, v in split.items()))
    return 0 if ratio <= BAR else 1


if __name__ == "__main__":
    raise SystemExit(main())
