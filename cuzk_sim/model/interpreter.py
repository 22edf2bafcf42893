"""The plain plan interpreter: each step through its kind's plain handler, over a
`Machine`.

Each step kind's handler lives in its own module (cuzk_sim/steps/, registered in
steps/registry.py); what they share (a worker's clocks, meeting the other workers,
settling deferred frees, the unwinding of a panic) is model/runtime.py, whose docstring
says how time steps and shared-state steps differ.

`run_plain` runs a partition with these handlers alone — the reference every speed-up of
model/fast.py is checked against.
"""

from __future__ import annotations

from collections.abc import Generator

from cuzk_sim.model.compiled import CompiledPlan
from cuzk_sim.model.machine import Machine
from cuzk_sim.model.runtime import PANIC, Worker, driver_call, meet, panic
from cuzk_sim.steps.base import PlainHandler
from cuzk_sim.steps.registry import KINDS

STEPS: dict[str, PlainHandler] = {op: k.plain for op, k in KINDS.items() if k.plain is not None}


def run_plain(
    m: Machine, w: Worker, cp: CompiledPlan, part: str, seconds: tuple[float, ...]
) -> Generator[object, object, bool]:
    """Run one partition's plan, step by step through the handlers; True when it
    completed, False when the worker panicked."""
    w.begin(m.env.now)
    steps, pc, n = cp.steps, 0, len(cp.steps)
    driver = cp.driver_s
    while pc < n:
        if driver is not None and driver[pc]:
            if steps[pc].op == "free" or w.device.shared_stream:  # sees what others queued
                yield from meet(m, w)
            driver_call(m, w, steps[pc].op, driver[pc])
        pc = yield from STEPS[steps[pc].op](m, w, cp, pc, seconds[pc], part)
        if pc == PANIC:
            yield from meet(m, w)  # a panic is seen by the others at its own time
            panic(m, w)
            return False
    w.drain()  # the partition is done when its queued GPU work is
    yield from meet(m, w)
    return True
