"""Executing one partition's plan: the entry the engine calls.

A worker's state is model/runtime.py, the step kinds' handlers cuzk_sim/steps/, the
speed-ups model/fast.py, the priced plan model/compiled.py. `execute_plan` draws this
execution's durations (timing jitter, if any) and runs the plain interpreter when every
speed-up is switched off, else the fast layer.
"""

from __future__ import annotations

from collections.abc import Generator

from cuzk_sim.model.compiled import CompiledPlan, durations
from cuzk_sim.model.fast import FastLayer, execute
from cuzk_sim.model.interpreter import run_plain
from cuzk_sim.model.machine import Machine
from cuzk_sim.model.runtime import Worker


def execute_plan(
    m: Machine, w: Worker, cp: CompiledPlan, part: str, layer: FastLayer
) -> Generator[object, object, bool]:
    """Run one partition; True when it completed, False when the worker panicked."""
    seconds = durations(cp, m.jitter)
    if layer.plain:
        return run_plain(m, w, cp, part, seconds)
    return execute(m, w, cp, part, seconds, layer)
