"""Scenario files (TOML): hardware, cuzk engine config, variant flags, workload, expectations.

The engine section uses cuzk.toml's own key names (`[engine.gpus]
gpu_workers_per_device`, `[engine.pipeline] synthesis_concurrency`, ...). Sizes and times
are strings with units ("16 GiB", "690 ms"). Every problem is reported as
`file: key.path: what was expected` (an `InputError`), never a traceback.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from cuzk_sim.calibration import Profile, load_profile
from cuzk_sim.input_errors import InputError, from_validation
from cuzk_sim.model.allocator import NEVER
from cuzk_sim.model.engine import Arrivals, EngineConfig
from cuzk_sim.plan import Plan, PlanError
from cuzk_sim.plans.circuits import SHAPES, CircuitShape
from cuzk_sim.plans.cuzk import CuzkVariant, build_partition_plan
from cuzk_sim.plans.gpu_prover import GpuProverSource, gpu_prover_plan
from cuzk_sim.units import DurationText, SizeText, parse_duration, parse_size

ProofKind = Literal["porep", "snapdeals", "window_post", "winning_post"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Hardware(_Strict):
    gpus: int = Field(1, ge=1, le=64)
    vram: SizeText | None = None  # default: the profile's card
    context_overhead: SizeText | None = None  # default: the profile's constant
    host_ram: SizeText = "512 GiB"
    host_cores: int | None = Field(None, ge=1, le=65536)  # default: the profile's host


class GpusSection(_Strict):
    gpu_workers_per_device: int = Field(2, ge=1, le=64)
    devices: list[int] = []
    gpu_threads: int = Field(32, ge=0)  # groth16_pool threads (B_G2 MSM); 0 = all cores


class PipelineSection(_Strict):
    enabled: bool = True
    synthesis_lookahead: int = Field(1, ge=0)
    synthesis_concurrency: int = Field(1, ge=1)
    max_parallel_synthesis: int = Field(18, ge=1)


class MemorySection(_Strict):
    total_budget: str = "auto"  # "auto" = host RAM − safety_margin
    safety_margin: SizeText = "5 GiB"

    @field_validator("total_budget")
    @classmethod
    def _budget(cls, v: str) -> str:
        if v != "auto":
            parse_size(v)
        return v


class PceSection(_Strict):
    cache_writable: bool = True  # can the PCE be saved to the param cache?
    cached: list[ProofKind] = []  # PCEs already on disk at start


class Engine(_Strict):
    gpus: GpusSection = GpusSection()
    pipeline: PipelineSection = PipelineSection()
    memory: MemorySection = MemorySection()
    pce: PceSection = PceSection()


class Variant(_Strict):
    prestage: Literal["off", "outside_mutex", "under_mutex"] = "off"
    free_d_bc_after_ntt: bool = False
    memory_aware_margin: SizeText | None = None
    mutex_scope: Literal["device", "global", "none"] = "device"
    routing: Literal["assigned", "device0"] = "assigned"
    d_a_cache: bool = True
    pool_release_threshold: str = "max"  # "max" = UINT64_MAX (never release), or a size
    b_g2_msm: Literal["cpu", "gpu"] = "cpu"

    @field_validator("pool_release_threshold")
    @classmethod
    def _threshold(cls, v: str) -> str:
        if v != "max":
            parse_size(v)
        return v


class PlanSource(_Strict):
    """Exactly one source: a Plan JSON file, or our GPU prover's live dry run."""

    file: str | None = None  # a Plan JSON (Plan.to_json form), relative to the scenario file
    gpu_prover: GpuProverSource | None = None  # built at load time from the prover's code
    kinds: list[ProofKind] = []  # kinds it replaces; [] = every kind in the workload

    @model_validator(mode="after")
    def _one_source(self) -> PlanSource:
        if (self.file is None) == (self.gpu_prover is None):
            raise ValueError("give exactly one of `file` or `gpu_prover`")
        return self


class Workload(_Strict):
    kind: ProofKind
    count: int | None = Field(None, ge=0)  # None: keep arriving until `duration`
    start: DurationText = "0 s"
    every: DurationText | None = None  # gap between arrivals; none: all at `start`
    arrival: Literal["fixed", "poisson"] = "fixed"
    partitions: int | None = Field(None, ge=1)  # default: the kind's partition count


