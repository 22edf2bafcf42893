"""The engine's configuration from a validated scenario: the hardware it runs on (checked
against the profile: a card smaller than its context, a budget smaller than one proof,
are impossible), the cuzk engine keys, and the workload's arrivals."""

from __future__ import annotations

from cuzk_sim.io.errors import InputError
from cuzk_sim.io.units import format_size, parse_duration, parse_size
from cuzk_sim.model.allocator import NEVER
from cuzk_sim.model.config import Arrivals, EngineConfig
from cuzk_sim.plan.builders.circuits import CircuitShape
from cuzk_sim.profiles.cards import card
from cuzk_sim.profiles.profile import Profile
from cuzk_sim.scenario.schema import ScenarioFile


def impossible(source: str, what: str) -> InputError:
    return InputError(f"{source}: impossible hardware: {what}")


def vram_bytes(spec: ScenarioFile, profile: Profile, source: str) -> int:
    """The card's size: `hardware.vram`, else the `hardware.card` preset's, else the
    profile's; above the CUDA context."""
    hw = spec.hardware
    if hw.vram:
        vram, what = parse_size(hw.vram), f"hardware.vram ({hw.vram})"
    elif hw.card:
        vram, what = card(hw.card).vram_bytes, f"hardware.card ({hw.card})"
    else:
        vram, what = profile.vram, f"the profile's VRAM ({profile.name})"
    ctx = context_bytes(spec, profile)
    if vram <= ctx:
        where = (
            "hardware.context_overhead"
            if spec.hardware.context_overhead
            else f"profile {profile.name}'s gpu.context_overhead"
        )
        raise impossible(
            source, f"{what} must exceed the CUDA context ({format_size(ctx)}, {where})"
        )
    return vram


def context_bytes(spec: ScenarioFile, profile: Profile) -> int:
    ctx = spec.hardware.context_overhead
    return parse_size(ctx) if ctx else profile.context_overhead


def captured_context(spec: ScenarioFile, plans: dict) -> int | None:
    """The CUDA context a captured plan measured (plan meta `context_bytes`, written by
    `cuzk-sim capture`), the largest of the run's plans; None when the scenario states
    `hardware.context_overhead` (that wins) or no plan carries one."""
    if spec.hardware.context_overhead:
        return None
    found = [p.meta.get("context_bytes") for p in plans.values()]
    found = [c for c in found if isinstance(c, int) and not isinstance(c, bool) and c > 0]
    return max(found) if found else None


def host_cores(spec: ScenarioFile, profile: Profile) -> int:
    return spec.hardware.host_cores or profile.host_cores


def host_budget(spec: ScenarioFile, source: str) -> int:
    """engine.memory: "auto" = host RAM - safety margin, or a size within host RAM."""
    host, memory = parse_size(spec.hardware.host_ram), spec.engine.memory
    if memory.total_budget == "auto":
        margin = parse_size(memory.safety_margin)
        if host <= margin:  # else a negative budget, reported later as a proof's shortfall
            raise impossible(
                source,
                f"hardware.host_ram ({spec.hardware.host_ram}) must exceed "
                f"engine.memory.safety_margin ({memory.safety_margin}): the budget "
                '(total_budget = "auto") is host RAM less the margin',
            )
        return host - margin
    budget = parse_size(memory.total_budget)
    if budget > host:
        raise impossible(source, "engine.memory.total_budget exceeds hardware.host_ram")
    return budget


def check_devices(spec: ScenarioFile, source: str) -> None:
    for d in spec.engine.gpus.devices:
        if not 0 <= d < spec.hardware.gpus:
            raise impossible(
                source, f"engine.gpus.devices names GPU {d}; hardware.gpus = {spec.hardware.gpus}"
            )


def resident_bytes(spec: ScenarioFile, shapes: dict[str, CircuitShape]) -> int:
    """What the daemon keeps resident once every kind of the workload was used: each
    kind's SRS (pinned) and PCE (heap), permanent reservations (model/host_side.py)."""
    kinds = {w.kind for w in spec.workload}
    return sum(shapes[k].srs_bytes + (shapes[k].pce_bytes if shapes[k].pce else 0) for k in kinds)


