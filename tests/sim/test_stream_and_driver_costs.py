"""Two things the real pipeline showed the model lacked (docs/validation.md, issue 9):
our prover puts every worker's GPU work on CUDA's legacy default stream (one in-order
queue per device), and the `sync` allocator pays a cudaMalloc / cudaFree per buffer, the
free after the device is idle. Expected times are worked out by hand on the toy profile
(every kernel `size` seconds, copies 1 B/s, synthesis of the toy shape ends at 11 s)."""

import dataclasses

import pytest
from sim_toys import MIB, run_plan, toy_profile

from cuzk_sim.model.fast import FastPaths
from cuzk_sim.plan.contract import Alloc, Copy, Free, Kernel, Lock, Plan, Unlock
from cuzk_sim.profiles.profile import Cost

FAST = [FastPaths(), FastPaths.none()]
COPY_THEN_KERNEL = (Copy("up", 3, "HtoD"), Kernel("k", "ntt", 5))


def ends(result) -> list[float]:
    return sorted(s.end_s for s in result.spans if s.cat == "partition")


@pytest.mark.parametrize("fast", FAST, ids=["fast", "plain"])
def test_copies_overlap_other_workers_kernels_on_separate_streams(fast):
    # both workers start at 11: w0 copies 11-14 and computes 14-19; w1's copy waits for
    # the copy engine (14-17), its kernel for the compute engine (19-24)
    _, r = run_plan(Plan("p", COPY_THEN_KERNEL), workers=2, partitions=2, record=True, fast=fast)
    assert ends(r) == [19.0, 24.0]


@pytest.mark.parametrize("fast", FAST, ids=["fast", "plain"])
def test_one_legacy_stream_serialises_every_workers_copies_and_kernels(fast):
    plan = Plan("p", COPY_THEN_KERNEL, meta={"gpu_stream": "legacy_default"})
    _, r = run_plan(plan, workers=2, partitions=2, record=True, fast=fast)
    # 3 + 5 + 3 + 5 seconds of work in one queue from 11, in the order it was issued: both
    # copies at 11 (pageable: each host stages its copy, 11-14), w0's up 11-14, w1's 14-17;
    # the kernels, issued at 14, queue behind both: 17-22, 22-27. A partition ends when its
    # queued work does.
    assert ends(r) == [22.0, 27.0]


@pytest.mark.parametrize("fast", FAST, ids=["fast", "plain"])
def test_a_stream_named_after_the_legacy_one_overlaps_it_and_the_rest_queue(fast):
    """gpu_stream = "legacy_default+key_upload": copies on `key_upload` run on the copy
    engine beside the queue; every other copy and kernel of every worker stays in it."""
    from cuzk_sim.plan.contract import Sync

    steps = (
        Copy("up", 3, "HtoD"),  # the legacy queue
        Copy("key", 2, "HtoD", stream="key_upload"),  # a stream of its own
        Kernel("k", "ntt", 5),
        Sync("key_upload"),
    )
    plan = Plan("p", steps, meta={"gpu_stream": "legacy_default+key_upload"})
    _, r = run_plan(plan, workers=2, partitions=2, record=True, fast=fast)
    # one HtoD copy engine serves the queue and the streams beside it. w0: its up 11-14
    # (its host stages it until 14), its key 14-16 on the engine (pageable: the host until
    # 16); w1's up, behind w0's in the queue, finds the engine booked until 16: 16-19
    # (the engine is a busy-until clock: w0, running ahead beside the queue, booked it
    # first); w0's kernel, issued at 16, behind w1's up: 19-24; w1's key after the up it
    # queued: 19-21, its host until 21, its kernel 24-29
    assert ends(r) == [24.0, 29.0]
    ups = sorted((s.start_s, s.end_s) for s in r.spans if s.name == "up")
    assert ups == [(11.0, 14.0), (16.0, 19.0)]
    keys = sorted((s.start_s, s.end_s) for s in r.spans if s.name == "key")
    assert keys == [(14.0, 16.0), (19.0, 21.0)]
    # the key copy in the legacy queue too: ups 11-14, 14-17; w0 at 14 queues its key
    # 17-19 and its kernel 19-24; w1 at 14 its key 24-26 and its kernel 26-31
    legacy = Plan("p", steps, meta={"gpu_stream": "legacy_default"})
    _, q = run_plan(legacy, workers=2, partitions=2, record=True, fast=fast)
    assert ends(q) == [24.0, 31.0]
    # no shared queue at all (copies overlap every kernel; a worker's time steps run
    # ahead until it meets the others): w0's up 11-14, its key 14-16 (pageable: its host
    # stages it until 16), its kernel 16-21; w1's up 16-19 on the copy engine after w0's
    # copies, its key 19-21, its kernel 21-26
    _, free = run_plan(Plan("p", steps), workers=2, partitions=2, record=True, fast=fast)
    assert ends(free) == [21.0, 26.0]


