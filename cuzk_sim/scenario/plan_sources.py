"""Which plan each proof kind replays, and the host side of its partitions.

Three sources: the cuzk plan builder (every kind, by default), a Plan JSON file
(`[plan] file`), or our GPU prover's live dry run (`[plan] gpu_prover`); the last two
replace the kinds in `[plan] kinds` (default: every kind in the workload).

The host side of a replaced kind's partitions (the engine's synthesis time, the host RAM a
synthesized partition holds, its PCE) follows the plan's shape: when the plan names its
FFT domain (`meta.domain_size`, as our prover's dry run and `cuzk-sim gpu-plan --json`
write it), the kind's published constraints and host bytes per partition are scaled by
plan domain / the kind's domain, so a 2^10 plan is not priced as a 2^27 PoRep partition.
`[plan.host]` states them instead (`synthesis = "0 s"` for pre-synthesized partitions,
`partition_bytes`, `pce = false`). The PCE's transient host bytes stay the profile's.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from cuzk_sim.io.errors import InputError, key_path, validate_input
from cuzk_sim.io.inputs import MAX_JSON_BYTES
from cuzk_sim.io.units import parse_duration, parse_size
from cuzk_sim.plan.builders.circuits import SHAPES, CircuitShape
from cuzk_sim.plan.builders.cuzk import CuzkVariant, build_partition_plan
from cuzk_sim.plan.builders.gpu_prover import gpu_prover_plan
from cuzk_sim.plan.contract import Lock, Plan, PlanError, Unlock
from cuzk_sim.reference.formats.files import read_limited
from cuzk_sim.scenario.flags import build_flags, flags_model
from cuzk_sim.scenario.schema import GpuProverShape, PlanHost, PlanSource, ScenarioFile


@dataclasses.dataclass(frozen=True)
class PartitionPlans:
    """Per proof kind: the plan a GPU worker runs and the circuit the engine synthesizes."""

    plans: dict[str, Plan]
    shapes: dict[str, CircuitShape]


def partition_plans(
    spec: ScenarioFile, variant: CuzkVariant, vram: int, source: str, base: Path | None
) -> PartitionPlans:
    kinds = sorted({w.kind for w in spec.workload})
    plans = {k: build_partition_plan(SHAPES[k], variant, vram) for k in kinds}
    shapes = dict(SHAPES)
    if spec.plan is not None:
        replay = _replayed_plan(spec.plan, source, base, tuple(spec.plan.kinds or kinds))
        if spec.plan.gpu_prover is not None:
            replay = with_lock_scope(replay, spec.variant.mutex_scope)
        for k in spec.plan.kinds or kinds:
            plans[k] = replay
            shapes[k] = replayed_shape(SHAPES[k], replay, spec.plan.host)
    return PartitionPlans(plans, shapes)


def with_lock_scope(plan: Plan, scope: str) -> Plan:
    """Our prover's plan with its device lock taken at `scope` (variant.mutex_scope): the
    prover always asks for its device's lock, and the real pipeline (gpu/pipeline.py) maps
    that lock to one per GPU, one for all or none — the model replays the same."""
    if scope == "device":
        return plan
    steps = tuple(
        dataclasses.replace(s, scope=scope) if isinstance(s, (Lock, Unlock)) else s
        for s in plan.steps
    )
    return Plan(plan.name, steps, {**plan.meta, "mutex_scope": scope})


def _replayed_plan(
    src: PlanSource, source: str, base: Path | None, kinds: tuple[str, ...] = ()
) -> Plan:
    if src.gpu_prover is not None:
        return gpu_prover_plan_of(src.gpu_prover, source, kinds=kinds)
    assert src.file is not None  # the schema checks that there is exactly one source
    plan_path = Path(src.file)
    if base is not None and not plan_path.is_absolute():
        plan_path = base / plan_path
    try:  # a regular file only, read up to a byte limit (never /dev/zero for ever)
        return Plan.from_json(read_limited(plan_path, MAX_JSON_BYTES).decode(), str(plan_path))
    except FileNotFoundError:
        raise InputError(f"{source}: plan.file: no such file {plan_path}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{source}: plan.file: cannot read {plan_path} ({e})") from None
    except PlanError as e:
        raise InputError(f"{source}: plan.file: {e}") from None


def gpu_prover_plan_of(
    raw: dict, source: str, at: tuple = ("plan", "gpu_prover"), kinds: tuple[str, ...] = ()
) -> Plan:
    """The replayed plan of a `[plan] gpu_prover` table `raw`: GpuProverShape's keys plus
    the keys of the prover's ProverFlags as it is now (flags.py). Errors name `source` and
    the table's key path `at` (another file format may hold such a table elsewhere).
    `kinds`: the proof kinds that replay it (the witness shape's default: porep's when
    they are all porep)."""
    key = f"{source}: {key_path(at)}"
    try:
        from cuzk_sim.gpu import flags as prover_flags
        from cuzk_sim.gpu import prover
    except ImportError as e:
        raise InputError(f"{key}: our GPU prover (cuzk_sim.gpu) cannot be imported: {e}") from None
    try:
        model = flags_model(prover_flags.ProverFlags, GpuProverShape)
        keys = validate_input(model, raw, source, at)
    except TypeError as e:  # ProverFlags is no dataclass any more
        raise InputError(f"{key}: the prover's ProverFlags changed: {e}") from None
    n = 1 << keys.domain_log2
    num_vars = keys.num_vars if keys.num_vars is not None else n
    if keys.num_public + 1 >= num_vars:
        raise InputError(f"{key}.num_public: must be below num_vars - 1 ({num_vars - 1})")
    h_len = n - 1 if keys.reduction == "bellman" else n
    assume = parse_size(keys.assume_free) if keys.assume_free is not None else None
    try:
        witness = keys.witness or ("porep" if kinds and set(kinds) == {"porep"} else "dense")
        shape = prover.PartitionShape(n, num_vars, keys.num_public, h_len, keys.reduction)
        if witness != "dense":  # the queries as dense as the shape says (inputs dense)
            a, b = prover.witness_shape(witness).counts(num_vars - keys.num_public - 1)
            first = keys.num_public + 1
            shape = dataclasses.replace(shape, a_count=first + a, b_count=first + b)
        shape = dataclasses.replace(shape, witness=witness)
        flags = build_flags(prover_flags.ProverFlags, keys, key)
    except TypeError as e:  # the prover's API moved under the scenario schema
        raise InputError(f"{key}: the prover's PartitionShape/ProverFlags changed: {e}") from None
    _refuse_unread(flags, keys, assume, key)
    return gpu_prover_plan(shape, flags, assume, key)


def _refuse_unread(flags: Any, keys: Any, assume: int | None, key: str) -> None:
    """Keys only the memory-aware pre-staging check reads (gpu/prover.py `upload_abc`):
    stated without `prestage = true, memory_aware = true` the plan would silently be the
    one without them. (getattr: a ProverFlags without these fields is the API change
    gpu_prover_plan reports.)"""
    aware, prestage = getattr(flags, "memory_aware", False), getattr(flags, "prestage", False)
    if aware and not prestage:
        raise InputError(
            f"{key}.memory_aware: only decides whether to pre-stage a/b/c: needs prestage = true"
        )
    needs = "needs prestage = true and memory_aware = true (only the memory-aware pre-staging"
    if "margin" in keys.model_fields_set and not aware:
        raise InputError(f"{key}.margin: {needs} check reads it)")
    if assume is not None and not (prestage and aware):
        raise InputError(f"{key}.assume_free: {needs} check reads it)")


def plan_domain(plan: Plan) -> int | None:
    """The FFT domain a plan says it proves (`meta.domain_size`, a power of two), if any."""
    domain = plan.meta.get("domain_size")
    if isinstance(domain, int) and not isinstance(domain, bool) and domain > 0:
        return domain if domain & (domain - 1) == 0 else None
    return None


def replayed_shape(kind: CircuitShape, plan: Plan, host: PlanHost) -> CircuitShape:
    """The circuit the engine synthesizes for a partition that replays `plan` (see the
    module docstring): the kind's, scaled to the plan's domain, overridden by `host`."""
    shape, domain = kind, plan_domain(plan)
    if domain is not None and domain != kind.domain:
        scale = domain / kind.domain
        shape = dataclasses.replace(
            kind,
            constraints=round(kind.constraints * scale),
            domain_log2=domain.bit_length() - 1,
            host_bytes=round(kind.host_bytes * scale),
        )
    return dataclasses.replace(
        shape,
        srs_bytes=0,  # a replayed plan holds its own key (e.g. key_pinned buffers): cuzk's
        pce_bytes=0,  # SRS and PCE residency belong to the cuzk builder's kinds
        host_bytes=shape.host_bytes
        if host.partition_bytes is None
        else parse_size(host.partition_bytes),
        synthesis_s=None if host.synthesis is None else parse_duration(host.synthesis),
        pce=host.pce,
    )