def check_host_fits(
    spec: ScenarioFile, shapes: dict[str, CircuitShape], profile: Profile, budget: int, source: str
) -> None:
    """The resident SRS and PCE of every kind plus the smallest unit of work the engine
    admits (one partition with a partition pool, a whole proof without: its reservation)
    must fit the budget; so must a PCE extraction."""
    fixed = resident_bytes(spec, shapes)
    pool = spec.engine.synthesis.partition_workers
    for w in spec.workload:
        shape = shapes[w.kind]
        parts = 1 if pool else (w.partitions or shape.partitions)
        need = fixed + parts * shape.host_bytes
        if need > budget:
            unit = "one partition" if pool else f"its {parts} partitions"
            raise impossible(
                source,
                f"one {w.kind} proof needs {need / 2**30:.1f} GiB of host memory: "
                f"{fixed / 2**30:.1f} GiB resident (SRS + PCE) and {unit} "
                f"({parts} x {shape.host_bytes / 2**30:.1f} GiB, memory.rs); the budget "
                f"(engine.memory) is {budget / 2**30:.1f} GiB"
                + ("" if pool else "; a partition pool (engine.synthesis.partition_workers) "
                   "needs only one partition at a time"),
            )  # fmt: skip
    if fixed + profile.pce_host_bytes > budget:
        raise impossible(source, "PCE extraction needs more host memory than the budget")


def host_bound(spec: ScenarioFile, shapes: dict[str, CircuitShape], budget: int) -> str:
    """Which reservation bounds the partitions held at once, in words: the partition pool
    (its permits and channel), the budget left after the resident SRS and PCE, or (whole
    proofs) the synthesizers."""
    fixed = resident_bytes(spec, shapes)
    per = max(shapes[w.kind].host_bytes for w in spec.workload)
    by_budget = max((budget - fixed) // per, 0)
    pool = spec.engine.synthesis.partition_workers
    left = (
        f"{(budget - fixed) / 2**30:.1f} GiB of the budget after {fixed / 2**30:.1f} GiB resident"
    )
    if pool:
        held = 2 * pool + spec.engine.gpus.gpu_workers_per_device * spec.hardware.gpus
        if by_budget < held:
            return (
                f"host budget: {left} holds {by_budget} partitions of {per / 2**30:.0f} GiB, "
                f"fewer than the pool's {pool} permits + {pool} channel slots + GPU workers "
                f"({held})"
            )
        return (
            f"partition pool: {pool} permits + a channel of {max(pool, 1)} (at most {held} "
            f"partitions held); {left} would hold {by_budget}"
        )
    return f"synthesizers: whole proofs reserved at once; {left} holds {by_budget} partitions"


def engine_config(
    spec: ScenarioFile, profile: Profile, vram: int, budget: int, source: str
) -> EngineConfig:
    hw, eng, var = spec.hardware, spec.engine, spec.variant
    threshold = var.pool_release_threshold
    return EngineConfig(
        gpus=hw.gpus,
        vram=vram,
        context_overhead=context_bytes(spec, profile),
        host_ram_budget=budget,
        host_cores=host_cores(spec, profile),
        gpu_workers_per_device=eng.gpus.gpu_workers_per_device,
        separate_processes=eng.gpus.separate_processes,
        devices=tuple(eng.gpus.devices),
        synthesis_concurrency=eng.pipeline.synthesis_concurrency,
        synthesis_lookahead=eng.pipeline.synthesis_lookahead,
        max_parallel_synthesis=eng.pipeline.max_parallel_synthesis,
        partition_workers=eng.synthesis.partition_workers,
        routing=var.routing,
        pool_release_threshold=NEVER if threshold == "max" else parse_size(threshold),
        on_oom=spec.on_oom,
        pce_writable=eng.pce.cache_writable,
        pce_on_disk=tuple(eng.pce.cached),
        restarts_s=tuple(parse_duration(t) for t in spec.restarts),
        devices_lost_s=tuple((parse_duration(d.at), d.gpu) for d in spec.lost_devices),
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