def priced(malloc: float, free: float):
    return dataclasses.replace(
        toy_profile(),
        sync_malloc=Cost(malloc, 0.0, "linear"),
        sync_free=Cost(free, 0.0, "linear"),
    )


@pytest.mark.parametrize("fast", FAST, ids=["fast", "plain"])
def test_sync_buffers_pay_cudamalloc_and_cudafree_after_the_device_is_idle(fast):
    steps = (Alloc("x", MIB, "sync"), Kernel("k", "ntt", 1), Free("x"))
    _, free = run_plan(Plan("p", steps), workers=2, partitions=2, record=True, fast=fast)
    assert ends(free) == [12.0, 13.0]  # no driver cost: kernels 11-12 and 12-13
    _, r = run_plan(
        Plan("p", steps), workers=2, partitions=2, record=True, fast=fast,
        profile=priced(0.5, 0.25),
    )  # fmt: skip
    # cudaMalloc 11-11.5 each; kernels 11.5-12.5 and 12.5-13.5; w0's cudaFree at 12.5
    # waits for w1's kernel (queued at 11.5) to end at 13.5: both partitions end at 13.75
    assert ends(r) == [13.75, 13.75]


@pytest.mark.parametrize("fast", FAST, ids=["fast", "plain"])
def test_driver_costs_apply_to_sync_buffers_only(fast):
    # a caching-pool buffer and a persistent sync buffer cost nothing; one worker, under a
    # lock: 11 + 0.5 (malloc of y) + 1 (kernel) + 0.25 (free of y) = 12.75
    steps = (
        Lock("gpu"),
        Alloc("p", MIB, "sync", persistent=True),
        Alloc("c", MIB, "caching"),
        Alloc("y", MIB, "sync"),
        Kernel("k", "ntt", 1),
        Free("y"),
        Free("c"),
        Unlock("gpu"),
    )
    _, r = run_plan(Plan("p", steps), record=True, fast=fast, profile=priced(0.5, 0.25))
    assert ends(r) == [12.75]


def test_our_provers_plan_says_it_uses_the_legacy_default_stream():
    from cuzk_sim.scenario import load_scenario

    scn = load_scenario("scenarios/validation/base.toml")
    assert {p.meta.get("gpu_stream") for p in scn.plans.values()} == {"legacy_default"}


def test_the_h200_profile_prices_the_sync_allocator_from_its_measurement():
    from cuzk_sim.profiles.profile import load_profile

    p = load_profile("h200")
    # benchmarks/allocator_timing.py on the H200: cudaMalloc 0.041 ms (2 MiB) .. 0.0695 ms
    # (512 MiB), cudaFree 0.030 .. 0.180 ms
    assert p.driver_seconds("alloc", 512 * MIB) == pytest.approx(0.0695e-3)
    assert p.driver_seconds("free", 512 * MIB) == pytest.approx(0.1798e-3)
    assert p.driver_seconds("free", 2 * MIB) == pytest.approx(0.0306e-3, abs=1e-6)


