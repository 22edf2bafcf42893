"""Our GPU prover's plan, taken live from its dry run (`cuzk_sim.gpu.prover.dry_run_plan`).

A scenario's `[plan] gpu_prover = {...}` table names the partition shape and the prover
flags (resolved in cuzk_sim/scenario/plan_sources.py); the plan is built when the scenario
is loaded, so `check` and `gate` always replay what the prover's code does today, not a
JSON snapshot of what it once did.
"""

from __future__ import annotations

from typing import Any

from cuzk_sim.io.errors import InputError
from cuzk_sim.plan.contract import Cpu, Plan, PlanError


def gpu_prover_plan(shape: Any, flags: Any, assume: int | None, key: str) -> Plan:
    """The engine's partition plan of our prover for `shape` (a PartitionShape) under
    `flags` (ProverFlags); errors are InputErrors that start with `key`."""
    from cuzk_sim.gpu.prover import dry_run_plan

    try:
        # free memory unknown (no `assume`): both branches of a memory-aware pre-stage are
        # recorded, and the model's cudaMemGetInfo picks one per partition
        prover_plan = dry_run_plan(
            shape, flags, assume_free_bytes=assume, both_branches=assume is None
        )
        plan = engine_partition_plan(prover_plan)
        plan.validate(key)
    except PlanError as e:
        raise InputError(str(e)) from None
    except (TypeError, AttributeError) as e:  # the prover's API moved under the scenario
        raise InputError(
            f"{key}: the prover's PartitionShape/ProverFlags/dry_run_plan changed: {e}"
        ) from None
    except (ValueError, RuntimeError) as e:
        raise InputError(f"{key}: the prover's dry run refused this shape: {e}") from None
    return plan


def engine_partition_plan(prover_plan: Plan) -> Plan:
    """The prover's plan as a GPU worker of the engine runs it: without its `synthesis`
    step, because the engine's synthesizers produce a/b/c before a partition reaches a
    worker and the model prices that already (as for the cuzk builder's plans)."""
    steps = tuple(
        s for s in prover_plan.steps if not (isinstance(s, Cpu) and s.kind == "synthesis")
    )
    meta = {**prover_plan.meta, "synthesis": "done by the engine, step dropped"}
    return Plan(prover_plan.name, steps, meta)