class Expect(_Strict):
    oom: bool | None = None
    seconds_per_proof: tuple[str, str] | None = None  # [lo, hi]
    first_oom_buffer: str | None = None
    first_oom_where: Literal["device", "host"] | None = None
    log_contains: list[str] = []
    proofs_failed: int | None = None
    pce_extractions: int | None = None

    @field_validator("seconds_per_proof")
    @classmethod
    def _range(cls, v: tuple[str, str] | None) -> tuple[str, str] | None:
        if v is not None:
            lo, hi = parse_duration(v[0]), parse_duration(v[1])
            if lo > hi:
                raise ValueError(f"expected [lo, hi] with lo <= hi, got {list(v)}")
        return v


class ScenarioFile(_Strict):
    name: str | None = None
    description: str = ""
    seed: int = 0
    on_oom: Literal["stop", "continue"] = "stop"
    profile: str = "rtx5070ti"
    duration: DurationText | None = None
    restarts: list[DurationText] = []  # daemon restarts (the in-memory PCE is lost)
    hardware: Hardware = Hardware()
    engine: Engine = Engine()
    variant: Variant = Variant()
    plan: PlanSource | None = None
    workload: list[Workload] = Field(min_length=1)
    expect: Expect | None = None

    @model_validator(mode="after")
    def _endless_needs_duration(self) -> ScenarioFile:
        for i, w in enumerate(self.workload):
            if w.count is None and (self.duration is None or w.every is None):
                raise ValueError(
                    f"workload[{i}]: without `count`, both `every` and a top-level "
                    "`duration` are needed (else it never ends)"
                )
        return self


@dataclass(frozen=True)
class Scenario:
    """A validated scenario, ready to simulate."""

    name: str
    source: str
    spec: ScenarioFile
    config: EngineConfig
    profile: Profile
    plans: dict[str, Plan]
    shapes: dict[str, CircuitShape]


def _impossible(source: str, what: str) -> InputError:
    return InputError(f"{source}: impossible hardware: {what}")


def load_scenario(path: str | Path, overrides: Mapping[str, Any] | None = None) -> Scenario:
    """Read, validate and resolve one scenario file; `overrides` (key path -> value, see
    cuzk_sim.overrides) change keys of the file before validation."""
    path = Path(path)
    source = str(path)
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(f"{source}: no such scenario file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{source}: cannot read the scenario file ({e})") from None
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{source}: not valid TOML: {e}") from None
    if overrides:
        from cuzk_sim.overrides import apply_overrides

        try:
            raw = apply_overrides(raw, overrides)
        except InputError as e:
            raise InputError(f"{source}: {e}") from None
    return scenario_from_dict(raw, source, path.parent)


# Bounds on the work one scenario asks for: they exist to bound the run time (a run
# simulates every proof and partition: the farm's 16,200 proofs take about 8 s), not because the
# model breaks beyond them.
MAX_PROOFS = 100_000
MAX_DURATION_S = 30 * 86_400.0
MAX_PARTITIONS = 1_000


def _check_run_bounds(spec: ScenarioFile, source: str) -> None:
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
            total += math.inf if every == 0 and span > 0 else span / every if every else 0
            key = f"workload[{i}].every"
        if total > MAX_PROOFS:
            raise InputError(
                f"{source}: {key}: the workload asks for more than {MAX_PROOFS} proofs in "
                f"all (the limit per scenario) {why}"
            )


