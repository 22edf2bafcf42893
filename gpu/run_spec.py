"""What the real pipeline runs (gpu/pipeline.py): a scenario's workload, GPUs and each
proof kind's prover shape and flags, taken from a loaded scenario (`RunSpec.from_scenario`)."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import Any, Literal

from cuzk_sim.plan.contract import Plan

from .flags import ProverFlags
from .prover import PartitionShape
from .witness_data import witness_shaped


@dataclass(frozen=True)
class KindWork:
    """What one partition of a proof kind runs: the prover's shape and flags."""

    shape: PartitionShape
    flags: ProverFlags


def kind_work(plan: Plan, where: str) -> KindWork:
    """The shape and flags our prover's dry run recorded in `plan.meta`; ValueError when
    the plan is not our prover's (the cuzk builder's plans, a Plan JSON file)."""
    m = plan.meta
    need = ("domain_size", "num_vars", "num_public", "h_len", "reduction", "flags")
    if any(k not in m for k in need):
        raise ValueError(
            f"{where}: the plan {plan.name!r} is not our GPU prover's dry run "
            "(gpu-run executes only `[plan] gpu_prover = {...}` scenarios)"
        )
    shape = PartitionShape(
        m["domain_size"], m["num_vars"], m["num_public"], m["h_len"], m["reduction"]
    )
    shape = witness_shaped(shape, m)  # issue 23: the densities and witness shape, if given
    flags = ProverFlags(**m["flags"])
    # not in the real pipeline yet: a resident key (and its tables) would outlive a
    # partition's Device, and the tails already run in the assembler process (`cuzk-sim
    # run` models them)
    for name in ("key_tables", "key_resident", "overlap_tails"):  # the most specific first
        if getattr(flags, name):
            raise ValueError(
                f"{where}: plan.gpu_prover.{name} = true is not supported by gpu-run "
                "(the model simulates it; set it false to run the scenario on a GPU)"
            )
    return KindWork(shape, flags)


@dataclass(frozen=True)
class Arrival:
    """One proof entering the queue at `at_s` with `partitions` partitions."""

    at_s: float
    kind: str
    partitions: int
    priority: int


@dataclass(frozen=True)
class RunSpec:
    """Everything the real pipeline needs, taken from a loaded scenario (`from_scenario`)."""

    name: str
    seed: int
    on_oom: Literal["stop", "continue"]
    gpus: int
    devices: tuple[int, ...]
    workers_per_device: int
    vram: int
    context: int  # the model's CUDA context: free at start = vram - context
    routing: Literal["assigned", "device0"]
    mutex_scope: Literal["device", "global", "none"]
    pool_release_threshold: int
    host_budget: int
    duration_s: float | None
    arrivals: tuple[Arrival, ...]
    work: dict[str, KindWork]
    restarts_s: tuple[float, ...] = ()  # daemon restarts (gpu/dispatch.py)
    lost: tuple[tuple[float, int], ...] = ()  # (time, GPU) of each lost GPU

    @classmethod
    def from_scenario(cls, scn: Any) -> RunSpec:
        cfg = scn.config
        kinds = {a.kind for a in cfg.arrivals}
        work = {k: kind_work(scn.plans[k], f"{scn.source}: plan for {k}") for k in sorted(kinds)}
        rng = random.Random(cfg.seed)
        arrivals: list[Arrival] = []
        for a in cfg.arrivals:
            shape = scn.shapes[a.kind]
            t = a.start_s
            for i in itertools.count():
                if a.count is not None and i >= a.count:
                    break
                if cfg.duration_s is not None and t > cfg.duration_s:
                    break  # one at the deadline is submitted, as in the model, never run
                arrivals.append(
                    Arrival(t, a.kind, a.partitions or shape.partitions, shape.priority)
                )
                if not a.every_s:
                    if a.count is None:
                        break
                    continue
                t += rng.expovariate(1 / a.every_s) if a.poisson else a.every_s
        arrivals.sort(key=lambda a: a.at_s)  # stable: the workload's order at equal times
        return cls(
            name=scn.name,
            seed=cfg.seed,
            on_oom=cfg.on_oom,
            gpus=cfg.gpus,
            devices=tuple(cfg.devices or range(cfg.gpus)),
            workers_per_device=cfg.gpu_workers_per_device,
            vram=cfg.vram,
            context=cfg.context_overhead,
            routing=cfg.routing,
            mutex_scope=scn.spec.variant.mutex_scope,
            pool_release_threshold=cfg.pool_release_threshold,
            host_budget=cfg.host_ram_budget,
            duration_s=cfg.duration_s,
            arrivals=tuple(arrivals),
            work=work,
            restarts_s=tuple(cfg.restarts_s),
            lost=tuple(cfg.devices_lost_s),
        )
