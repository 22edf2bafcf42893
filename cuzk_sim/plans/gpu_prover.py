"""Our GPU prover's plan, taken live from its dry run (`cuzk_sim.gpu.prover.dry_run_plan`).

A scenario's `[plan] gpu_prover = {...}` table names the partition shape and the prover
flags; the plan is built when the scenario is loaded, so `check` and `gate` always replay
what the prover's code does today, not a JSON snapshot of what it once did.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from cuzk_sim.input_errors import InputError
from cuzk_sim.plan import Alloc, Cpu, Free, Goto, Label, Plan, PlanError
from cuzk_sim.units import parse_size


def _size(v: str | None) -> str | None:
    if v is not None:
        parse_size(v)
    return v


class GpuProverSource(BaseModel):
    """`[plan] gpu_prover`: the shape of one partition and the prover's flags."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    domain_log2: int = Field(ge=1, le=31)  # FFT domain 2^k (production: 27)
    reduction: Literal["bellman", "snarkjs"] = "bellman"
    num_vars: int | None = Field(None, ge=2)  # m + 1 wires; default: the domain size
    num_public: int = Field(1, ge=0)  # l
    # ProverFlags, same names and defaults as cuzk_sim.gpu.prover.ProverFlags
    prestage: bool = False
    pinned: bool = False
    free_bc_early: bool = True
    memory_aware: bool = False
    margin: str = "512 MiB"
    allocator: Literal["caching", "async", "sync"] = "caching"
    msm_chunk: int | None = Field(None, ge=1)  # stream key points, MSMs in chunks of this many
    # dry run only: the free bytes a memory-aware allocation sees; default: none given, the
    # replayed plan carries both branches and the model's free memory picks one
    assume_free: str | None = None

    _sizes = field_validator("margin", "assume_free")(_size)


def gpu_prover_plan(src: GpuProverSource, source: str) -> Plan:
    """The dry-run plan of our prover for `src`; errors name `source` and `plan.gpu_prover`."""
    key = f"{source}: plan.gpu_prover"
    try:
        from cuzk_sim.gpu.prover import PartitionShape, ProverFlags, dry_run_plan
    except ImportError as e:
        raise InputError(f"{key}: our GPU prover (cuzk_sim.gpu) cannot be imported: {e}") from None
    n = 1 << src.domain_log2
    num_vars = src.num_vars if src.num_vars is not None else n
    if src.num_public + 1 >= num_vars:
        raise InputError(f"{key}.num_public: must be below num_vars - 1 ({num_vars - 1})")
    h_len = n - 1 if src.reduction == "bellman" else n
    assume = parse_size(src.assume_free) if src.assume_free is not None else None
    try:
        shape = PartitionShape(n, num_vars, src.num_public, h_len, src.reduction)
        flags = ProverFlags(
            prestage=src.prestage,
            pinned=src.pinned,
            free_bc_early=src.free_bc_early,
            memory_aware=src.memory_aware,
            margin_bytes=parse_size(src.margin),
            allocator=src.allocator,
            **({"msm_chunk": src.msm_chunk} if src.msm_chunk is not None else {}),
        )
        prover_plan = dry_run_plan(shape, flags, assume_free_bytes=assume)
        if flags.prestage and flags.memory_aware and assume is None:
            # both branches of the memory-aware check, decided at replay time
            declined = dry_run_plan(shape, flags, assume_free_bytes=0)
            prover_plan = with_fallback(prover_plan, declined)
        plan = engine_partition_plan(prover_plan)
        plan.validate(key)
    except PlanError as e:
        raise InputError(str(e)) from None
    except TypeError as e:  # the prover's API moved under the scenario schema
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
