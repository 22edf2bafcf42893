"""Compare a captured plan with a reference plan, buffer for buffer, and its measured
GPU time with the reference run's CUDA-event step times (issue 28's check on our own
prover; also the fixture's capture against its source's plan). Prints figures; exit 0
when the buffers are equal (and, with --details, every matched time is within 5 %), else 1.

    python3 benchmarks/capture_compare.py captured.json reference.json [--details d.json]

captured.json: `cuzk-sim capture -o` (or import-nsys) of a one-worker, one-partition
gpu-run with allocator "sync"; reference.json: `cuzk-sim gpu-plan --json` of the same
flags; details.json: that gpu-run's --details (per plan step: CUDA-event GPU ms, `n`
times). Times are matched so: each copy of the reference (its direction and bytes) to
the next captured copy of the same direction and bytes, in order; the kernels (memsets
too) between two matched copies, summed, to the reference's kernel steps between the
same two copies, summed. A step's events time its kernels back to back, so the small
gaps between them count there and not in the capture.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cuzk_sim.capture.compare import compare_plans
from cuzk_sim.plan import Copy, Kernel, Plan

TOLERANCE = 0.05


def _anchors(captured: Plan, reference: Plan) -> list[tuple[int, int]]:
    """(captured step, reference step) of each reference copy matched in order."""
    steps = captured.steps
    out, j = [], 0
    for i, s in enumerate(reference.steps):
        if not isinstance(s, Copy):
            continue
        k = j
        while k < len(steps) and not (
            isinstance(steps[k], Copy)
            and steps[k].direction == s.direction
            and steps[k].bytes == s.bytes
        ):
            k += 1
        if k < len(steps):
            out.append((k, i))
            j = k + 1
    return out


def timing_rows(captured: Plan, reference: Plan, details: dict) -> list[tuple[str, float, float]]:
    """(what, captured seconds, CUDA-event seconds) per matched copy and per stretch of
    kernels between matched copies (those with event times only)."""
    events = {k: v["gpu_ms"] * v["n"] / 1e3 for k, v in details.get("steps", {}).items()}
    rows = []
    anchors = _anchors(captured, reference)
    bounds = [(-1, -1), *anchors, (len(captured.steps), len(reference.steps))]
    for (c0, r0), (c1, r1) in zip(bounds, bounds[1:], strict=False):
        got = sum(s.seconds or 0.0 for s in captured.steps[c0 + 1 : c1] if isinstance(s, Kernel))
        names = [s.name for s in reference.steps[r0 + 1 : r1] if isinstance(s, Kernel)]
        if names and all(n in events for n in names):
            label = f"kernels {names[0]} .. {names[-1]} ({len(names)} steps)"
            rows.append((label, got, sum(events[n] for n in names)))
        if r1 < len(reference.steps):
            copy = reference.steps[r1]
            if copy.name in events:
                rows.append(
                    (f"copy {copy.name}", captured.steps[c1].seconds or 0.0, events[copy.name])
                )
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("captured", type=Path)
    ap.add_argument("reference", type=Path)
    ap.add_argument("--details", type=Path)
    args = ap.parse_args()
    captured = Plan.from_json(args.captured.read_text(), str(args.captured))
    reference = Plan.from_json(args.reference.read_text(), str(args.reference))
    c = compare_plans(captured, reference)
    print(f"allocations: captured {c.allocations[0]}, reference {c.allocations[1]}")
    print("buffers: EQUAL (sizes, order, lifetimes)" if c.equal else "buffers: DIFFERENT")
    for line in c.differences:
        print(f"  {line}")
    kernel_s = sum(s.seconds or 0.0 for s in captured.steps if isinstance(s, Kernel))
    copy_s = sum(s.seconds or 0.0 for s in captured.steps if isinstance(s, Copy))
    print(f"captured GPU time: kernels {kernel_s * 1e3:.3f} ms, copies {copy_s * 1e3:.3f} ms")
    ok = c.equal
    if args.details is not None:
        details = json.loads(args.details.read_text())
        rows = timing_rows(captured, reference, details)
        total = sum(v["gpu_ms"] * v["n"] for v in details.get("steps", {}).values())
        print(f"CUDA-event step times: {total:.3f} ms over {len(details.get('steps', {}))} steps")
        if total:
            print(f"captured / events, all: {(kernel_s + copy_s) * 1e3 / total:.4f}")
        print(f"matched: {len(rows)} (within {TOLERANCE:.0%}: captured ms, events ms, diff)")
        for what, got, want in rows:
            diff = (got - want) / want if want else float("inf")
            flag = "ok" if abs(diff) <= TOLERANCE else "OFF"
            print(f"  {flag:3} {what}: {got * 1e3:.4f} {want * 1e3:.4f} {diff:+.2%}")
            ok = ok and abs(diff) <= TOLERANCE
        ok = ok and bool(rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
