"""Daemon restarts lose what is in flight; a lost GPU stops its workers. By hand, on the
toy profile: PCE load 1 s, synthesis 10 s per proof, a kernel of size s takes s seconds."""

import pytest
from sim_toys import MIB, run_plan

from cuzk_sim.io.errors import InputError
from cuzk_sim.model.engine import Arrivals
from cuzk_sim.plan.contract import Alloc, Free, Kernel, Lock, Plan, Unlock
from cuzk_sim.scenario import scenario_from_dict

SLOW = Plan(
    "slow",
    (
        Alloc("cache", 10 * MIB, persistent=True, per_device=True),
        Lock("gpu"),
        Alloc("x", 20 * MIB),
        Kernel("k", "ntt", 30),
        Free("x"),
        Unlock("gpu"),
    ),
)


def test_a_restart_fails_the_proofs_in_flight_and_the_daemon_starts_empty():
    # proof 0: synthesized 1..11, on the GPU 11..41; proof 1: synthesized 11..21.
    # The restart at 20 s loses both (one on the GPU, one in synthesis); proof 2 arrives
    # at 25 s into the fresh daemon: PCE loaded again 25..26, synthesis 26..36, GPU 36..66
    arrivals = (Arrivals("toy", 2), Arrivals("toy", 1, start_s=25.0))
    sim, result = run_plan(SLOW, arrivals=arrivals, restarts_s=(20.0,))
    assert result.proofs_failed == 2 and result.proofs_completed == 1
    assert result.proof_done_times == [("toy-2", "toy", 66.0)]
    lines = [line for _, line in result.log]
    assert "daemon restart: in-memory PCE dropped; 2 proofs in flight lost" in lines
    # the per-GPU cache died with the process: allocated again by the new daemon
    assert sum("cache allocated 10 MiB on gpu 0" in line for line in lines) == 2
    mem = sim.devices[0].memory
    assert set(mem.live) == {("gpu0", "cache")}  # only the new daemon's cache
    assert result.peak_vram_bytes[0] == 30 * MIB


def test_a_restart_with_nothing_in_flight_changes_only_the_pce():
    _, result = run_plan(SLOW, arrivals=(Arrivals("toy", 1),), restarts_s=(100.0,))
    assert result.proofs_completed == 1 and result.proofs_failed == 0
    assert result.proof_done_times == [("toy-0", "toy", 41.0)]


def test_a_lost_gpu_stops_its_workers_and_the_others_take_the_queue():
    # 2 GPUs, one worker each; proofs synthesized 1..11, 11..21, 21..31, 31..41.
    # gpu1 is lost at 20 s, while its worker waits: p0 runs on gpu0 11..41, and p1, p2,
    # p3 follow there: 41..71, 71..101, 101..131
    _, result = run_plan(SLOW, proofs=4, gpus=2, devices_lost_s=((20.0, 1),))
    assert result.proofs_completed == 4
    assert [t for _, _, t in result.proof_done_times] == [41.0, 71.0, 101.0, 131.0]


GLOBAL = Plan(
    "global",
    tuple(
        Lock(s.mutex, "global")
        if isinstance(s, Lock)
        else Unlock(s.mutex, "global")
        if isinstance(s, Unlock)
        else s
        for s in SLOW.steps
    ),
)


def test_a_gpu_lost_while_its_worker_waits_on_the_mutex_fails_that_proof():
    # one global mutex: gpu0's worker holds it for p0 11..41; gpu1's worker takes p1 at
    # 21 and waits on it; gpu1 is lost at 25: p1 fails, and gpu1's worker leaves the
    # mutex queue (else the mutex would be handed to no one); p2, p3 on gpu0: 41..71, 71..101
    _, result = run_plan(GLOBAL, proofs=4, gpus=2, devices_lost_s=((25.0, 1),))
    assert result.proofs_failed == 1 and result.proofs_completed == 3
    assert [t for _, _, t in result.proof_done_times] == [41.0, 71.0, 101.0]
    assert not result.stalled


def test_a_gpu_lost_while_its_worker_holds_the_mutex_releases_it():
    # gpu0 is lost at 20 while its worker holds the global mutex for p0: p0 fails, the
    # mutex is released; gpu1's worker takes p1 at 21: 21..51, then p2 51..81, p3 81..111
    _, result = run_plan(GLOBAL, proofs=4, gpus=2, devices_lost_s=((20.0, 0),))
    assert result.proofs_failed == 1 and result.proofs_completed == 3
    assert [t for _, _, t in result.proof_done_times] == [51.0, 81.0, 111.0]


def test_lost_devices_are_a_scenario_key_and_must_exist():
    raw = {
        "profile": "h200",
        "hardware": {"gpus": 2},
        "lost_devices": [{"at": "1 h", "gpu": 1}],
        "workload": [{"kind": "porep", "count": 1}],
    }
    assert scenario_from_dict(raw, "t.toml").config.devices_lost_s == ((3600.0, 1),)
    raw["lost_devices"] = [{"at": "1 h", "gpu": 2}]
    with pytest.raises(InputError, match="lost_devices"):
        scenario_from_dict(raw, "t.toml")


@pytest.mark.parametrize("plan", [SLOW, GLOBAL], ids=["device-mutex", "global-mutex"])
def test_restarts_and_lost_gpus_give_the_same_run_on_the_plain_interpreter(plan):
    from cuzk_sim.model.fast import FastPaths

    kw = {
        "proofs": 6,
        "gpus": 2,
        "workers": 2,
        "restarts_s": (50.0,),
        "devices_lost_s": ((90.0, 1),),
    }
    _, fast = run_plan(plan, **kw)
    import dataclasses

    plain_paths = dataclasses.replace(FastPaths.none(), arithmetic_cpu=True)  # as the model's
    _, plain = run_plan(plan, fast=plain_paths, **kw)
    assert fast.to_dict() == plain.to_dict()
    assert fast.proofs_failed + fast.proofs_completed == 6
