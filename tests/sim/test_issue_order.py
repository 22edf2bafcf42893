"""Issuing into one in-order queue (our prover on CUDA's legacy default stream, plan meta
gpu_stream = "legacy_default"; cuzk_sim/model/interpreter.py `queues_in_order`): kernels
and page-locked uploads return to the host at once, a copy to the host returns when it
is done, and the queue takes work in the order the workers issued it. What the real
no-mutex pair showed (docs/validation.md, "What the model gets wrong" 2): a worker
allocates its next MSM's buffers while its page-locked upload waits in the queue, and two
workers issuing at once fall into phase. Expected times are worked out by hand on the
toy profile (every kernel `size` seconds, copies 1 B/s, no latency; both workers start at
11 s, when the toy synthesis ends)."""

import dataclasses

import pytest
from sim_toys import MIB, run_plan, toy_profile

from cuzk_sim.model.engine import Arrivals
from cuzk_sim.model.fast import FastPaths
from cuzk_sim.plan.contract import Alloc, Copy, Free, Kernel, Lock, Plan, Unlock
from cuzk_sim.steps.kernel import ISSUE_S, LAUNCH_S

FAST = [FastPaths(), FastPaths.none()]
LEGACY = {"gpu_stream": "legacy_default"}
MSM_THEN_RESULT = (Kernel("m", "msm_g1", 5), Copy("r", 1, "DtoH"))


def ends(result) -> list[float]:
    return sorted(round(s.end_s, 9) for s in result.spans if s.cat == "partition")


@pytest.mark.parametrize("fast", FAST, ids=["fast", "plain"])
def test_two_workers_issuing_at_once_fall_into_phase(fast):
    # both issue their MSM at 11: w0's runs 11-16, w1's 16-21; w0 reads its result
    # ISSUE_S later, when w1's MSM is already queued: its copy waits behind it (21-22),
    # w1's follows (22-23). Both come back at the same time: in phase.
    plan = Plan("p", MSM_THEN_RESULT, meta=LEGACY)
    _, r = run_plan(plan, workers=2, partitions=2, record=True, fast=fast)
    assert ends(r) == [22.0, 23.0]
    # on separate engines each result copy follows its own kernel: 16-17, and 21-22
    _, apart = run_plan(Plan("p", MSM_THEN_RESULT), workers=2, partitions=2, record=True)
    assert ends(apart) == [17.0, 22.0]


@pytest.mark.parametrize("fast", FAST, ids=["fast", "plain"])
def test_an_unlock_waits_for_what_the_others_queued_without_a_mutex_too(fast):
    # our prover's Device.unlock synchronizes the legacy stream, mutex or not: as above,
    # w0's result copy runs 21-22 and w1's 22-23, queued by w1 before w0 came back at 22;
    # w0's unlock waits for it, so both partitions end at 23 (without the unlock: 22, 23)
    steps = (Lock("gpu0", "none"), *MSM_THEN_RESULT, Unlock("gpu0", "none"))
    _, r = run_plan(Plan("p", steps, meta=LEGACY), workers=2, partitions=2, record=True, fast=fast)
    assert ends(r) == [23.0, 23.0]
    # a worker alone: its own result copy was the last thing queued, the unlock adds nothing
    _, one = run_plan(Plan("p", steps, meta=LEGACY), record=True, fast=fast)
    assert ends(one) == [17.0]
    # on separate engines the unlock waits for nobody: 17 and 22, as without it
    _, apart = run_plan(Plan("p", steps), workers=2, partitions=2, record=True, fast=fast)
    assert ends(apart) == [17.0, 22.0]


def _alloc_time(result, nbytes: int) -> float:
    """When the device's used bytes first reached `nbytes`."""
    return min(t for t, _, used in result.vram_samples if used >= nbytes)


@pytest.mark.parametrize("fast", FAST, ids=["fast", "plain"])
def test_the_host_goes_on_while_a_page_locked_upload_waits_in_the_queue(fast):
    def plan(pinned: bool) -> Plan:
        steps = (
            Copy("key", 4, "HtoD", pinned=pinned),  # 11-15 at 1 B/s
            Alloc("scratch", MIB),
            Kernel("k", "ntt", 2),  # behind the copy: 15-17
            Copy("r", 1, "DtoH"),  # 17-18
            Free("scratch"),
        )
        return Plan("p", steps, meta=LEGACY)

    _, pinned = run_plan(plan(True), record=True, fast=fast)
    assert _alloc_time(pinned, MIB) == pytest.approx(11 + LAUNCH_S)  # at once
    assert ends(pinned) == [18.0]
    _, pageable = run_plan(plan(False), record=True, fast=fast)
    assert _alloc_time(pageable, MIB) == pytest.approx(15.0)  # after the staged copy
    assert ends(pageable) == [18.0]


