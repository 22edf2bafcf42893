"""Run a validated scenario through the SimPy model: one run, optionally with jitter."""

from __future__ import annotations

from collections.abc import Callable

from cuzk_sim.model.compiled import compile_plan
from cuzk_sim.model.engine import Simulation
from cuzk_sim.model.fast import FastPaths
from cuzk_sim.model.jitter import Jitter
from cuzk_sim.result import SimResult
from cuzk_sim.scenario import Scenario


def simulate(
    scenario: Scenario,
    record: bool = False,
    progress: Callable[[float, float], None] | None = None,
    *,
    jitter: float = 0.0,
    replica: int = 0,
    fast: FastPaths | None = None,
) -> SimResult:
    """record: keep the timeline (spans, VRAM samples) for --trace and --plot — it changes
    no number; progress: called with (done, total) now and then (see Simulation.run).
    jitter: a fraction (0.05 = 5 %) by which every kernel, copy, CPU and arrival duration
    is perturbed (model/jitter.py); replica: which seeded noise stream (replica 0 without
    jitter is the plain deterministic run). fast: which speed-ups the model may use
    (model/fast.py; default all, `FastPaths.none()` runs the plain interpreter)."""
    fast = fast or FastPaths()
    plans = {
        k: compile_plan(p, scenario.profile, merge=fast.merge_kernels)
        for k, p in scenario.plans.items()
    }
    sim = Simulation(
        scenario.name,
        scenario.config,
        plans,
        scenario.shapes,
        scenario.profile,
        record,
        jitter=Jitter(jitter, scenario.config.seed, replica),
        fast=fast,
    )
    return sim.run(progress)
