"""Compare a captured plan with a reference plan, buffer for buffer, and (with --trace
and --details) the captured GPU time of each step with the reference run's CUDA-event
step times (issue 28's check on our own prover; also the fixture's capture against its
source's plan). Prints figures; exit 0 when the buffers are equal (and, with --details,
every judged time is within 5 %), else 1.

    python3 benchmarks/capture_compare.py captured.json reference.json \
        [--trace trace.json --details d.json --span -1]

captured.json: `cuzk-sim capture -o --span -1 --save-trace trace.json` of a one-worker,
one-partition gpu-run with allocator "sync" (the last span: the timed partition, after
the key's generation and the warm-up partition); reference.json: that scenario's
dry-run plan; details.json: that gpu-run's --details (per plan step: CUDA-event GPU ms).
Buffers: sizes compared exactly (CUPTI records the bytes asked for; the sync allocator
asks the driver for each buffer, no pool rounds them). Times: like with like, per group
of steps between the reference's copies (cuzk_sim/capture/step_times.py, docs/capture.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cuzk_sim.capture.compare import compare_plans
from cuzk_sim.capture.step_times import MIN_JUDGED_S, TOLERANCE, group_times, stream_ops
from cuzk_sim.capture.to_plan import span_bounds
from cuzk_sim.capture.trace import Trace
from cuzk_sim.plan import Copy, Kernel, Plan


def times(args: argparse.Namespace, captured: Plan, reference: Plan) -> bool:
    """Print the step times' comparison; True when every judged group is within 5 %."""
    trace = Trace.from_dict(json.loads(args.trace.read_text()), str(args.trace))
    pid, device = captured.meta["pid"], captured.meta["device"]
    t0, t1 = span_bounds(trace, pid, device, args.span)
    details = json.loads(args.details.read_text())
    rows = group_times(stream_ops(trace, pid, device, t0, t1), reference, details)
    total = sum(v["gpu_ms"] * v["n"] for v in details.get("steps", {}).values())
    print(f"CUDA-event step times: {total:.3f} ms over {len(details.get('steps', {}))} steps")
    judged = [r for r in rows if r.judged]
    print(
        f"groups: {len(rows)}, judged (event time >= {MIN_JUDGED_S * 1e3:g} ms) {len(judged)}, "
        f"within {TOLERANCE:.0%}: {sum(r.ok for r in judged)}  (captured ms, events ms, diff)"
    )
    for r in rows:
        flag = ("ok" if r.ok else "OFF") if r.judged else "-"
        print(
            f"  {flag:3} {r.label}: {r.captured_s * 1e3:.4f} {r.events_s * 1e3:.4f} {r.diff:+.2%}"
        )
    return bool(judged) and all(r.ok for r in judged)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("captured", type=Path)
    ap.add_argument("reference", type=Path)
    ap.add_argument("--details", type=Path)
    ap.add_argument("--trace", type=Path, help="the capture's --save-trace (needs --details)")
    ap.add_argument("--span", type=int, default=-1, help="the captured plan's span (-1)")
    args = ap.parse_args()
    if (args.details is None) != (args.trace is None):
        ap.error("--details and --trace go together")
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
        ok = times(args, captured, reference) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
