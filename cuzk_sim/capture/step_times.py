"""A captured program's GPU time per plan step, measured as its CUDA-event step timings
measure it (issue 28's check of a capture of our prover against its own timings).

Our prover times each plan step between two CUDA events on its stream (`gpu-run
--details`: `gpu_ms` from the start event to the end event; `idle_before_ms` from the
previous step's end event to this one's start). CUPTI records each kernel, copy and
memset with the GPU's start and end and the host time of the API call that issued it
(`issued_ns`). Like with like:

- the operations of the window (one partition, `to_plan.span_bounds`) on the prover's
  stream, in GPU order, are cut into groups at the reference plan's copies (each matched
  to the next captured copy of its direction and bytes): a copy alone, or the kernel
  steps between two copies (their kernels, memsets and device-side copies together);
- a group's captured time is from its start to the end of its last operation, its start
  being the later of the end of the operation before it on the stream (the GPU was busy:
  a start event waits for it) and the host's issue of its first operation (the GPU was
  idle: it waits for the host, which the events count too);
- a group's event time is from its first step's start event to its last step's end
  event: the steps' `gpu_ms` plus the `idle_before_ms` of every step after the first.

What remains between the two is the host's time between recording a start event and
issuing the step's first call (Python: a slice, a launch's arguments), a few to a few
tens of microseconds per group. A group is judged against the tolerance when its event
time is at least `MIN_JUDGED_S`, where that is a small fraction of 5 %; shorter ones
(a result's 3 KiB copy back, the NTT tables' upload) are listed with their figures and
not judged: the event method cannot resolve them to 5 %.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from cuzk_sim.capture.trace import Trace
from cuzk_sim.plan import Copy, Kernel, Plan

TOLERANCE = 0.05
MIN_JUDGED_S = 2e-3


@dataclass(frozen=True)
class GroupTime:
    label: str
    captured_s: float
    events_s: float

    @property
    def judged(self) -> bool:
        return self.events_s >= MIN_JUDGED_S

    @property
    def diff(self) -> float:
        return (self.captured_s - self.events_s) / self.events_s if self.events_s else 0.0

    @property
    def ok(self) -> bool:
        return abs(self.diff) <= TOLERANCE


def stream_ops(trace: Trace, pid: int, device: int, t0: float, t1: float) -> list[Any]:
    """Kernels, copies and memsets of the process on `device` issued in [t0, t1) on its
    default stream (the busiest when not recorded), in GPU order."""
    known = trace.process(pid).default_stream.get(device)
    ops = [
        e
        for kind in ("kernels", "copies", "memsets")
        for e in trace[kind]
        if e.pid == pid and e.device == device
    ]
    stream = known if known is not None else Counter(e.stream for e in ops).most_common(1)[0][0]
    return sorted(
        (
            e
            for e in ops
            if e.stream == stream
            and t0 <= (e.issued_ns if e.issued_ns is not None else e.start_ns) < t1
        ),
        key=lambda e: e.start_ns,
    )


def _is_copy(e: Any) -> bool:
    return hasattr(e, "direction")


def _span_s(ops: list[Any], first: int, last: int) -> float:
    """Seconds from the group's start (module docstring) to the end of ops[last]."""
    e = ops[first]
    start = e.issued_ns if e.issued_ns is not None else e.start_ns
    if first > 0:
        start = max(start, ops[first - 1].end_ns)
    return (ops[last].end_ns - start) / 1e9


def group_times(ops: list[Any], reference: Plan, details: dict) -> list[GroupTime]:
    """Per group (module docstring) with event times for all its steps: its captured and
    its event seconds. `details`: gpu-run's --details (`steps`: name -> n, gpu_ms,
    idle_before_ms)."""
    steps = details.get("steps", {})
    work = [s for s in reference.steps if isinstance(s, Copy | Kernel) and s.stream != "host"]
    anchors: list[tuple[int, int]] = []  # (captured op, reference step) per matched copy
    j = 0
    for i, s in enumerate(work):
        if not isinstance(s, Copy):
            continue
        k = next(
            (
                k
                for k in range(j, len(ops))
                if _is_copy(ops[k]) and ops[k].direction == s.direction and ops[k].bytes == s.bytes
            ),
            None,
        )
        if k is not None:
            anchors.append((k, i))
            j = k + 1
    out = []
    bounds = [(-1, -1), *anchors, (len(ops), len(work))]
    for (c0, r0), (c1, r1) in zip(bounds, bounds[1:], strict=False):
        names = [s.name for s in work[r0 + 1 : r1]]
        if names and c1 - c0 > 1 and all(n in steps for n in names):
            ev = sum(steps[n]["gpu_ms"] * steps[n]["n"] for n in names)
            ev += sum(steps[n]["idle_before_ms"] * steps[n]["n"] for n in names[1:])
            label = f"kernels {names[0]} .. {names[-1]} ({len(names)} steps)"
            out.append(GroupTime(label, _span_s(ops, c0 + 1, c1 - 1), ev / 1e3))
        if r1 < len(work) and work[r1].name in steps:
            st = steps[work[r1].name]
            label = f"copy {work[r1].name}"
            out.append(GroupTime(label, _span_s(ops, c1, c1), st["gpu_ms"] * st["n"] / 1e3))
    return out