@pytest.mark.parametrize("fast", FAST, ids=["fast", "plain"])
def test_a_partition_ends_when_its_queued_work_does(fast):
    # one MSM with no result copy after it: the host is done at 11 + ISSUE_S, the
    # partition when the kernel is (16)
    plan = Plan("p", (Kernel("m", "msm_g1", 5),), meta=LEGACY)
    _, r = run_plan(plan, record=True, fast=fast)
    assert ends(r) == [16.0]
    assert ISSUE_S["msm_g1"] < 5


@pytest.mark.parametrize("fast", FAST, ids=["fast", "plain"])
def test_the_process_key_is_pinned_in_the_setup_phase_before_the_first_proof(fast):
    # the process's key (persistent page-locked, pin_fixed 2 s) is pinned before the
    # first proof, as gpu-run pins its key before its clock starts (issue 24): no worker
    # waits for it. Both workers reach their MSM at 11 (no pinning in the partition):
    # 11-16 and 16-21, then each result 1 s: ends 22 and 23 (with the pinning inside the
    # first partition they were 24 and 25). The 2 s are the run's setup, not its s/proof.
    steps = (
        Alloc("key", 4, memory="host_pinned", persistent=True),
        *MSM_THEN_RESULT,
    )
    profile = dataclasses.replace(toy_profile(), pin_rate=1e12, pin_fixed=2.0)
    _, r = run_plan(
        Plan("p", steps, meta=LEGACY),
        workers=2,
        partitions=2,
        record=True,
        fast=fast,
        profile=profile,
    )
    assert ends(r) == pytest.approx([22.0, 23.0])
    assert r.setup_s == pytest.approx(2.0 + 4 / 1e12)
    assert r.to_dict()["setup_s"] == pytest.approx(2.0 + 4 / 1e12)


@pytest.mark.parametrize("fast", FAST, ids=["fast", "plain"])
def test_after_a_restart_the_new_process_pins_the_key_in_the_run_and_a_second_worker_waits(
    fast,
):
    # proof 1 at 0 (partitions from 11, key pinned in setup: ends 22 and 23, as above);
    # the daemon restarts at 25 (its pinned memory gone); proof 2 at 30, partitions from
    # 41. The new process pins the key inside the run: w0 pins it 41-43 (pin_fixed 2 s),
    # w1 finds it live at 41 but can use it only at 43; both issue their MSM at 43: 43-48
    # and 48-53, results in phase: ends 54 and 55 -- each 2 s after the same run with an
    # instant pin (52 and 53). Had w1 not waited, its MSM would have run 41-46.
    steps = (Alloc("key", 4, memory="host_pinned", persistent=True), *MSM_THEN_RESULT)
    arrivals = (Arrivals("toy", 1), Arrivals("toy", 1, start_s=30.0))
    got = {}
    for fixed in (2.0, 0.0):
        profile = dataclasses.replace(toy_profile(), pin_rate=1e12, pin_fixed=fixed)
        _, got[fixed] = run_plan(
            Plan("p", steps, meta=LEGACY),
            workers=2,
            partitions=2,
            record=True,
            fast=fast,
            profile=profile,
            arrivals=arrivals,
            restarts_s=(25.0,),
        )
    assert ends(got[2.0]) == pytest.approx([22.0, 23.0, 54.0, 55.0])
    assert ends(got[0.0]) == pytest.approx([22.0, 23.0, 52.0, 53.0])
    assert got[2.0].setup_s == pytest.approx(2.0)  # the first process's setup only


def test_a_key_the_host_budget_cannot_hold_is_not_pinned_in_setup_its_step_fails():
    # 4 bytes of key against a 3-byte host budget: the setup phase leaves it (0 s of
    # setup) and the partition's own alloc fails on the host, as before the setup phase
    steps = (Alloc("key", 4, memory="host_pinned", persistent=True), *MSM_THEN_RESULT)
    profile = dataclasses.replace(toy_profile(), pin_rate=1e12, pin_fixed=2.0)
    _, r = run_plan(Plan("p", steps, meta=LEGACY), profile=profile, host_ram_budget=3)
    assert r.setup_s == 0.0
    assert r.oom and r.fatal_ooms[0].where == "host" and r.fatal_ooms[0].buffer == "key"
