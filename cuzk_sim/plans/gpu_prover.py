"""Our GPU prover's plan, taken live from its dry run (`cuzk_sim.gpu.prover.dry_run_plan`).

A scenario's `[plan] gpu_prover = {...}` table names the partition shape and the prover
flags (resolved in cuzk_sim/scenario/plan_sources.py); the plan is built when the scenario
is loaded, so `check` and `gate` always replay what the prover's code does today, not a
JSON snapshot of what it once did.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from cuzk_sim.input_errors import InputError
from cuzk_sim.plan import Alloc, Cpu, Free, Goto, Label, Plan, PlanError


def gpu_prover_plan(shape: Any, flags: Any, assume: int | None, key: str) -> Plan:
    """The engine's partition plan of our prover for `shape` (a PartitionShape) under
    `flags` (ProverFlags); errors are InputErrors that start with `key`."""
    from cuzk_sim.gpu.prover import dry_run_plan

    try:
        prover_plan = dry_run_plan(shape, flags, assume_free_bytes=assume)
        if flags.prestage and flags.memory_aware and assume is None:
            # both branches of the memory-aware check, decided at replay time
            declined = dry_run_plan(shape, flags, assume_free_bytes=0)
            prover_plan = with_fallback(prover_plan, declined)
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


FALLBACK, DONE = "memory_aware_fallback", "memory_aware_done"


def with_fallback(taken: Plan, declined: Plan) -> Plan:
    """One plan with both branches of the prover's memory-aware allocations.

    The dry run records only the branch it takes, so it runs twice: `taken` with enough
    free memory, `declined` with none. After their common prefix, `taken`'s margin
    allocations jump to `declined`'s remainder when the model's free memory says no; that
    branch first frees what `taken` allocated with a margin (the prover frees d_a when d_bc
    is refused; freeing a buffer that is not live is a no-op)."""
    k = 0
    while k < min(len(taken.steps), len(declined.steps)) and taken.steps[k] == declined.steps[k]:
        k += 1
    rest = taken.steps[k:]
    guarded = [s.buffer for s in rest if isinstance(s, Alloc) and s.margin is not None]
    if not guarded:
        return taken
    rest = tuple(
        dataclasses.replace(s, fallback=FALLBACK)
        if isinstance(s, Alloc) and s.margin is not None
        else s
        for s in rest
    )
    steps = (
        taken.steps[:k]
        + rest
        + (Goto(DONE), Label(FALLBACK))
        + tuple(Free(b) for b in guarded)
        + declined.steps[k:]
        + (Label(DONE),)
    )
    return Plan(taken.name, steps, {**taken.meta, "memory_aware": "both branches"})
