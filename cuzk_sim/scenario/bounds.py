"""Bounds on the work one scenario asks for.

They exist to bound the run time (a run simulates every proof and partition: the farm's
16,200 proofs take about 8 s), not because the model breaks beyond them.
"""

from __future__ import annotations

import math

from cuzk_sim.io.errors import InputError
from cuzk_sim.io.units import parse_duration
from cuzk_sim.scenario.schema import ScenarioFile

MAX_PROOFS = 100_000
MAX_DURATION_S = 30 * 86_400.0
MAX_PARTITIONS = 1_000


def check_run_bounds(spec: ScenarioFile, source: str) -> None:
    """Refuse a scenario whose run would take hours, naming the key and the limit."""
    why = "(the limit exists to bound the simulator's run time)"
    if spec.duration is not None and parse_duration(spec.duration) > MAX_DURATION_S:
        raise InputError(
            f"{source}: duration: {spec.duration} exceeds the limit of 30 days (720 h) {why}"
        )
    total = 0.0
    for i, w in enumerate(spec.workload):
        if w.partitions is not None and w.partitions > MAX_PARTITIONS:
            raise InputError(
                f"{source}: workload[{i}].partitions: {w.partitions} exceeds the limit of "
                f"{MAX_PARTITIONS} partitions per proof {why}"
            )
        if w.count is not None:
            total += w.count
            key = f"workload[{i}].count"
        else:  # endless: arrivals until `duration`, one per `every` (on average)
            assert spec.duration is not None and w.every is not None  # schema checked
            every = parse_duration(w.every)
            span = max(parse_duration(spec.duration) - parse_duration(w.start), 0.0)
            # no gap: arrivals at one instant for ever (even when the span is 0 s)
            total += math.inf if every == 0 else span / every
            key = f"workload[{i}].every"
        if total > MAX_PROOFS:
            raise InputError(
                f"{source}: {key}: the workload asks for more than {MAX_PROOFS} proofs in "
                f"all (the limit per scenario) {why}"
            )
