"""Which plan each proof kind replays: the cuzk builder, a plan file or our prover.

Three sources: the cuzk plan builder (every kind, by default), a Plan JSON file
(`[plan] file`), or our GPU prover's live dry run (`[plan] gpu_prover`); the last two
replace the kinds in `[plan] kinds` (default: every kind in the workload).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from pydantic import ValidationError

from cuzk_sim.input_errors import InputError, from_validation
from cuzk_sim.plan import Plan, PlanError
from cuzk_sim.plans.circuits import SHAPES, CircuitShape
from cuzk_sim.plans.cuzk import CuzkVariant, build_partition_plan
from cuzk_sim.plans.gpu_prover import gpu_prover_plan
from cuzk_sim.scenario.flags import build_flags, flags_model
from cuzk_sim.scenario.schema import GpuProverShape, PlanSource, ScenarioFile
from cuzk_sim.units import parse_size


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
        replay = _replayed_plan(spec.plan, source, base)
        for k in spec.plan.kinds or kinds:
            plans[k] = replay
    return PartitionPlans(plans, shapes)


def _replayed_plan(src: PlanSource, source: str, base: Path | None) -> Plan:
    if src.gpu_prover is not None:
        return _gpu_prover(src.gpu_prover, f"{source}: plan.gpu_prover", source)
    assert src.file is not None  # the schema checks that there is exactly one source
    plan_path = Path(src.file)
    if base is not None and not plan_path.is_absolute():
        plan_path = base / plan_path
    try:
        return Plan.from_json(plan_path.read_text(), str(plan_path))
    except FileNotFoundError:
        raise InputError(f"{source}: plan.file: no such file {plan_path}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{source}: plan.file: cannot read {plan_path} ({e})") from None
    except PlanError as e:
        raise InputError(f"{source}: plan.file: {e}") from None


def _gpu_prover(raw: dict, key: str, source: str) -> Plan:
    """`[plan] gpu_prover`: GpuProverShape's keys plus the keys of the prover's ProverFlags
    as it is now (flags.py), validated and turned into the dry run's inputs."""
    try:
        from cuzk_sim.gpu import prover
    except ImportError as e:
        raise InputError(f"{key}: our GPU prover (cuzk_sim.gpu) cannot be imported: {e}") from None
    try:
        keys = flags_model(prover.ProverFlags, GpuProverShape).model_validate(raw)
    except ValidationError as e:
        raise from_validation(source, e, prefix=("plan", "gpu_prover")) from None
    except TypeError as e:  # ProverFlags is no dataclass any more
        raise InputError(f"{key}: the prover's ProverFlags changed: {e}") from None
    n = 1 << keys.domain_log2
    num_vars = keys.num_vars if keys.num_vars is not None else n
    if keys.num_public + 1 >= num_vars:
        raise InputError(f"{key}.num_public: must be below num_vars - 1 ({num_vars - 1})")
    h_len = n - 1 if keys.reduction == "bellman" else n
    assume = parse_size(keys.assume_free) if keys.assume_free is not None else None
    try:
        shape = prover.PartitionShape(n, num_vars, keys.num_public, h_len, keys.reduction)
        flags = build_flags(prover.ProverFlags, keys, key)
    except TypeError as e:  # the prover's API moved under the scenario schema
        raise InputError(f"{key}: the prover's PartitionShape/ProverFlags changed: {e}") from None
    return gpu_prover_plan(shape, flags, assume, key)
