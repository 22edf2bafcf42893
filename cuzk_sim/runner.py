"""Run a validated scenario through the SimPy model."""

from __future__ import annotations

from collections.abc import Callable

from cuzk_sim.model.engine import Simulation
from cuzk_sim.model.worker import compile_plan
from cuzk_sim.result import SimResult
from cuzk_sim.scenario import Scenario


def simulate(
    scenario: Scenario,
    record: bool = False,
    progress: Callable[[float, float], None] | None = None,
) -> SimResult:
    """record: keep the timeline (spans, VRAM samples) for --trace and --plot; progress:
    called with (done, total) now and then (see Simulation.run)."""
    plans = {
        k: compile_plan(p, scenario.profile, merge=not record) for k, p in scenario.plans.items()
    }
    sim = Simulation(
        scenario.name, scenario.config, plans, scenario.shapes, scenario.profile, record
    )
    return sim.run(progress)
