"""A GPU worker executing one partition's plan: the entry the engine calls.

The worker's state and the step handlers live in model/interpreter.py, the speed-ups in
model/fast.py, the priced plan in model/compiled.py. `execute_plan` draws this
execution's durations (timing jitter, if any) and runs the plain interpreter when every
speed-up is switched off, else the fast layer.
"""

from __future__ import annotations

from collections.abc import Generator

from cuzk_sim.model.compiled import JITTERED_OPS, CompiledPlan, compile_plan, durations
from cuzk_sim.model.fast import FastLayer, FastPaths, execute
from cuzk_sim.model.interpreter import Worker, run_plain
from cuzk_sim.model.machine import Machine
from cuzk_sim.plan_analysis import EXCLUSIVE_SCOPES

__all__ = [
    "EXCLUSIVE_SCOPES",
    "JITTERED_OPS",
    "CompiledPlan",
    "FastLayer",
    "FastPaths",
    "Worker",
    "compile_plan",
    "execute_plan",
]


def execute_plan(
    m: Machine, w: Worker, cp: CompiledPlan, part: str, layer: FastLayer
) -> Generator[object, object, bool]:
    """Run one partition; True when it completed, False when the worker panicked."""
    seconds = durations(cp, m.jitter)
    if layer.plain:
        return run_plain(m, w, cp, part, seconds)
    return execute(m, w, cp, part, seconds, layer)
