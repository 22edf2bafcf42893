"""Buffer for buffer: does a captured plan allocate what a reference plan (our prover's
dry run) allocates? Names may differ (a trace has none); sizes, order and lifetimes
must not. Each plan is reduced to its memory events in order — `alloc` of the k-th
buffer with its bytes and memory, `free` of the k-th buffer — and the two sequences are
compared; the first differences are named."""

from __future__ import annotations

from dataclasses import dataclass

from cuzk_sim.plan.contract import Alloc, Free, Plan

MemoryEvent = tuple[str, int, int, str]  # (op, buffer index in allocation order, bytes, memory)


def memory_events(plan: Plan) -> list[MemoryEvent]:
    """alloc/free steps as (op, k, bytes, memory), a buffer known by its allocation order;
    a free of a buffer that is not live (a no-op) is left out."""
    index: dict[str, tuple[int, int, str]] = {}
    out: list[MemoryEvent] = []
    n = 0
    for s in plan.steps:
        if isinstance(s, Alloc):
            index[s.buffer] = (n, s.bytes, s.memory)
            out.append(("alloc", n, s.bytes, s.memory))
            n += 1
        elif isinstance(s, Free) and s.buffer in index:
            k, nbytes, memory = index.pop(s.buffer)
            out.append(("free", k, nbytes, memory))
    return out


@dataclass(frozen=True)
class Comparison:
    equal: bool
    allocations: tuple[int, int]  # (captured, reference)
    differences: tuple[str, ...]  # the first few, one line each


def compare_plans(captured: Plan, reference: Plan, limit: int = 10) -> Comparison:
    a, b = memory_events(captured), memory_events(reference)
    names = [s.buffer for s in reference.steps if isinstance(s, Alloc)]
    diffs = []
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            ref = names[y[1]] if y[0] == "alloc" else f"buffer {y[1]} ({names[y[1]]})"
            diffs.append(
                f"event {i}: captured {x[0]} #{x[1]} {x[2]} B {x[3]}, "
                f"reference {y[0]} {ref} {y[2]} B {y[3]}"
            )
            if len(diffs) >= limit:
                break
    if len(a) != len(b) and len(diffs) < limit:
        diffs.append(f"captured has {len(a)} memory events, the reference {len(b)}")
    count = (sum(e[0] == "alloc" for e in a), sum(e[0] == "alloc" for e in b))
    return Comparison(not diffs, count, tuple(diffs))
