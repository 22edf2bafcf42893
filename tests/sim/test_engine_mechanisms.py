"""Mechanisms beyond the incident: PCE extraction and restarts, routing, leaks, priority."""

from sim_toys import run_plan, toy_profile

from cuzk_sim.model.compiled import compile_plan
from cuzk_sim.model.engine import Arrivals, EngineConfig, Simulation
from cuzk_sim.plan.builders.circuits import CircuitShape
from cuzk_sim.plan.contract import Alloc, Free, Kernel, Lock, Plan, Unlock

MIB = 2**20
SIMPLE = Plan(
    "simple", (Lock("gpu"), Alloc("x", 10 * MIB), Kernel("k", "ntt", 1), Free("x"), Unlock("gpu"))
)


def pce_run(writable: bool):
    shape = CircuitShape("toy", 10, 4, 1, 2, 1)
    cfg = EngineConfig(
        gpus=1,
        vram=100 * MIB,
        context_overhead=0,
        host_ram_budget=10**6,
        gpu_workers_per_device=1,
        pce_writable=writable,
        restarts_s=(100.0, 200.0),
        arrivals=(Arrivals("toy", 4, every_s=80.0),),
    )
    profile = toy_profile()
    sim = Simulation("pce", cfg, {"toy": compile_plan(SIMPLE, profile)}, {"toy": shape}, profile)
    return sim, sim.run()


def test_pce_saved_once_then_loaded_after_restarts():
    sim, result = pce_run(writable=True)
    assert sim.pce.extractions == 1
    assert sum("PCE loaded" in line for _, line in result.log) == 2  # after each restart


def test_pce_that_cannot_be_saved_is_extracted_after_every_restart():
    sim, result = pce_run(writable=False)
    assert sim.pce.extractions == 3  # first use + one per restart (proofs at 0, 80, 160, 240)
    assert any("save failed" in line for _, line in result.log)


def test_routing_everything_to_device_0_leaves_device_1_untouched():
    sim, result = run_plan(SIMPLE, workers=2, gpus=2, proofs=2, partitions=4, routing="device0")
    assert result.peak_vram_bytes[1] == 0
    assert {w.device.index for w in sim.workers} == {0}
    _, assigned = run_plan(SIMPLE, workers=2, gpus=2, proofs=2, partitions=4)
    assert assigned.peak_vram_bytes[1] > 0


def test_a_leaked_buffer_makes_the_nth_partition_fail():
    leaky = Plan("leaky", (Alloc("x", 30 * MIB), Kernel("k", "ntt", 1)))  # never freed
    _, result = run_plan(leaky, workers=1, proofs=1, partitions=5)
    # 100 MiB card, 30 MiB leaked per partition: the 4th allocation does not fit
    # the 5th partition is dropped: its proof has already failed
    assert result.partitions_completed == 3 and result.partitions_failed == 1
    first = result.fatal_ooms[0]
    assert first.partition == "toy-0/3"
    assert set(first.ledger["gpu0-w0"]) == {"x#leak1", "x#leak2", "x#leak3"}


def test_winning_post_overtakes_queued_porep():
    from cuzk_sim.plan.builders.circuits import SHAPES
    from cuzk_sim.plan.builders.cuzk import CuzkVariant, build_partition_plan
    from cuzk_sim.profiles.profile import load_profile

    profile = load_profile("rtx5070ti")
    plans = {
        k: compile_plan(build_partition_plan(SHAPES[k], CuzkVariant(), 16 * 2**30), profile)
        for k in ("porep", "winning_post")
    }
    cfg = EngineConfig(
        gpus=1,
        vram=16 * 2**30,
        context_overhead=400 * MIB,
        host_ram_budget=507 * 2**30,
        gpu_workers_per_device=1,
        synthesis_concurrency=2,
        pool_release_threshold=0,
        pce_on_disk=("porep", "winning_post"),
        arrivals=(Arrivals("porep", 2), Arrivals("winning_post", 1, start_s=20.0)),
    )
    result = Simulation("prio", cfg, plans, dict(SHAPES), profile).run()
    order = [pid for pid, _, _ in result.proof_done_times]
    assert order.index("winning_post-2") < order.index("porep-1")
