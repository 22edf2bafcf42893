"""Compare a captured plan with our prover's dry-run plan, buffer for buffer, and its
measured GPU time with the pipeline's CUDA-event step times (issue 28's check on our own
prover). Prints figures; exit 0 when the buffers are equal, 1 when not.

    python3 benchmarks/capture_compare.py captured.json dry.json [--details details.json]

captured.json: `cuzk-sim capture -o` (or import-nsys) of a one-worker, one-partition
gpu-run with allocator "sync"; dry.json: `cuzk-sim gpu-plan --json` of the same flags;
details.json: that gpu-run's --details (per-step GPU ms from CUDA events, gaps included).
The time check is coarse: the capture sums kernels and copies (no gaps), the events
time whole steps; a per-step comparison needs NVTX ranges per step (not in the prover yet).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cuzk_sim.capture.compare import compare_plans
from cuzk_sim.plan import Copy, Kernel, Plan


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("captured", type=Path)
    ap.add_argument("reference", type=Path)
    ap.add_argument("--details", type=Path)
    args = ap.parse_args()
    captured = Plan.from_json(args.captured.read_text(), str(args.captured))
    reference = Plan.from_json(args.reference.read_text(), str(args.reference))
    c = compare_plans(captured, reference)
    print(f"allocations: captured {c.allocations[0]}, dry run {c.allocations[1]}")
    print("buffers: EQUAL (sizes, order, lifetimes)" if c.equal else "buffers: DIFFERENT")
    for line in c.differences:
        print(f"  {line}")
    kernel_s = sum(s.seconds or 0.0 for s in captured.steps if isinstance(s, Kernel))
    copy_s = sum(s.seconds or 0.0 for s in captured.steps if isinstance(s, Copy))
    print(f"captured GPU time: kernels {kernel_s * 1e3:.3f} ms, copies {copy_s * 1e3:.3f} ms")
    if args.details is not None:
        steps = json.loads(args.details.read_text()).get("steps", {})
        total_ms = sum(v["gpu_ms"] * v["n"] for v in steps.values())
        print(f"CUDA-event step times (gaps included): {total_ms:.3f} ms over {len(steps)} steps")
        if total_ms:
            print(f"captured / events: {(kernel_s + copy_s) * 1e3 / total_ms:.3f}")
    return 0 if c.equal else 1


if __name__ == "__main__":
    sys.exit(main())
