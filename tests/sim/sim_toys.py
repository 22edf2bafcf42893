"""Helpers for the simulator tests: a toy profile with round numbers, and a runner."""

from __future__ import annotations

from cuzk_sim.model.compiled import compile_plan
from cuzk_sim.model.engine import Arrivals, EngineConfig, Simulation
from cuzk_sim.model.fast import FastPaths
from cuzk_sim.plan.builders.circuits import CircuitShape
from cuzk_sim.plan.contract import CPU_KINDS, KERNEL_KINDS, Plan
from cuzk_sim.profiles.profile import Cost, Profile

MIB = 2**20


def toy_profile() -> Profile:
    """Every kernel and cpu kind costs exactly `size` seconds; copies 1 byte/s, no latency."""
    per = Cost(0.0, 1.0, "linear")
    return Profile(
        name="toy",
        source="tests/sim/sim_toys.py",
        provenance="test",
        gpu_model="toy",
        vram=100 * MIB,
        context_overhead=0,
        pinned_bw=1.0,
        pageable_bw=1.0,
        copy_latency=0.0,
        kernels={k: per for k in KERNEL_KINDS},
        cpus={k: per for k in CPU_KINDS},
        pce_extract=Cost(5.0, 0.0, "linear"),
        pce_load=1.0,
        pce_host_bytes=1,
    )


TOY = CircuitShape("toy", constraints=10, domain_log2=4, partitions=1, priority=2, host_bytes=1)


def run_plan(
    plan: Plan,
    workers: int = 1,
    proofs: int = 1,
    vram: int = 100 * MIB,
    context: int = 0,
    record: bool = False,
    on_oom: str = "continue",
    partitions: int = 1,
    profile: Profile | None = None,
    host_ram_budget: int = 10**6,
    force_shared: bool = False,
    fast=None,
    **cfg,
):
    shape = CircuitShape("toy", 10, 4, partitions, 2, 1)
    config = EngineConfig(
        gpus=cfg.pop("gpus", 1),
        vram=vram,
        context_overhead=context,
        host_ram_budget=host_ram_budget,
        gpu_workers_per_device=workers,
        max_parallel_synthesis=cfg.pop("max_parallel_synthesis", 64),
        synthesis_lookahead=cfg.pop("synthesis_lookahead", 8),
        on_oom=on_oom,
        pce_on_disk=("toy",),
        arrivals=cfg.pop("arrivals", (Arrivals("toy", proofs),)),
        **cfg,
    )
    profile = profile or toy_profile()
    fast = fast or FastPaths()
    sim = Simulation(
        "test",
        config,
        {"toy": compile_plan(plan, profile, merge=fast.merge_kernels)},
        {"toy": shape},
        profile,
        record,
        fast=fast,
    )
    if force_shared:  # price CPU steps through processor sharing even with cores to spare
        sim.cores_shared = True
    return sim, sim.run()


def toy_scenario(plan: Plan, workers: int = 2, proofs: int = 1, partitions: int = 2, **cfg):
    """A Scenario (as `runner.simulate` and `run_replicas` take it) around one toy plan:
    one GPU, `workers` workers, `proofs` proofs of `partitions` partitions at t = 0."""
    from cuzk_sim.scenario import Scenario, ScenarioFile

    shape = CircuitShape("toy", 10, 4, partitions, 2, 1)
    config = EngineConfig(
        gpus=1,
        vram=cfg.pop("vram", 100 * MIB),
        context_overhead=0,
        host_ram_budget=10**6,
        gpu_workers_per_device=workers,
        max_parallel_synthesis=64,
        synthesis_lookahead=cfg.pop("synthesis_lookahead", 8),
        on_oom=cfg.pop("on_oom", "continue"),
        pce_on_disk=("toy",),
        arrivals=(Arrivals("toy", proofs),),
        **cfg,
    )
    spec = ScenarioFile(workload=[{"kind": "porep", "count": proofs}])  # not read by the model
    return Scenario("toy", "tests", spec, config, toy_profile(), {"toy": plan}, {"toy": shape})
