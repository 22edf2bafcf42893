"""Run a validated scenario through the SimPy model: one run, optionally with jitter,
optionally with a bounded recording (cuzk_sim/results/recording.py's Timeline)."""

from __future__ import annotations

import math
from collections.abc import Callable

from cuzk_sim.model.compiled import compile_plan
from cuzk_sim.model.engine import Simulation
from cuzk_sim.model.fast import FastPaths
from cuzk_sim.model.jitter import Jitter, MeasuredJitter
from cuzk_sim.results.recording import Timeline
from cuzk_sim.results.sim_result import SimResult
from cuzk_sim.scenario import Scenario


def simulate(
    scenario: Scenario,
    record: bool = False,
    progress: Callable[[float, float], None] | None = None,
    *,
    jitter: float = 0.0,
    replica: int = 0,
    fast: FastPaths | None = None,
    measured: MeasuredJitter | None = None,
) -> SimResult:
    """record: keep the timeline (spans, VRAM samples) for --trace and --plot — it changes
    no number; progress: called with (done, total) now and then (see Simulation.run).
    jitter: a fraction (0.05 = 5 %) by which every kernel, copy, CPU and arrival duration
    is perturbed (model/jitter.py); replica: which seeded noise stream (replica 0 without
    jitter is the plain deterministic run). fast: which speed-ups the model may use
    (model/fast.py; default all, `FastPaths.none()` runs the plain interpreter).
    measured: a profile's fitted jitter (model/jitter.py MeasuredJitter), sampled instead
    of the uniform `jitter` (which must then be 0)."""
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
        jitter=Jitter(jitter, scenario.config.seed, replica, measured),
        fast=fast,
    )
    return sim.run(progress)


def simulate_recorded(
    scenario: Scenario,
    timeline: Timeline,
    progress: Callable[[float, float], None] | None = None,
    *,
    jitter: float = 0.0,
    replica: int = 0,
    measured: MeasuredJitter | None = None,
) -> SimResult:
    """Run a scenario on the fast path with a Timeline; inside the timeline's detail
    window (and up to its span budget) the model records every step as a full recording
    does (every span). jitter, replica, measured: as `simulate`."""
    noise = Jitter(jitter, scenario.config.seed, replica, measured)
    # merged kernel runs keep their kernels (a span each in the detail window, a jitter
    # factor each), so one compiled set serves inside and outside the window and a
    # recording changes no number (model/compiled.py)
    plans = {k: compile_plan(p, scenario.profile) for k, p in scenario.plans.items()}
    sim = Simulation(
        scenario.name,
        scenario.config,
        plans,
        scenario.shapes,
        scenario.profile,
        False,
        timeline=timeline,
        jitter=noise,
    )
    timeline.workers = tuple(w.name for w in sim.workers)
    timeline.synthesizers = scenario.config.synthesis_concurrency
    for dev in {w.device.index: w.device for w in sim.workers}.values():
        timeline.resync(0.0, dev.memory)  # the CUDA context, before any allocation
    spans = sim.recorder.spans = timeline.span_list(sim.recorder)
    if timeline.detail is not None and timeline.detail[0] <= 0:
        spans.detail(True)
    elif timeline.detail is None:
        timeline.detail = (math.inf, math.inf)
    return sim.run(progress)