@pytest.mark.parametrize("fast", FAST, ids=["fast", "plain"])
def test_a_copy_beside_the_queue_waits_for_it_and_a_pageable_one_holds_the_host(fast):
    """Our prover issues a copy on its own stream after an event on the in-order queue,
    and the driver stages a pageable one while the host waits (the production grid's
    streamed 2^27 runs: one partition took the sum of its steps, docs/validation.md).
    One worker, two partitions from 11: k1 (5 s) queued 11-16; the copy (2 s) waits
    for it, 16-18; k2 (3 s): pageable, the host issues it at 18: 18-21, the partition
    ends at 21 and the next one 21-31. Page-locked, k2 is issued at once and queued
    behind k1, 16-19; the sync waits for the copy (18): 19 and 27. (The copy beside k1,
    11-13, as the model had it, would give 19 and 27 for both.)"""
    from cuzk_sim.plan.contract import Sync

    def plan(pinned: bool) -> Plan:
        steps = (
            Kernel("k1", "ntt", 5),
            Copy("c", 2, "HtoD", pinned=pinned, stream="key_upload"),
            Kernel("k2", "ntt", 3),
            Sync("key_upload"),
        )
        return Plan("p", steps, meta={"gpu_stream": "legacy_default+key_upload"})

    _, r = run_plan(plan(False), partitions=2, record=True, fast=fast)
    assert ends(r) == pytest.approx([21.0, 31.0])
    copies = [(s.start_s, s.end_s) for s in r.spans if s.name == "c"]
    assert copies == pytest.approx([(16.0, 18.0), (26.0, 28.0)])
    _, p = run_plan(plan(True), partitions=2, record=True, fast=fast)
    assert ends(p) == pytest.approx([19.0, 27.0])


@pytest.mark.parametrize("fast", FAST, ids=["fast", "plain"])
def test_a_queued_copy_waits_for_a_key_upload_on_the_same_copy_engine(fast):
    """Issue 24 (grid-v2's timelines): a pageable upload issued on the in-order queue while
    a key upload runs beside it on `key_upload` starts when that upload ends -- the two
    share the HtoD copy engine -- and a DtoH copy does not wait for it."""
    from cuzk_sim.plan.contract import Sync

    steps = (
        Copy("key", 2, "HtoD", pinned=True, stream="key_upload"),
        Copy("up", 3, "HtoD"),
        Kernel("k", "ntt", 5),
        Copy("down", 1, "DtoH"),
        Sync("key_upload"),
    )
    plan = Plan("p", steps, meta={"gpu_stream": "legacy_default+key_upload"})
    _, r = run_plan(plan, workers=1, partitions=1, record=True, fast=fast)
    # from 11 (the toy shape's synthesis): key 11-13 on the engine (pinned: the host goes
    # on at once); up issued at 11 waits for the engine: 13-16 (not 11-14); the kernel
    # behind it 16-21; down 21-22 in the queue (DtoH: its own engine, free)
    spans = {s.name: (s.start_s, s.end_s) for s in r.spans if s.cat in ("copy", "kernel")}
    assert spans["key"] == (11.0, 13.0)
    assert spans["up"] == (13.0, 16.0)
    assert spans["k"] == (16.0, 21.0)
    assert spans["down"] == (21.0, 22.0)


@pytest.mark.parametrize("fast", FAST, ids=["fast", "plain"])
def test_a_queued_pinned_copy_waits_for_a_key_upload_as_a_pageable_one_does(fast):
    """Grid-v3 (issue 24): the streamed 2^26 plan's pinned upload_scalars_b, queued while
    the 59.9 ms key chunk upload_msm_b_g2_points ran beside the queue, ended 10.0 ms (its
    own time at the full pinned rate) after that chunk, which ran at the full rate too:
    the engine serves them first come first served, whatever the host memory."""
    from cuzk_sim.plan.contract import Sync

    steps = (
        Copy("key", 6, "HtoD", pinned=True, stream="key_upload"),
        Copy("up", 1, "HtoD", pinned=True),
        Kernel("k", "ntt", 5),
        Sync("key_upload"),
    )
    plan = Plan("p", steps, meta={"gpu_stream": "legacy_default+key_upload"})
    _, r = run_plan(plan, workers=1, partitions=1, record=True, fast=fast)
    # from 11: key 11-17 (pinned: the host goes on at once); up, reached by the queue at
    # 11, waits for the engine: 17-18 (not 11-12); the kernel, issued 20 us after up
    # (a page-locked copy returns at once), queued behind it: 18-23
    spans = {s.name: (s.start_s, s.end_s) for s in r.spans if s.cat in ("copy", "kernel")}
    assert spans["key"] == pytest.approx((11.0, 17.0))
    assert spans["up"] == pytest.approx((17.0, 18.0))
    assert spans["k"] == pytest.approx((18.0, 23.0))
    assert ends(r) == pytest.approx([23.0])