def scenario_from_dict(raw: dict, source: str, base: Path | None = None) -> Scenario:
    try:
        spec = ScenarioFile.model_validate(raw)
    except ValidationError as e:
        raise from_validation(source, e) from None
    _check_run_bounds(spec, source)
    try:
        profile = load_profile(spec.profile, base)
    except InputError as e:
        raise InputError(f"{source}: profile: {e}") from None
    hw, eng, var = spec.hardware, spec.engine, spec.variant
    vram = parse_size(hw.vram) if hw.vram else profile.vram
    context = parse_size(hw.context_overhead) if hw.context_overhead else profile.context_overhead
    if vram <= context:
        raise _impossible(source, f"hardware.vram ({hw.vram}) must exceed the CUDA context")
    for d in eng.gpus.devices:
        if not 0 <= d < hw.gpus:
            raise _impossible(
                source, f"engine.gpus.devices names GPU {d}; hardware.gpus = {hw.gpus}"
            )
    host = parse_size(hw.host_ram)
    if eng.memory.total_budget == "auto":
        budget = host - parse_size(eng.memory.safety_margin)
    else:
        budget = parse_size(eng.memory.total_budget)
        if budget > host:
            raise _impossible(source, "engine.memory.total_budget exceeds hardware.host_ram")
    kinds = sorted({w.kind for w in spec.workload})
    for w in spec.workload:
        k = w.kind
        need = (w.partitions or SHAPES[k].partitions) * SHAPES[k].host_bytes
        if need > budget:
            raise _impossible(
                source,
                f"one {k} proof needs {need / 2**30:.1f} GiB of host memory for its "
                f"partitions; the budget (engine.memory) is {budget / 2**30:.1f} GiB",
            )
    if profile.pce_host_bytes > budget:
        raise _impossible(source, "PCE extraction needs more host memory than the budget")
    cores = hw.host_cores or profile.host_cores
    variant = CuzkVariant(
        prestage=var.prestage,
        free_d_bc_after_ntt=var.free_d_bc_after_ntt,
        memory_aware_margin=parse_size(var.memory_aware_margin)
        if var.memory_aware_margin
        else None,
        mutex_scope=var.mutex_scope,
        d_a_cache=var.d_a_cache,
        b_g2_msm=var.b_g2_msm,
        b_g2_threads=min(eng.gpus.gpu_threads or cores, cores),
    )
    plans = {k: build_partition_plan(SHAPES[k], variant, vram) for k in kinds}
    if spec.plan is not None and spec.plan.gpu_prover is not None:
        replay = gpu_prover_plan(spec.plan.gpu_prover, source)
        for k in spec.plan.kinds or kinds:
            plans[k] = replay
    elif spec.plan is not None and spec.plan.file is not None:
        plan_path = Path(spec.plan.file)
        if base is not None and not plan_path.is_absolute():
            plan_path = base / plan_path
        try:
            replay = Plan.from_json(plan_path.read_text(), str(plan_path))
        except FileNotFoundError:
            raise InputError(f"{source}: plan.file: no such file {plan_path}") from None
        except (OSError, UnicodeDecodeError) as e:
            raise InputError(f"{source}: plan.file: cannot read {plan_path} ({e})") from None
        except PlanError as e:
            raise InputError(f"{source}: plan.file: {e}") from None
        for k in spec.plan.kinds or kinds:
            plans[k] = replay
    config = EngineConfig(
        gpus=hw.gpus,
        vram=vram,
        context_overhead=context,
        host_ram_budget=budget,
        host_cores=cores,
        gpu_workers_per_device=eng.gpus.gpu_workers_per_device,
        devices=tuple(eng.gpus.devices),
        synthesis_concurrency=eng.pipeline.synthesis_concurrency,
        synthesis_lookahead=eng.pipeline.synthesis_lookahead,
        max_parallel_synthesis=eng.pipeline.max_parallel_synthesis,
        routing=var.routing,
        pool_release_threshold=NEVER
        if var.pool_release_threshold == "max"
        else parse_size(var.pool_release_threshold),
        on_oom=spec.on_oom,
        pce_writable=eng.pce.cache_writable,
        pce_on_disk=tuple(eng.pce.cached),
        restarts_s=tuple(parse_duration(t) for t in spec.restarts),
        duration_s=parse_duration(spec.duration) if spec.duration else None,
        seed=spec.seed,
        arrivals=tuple(
            Arrivals(
                kind=w.kind,
                count=w.count,
                start_s=parse_duration(w.start),
                every_s=parse_duration(w.every) if w.every else None,
                poisson=w.arrival == "poisson",
                partitions=w.partitions,
            )
            for w in spec.workload
        ),
    )
    name = spec.name or (Path(source).stem if source else "scenario")
    return Scenario(name, source, spec, config, profile, plans, dict(SHAPES))
