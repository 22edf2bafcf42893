"""Properties over random plans and configurations (hypothesis)."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sim_toys import run_plan

from cuzk_sim.model.allocator import CUDA_GRANULE, CUDA_MALLOC_HEADROOM
from cuzk_sim.model.fast import FastPaths
from cuzk_sim.plan.contract import Alloc, Free, Kernel, Lock, Plan, Unlock

MIB = 2**20


@st.composite
def scoped_plans(draw, allocators=("sync", "async", "caching")):
    """A plan whose buffers are each allocated once and freed later, kernels in between,
    optionally inside the device mutex; one allocator for the whole plan."""
    allocator = draw(st.sampled_from(allocators))
    k = draw(st.integers(1, 5))
    sizes = draw(st.lists(st.integers(1, 40 * MIB), min_size=k, max_size=k))
    tokens = draw(st.permutations([i for i in range(k) for _ in (0, 1)]))
    steps, seen = [], set()
    for i in tokens:
        if i in seen:
            steps.append(Free(f"b{i}"))
        else:
            seen.add(i)
            steps.append(Alloc(f"b{i}", sizes[i], allocator=allocator))
        if draw(st.booleans()):
            steps.append(Kernel("k", "ntt", draw(st.integers(0, 3))))
    if draw(st.booleans()):
        steps = [Lock("gpu"), *steps, Unlock("gpu")]
    return Plan("random", tuple(steps))


def oracle_peak(plan: Plan) -> int:
    """Max over time of live bytes, by plain integer arithmetic (2 MiB granules)."""
    live, peak, sizes = 0, 0, {}
    for s in plan.steps:
        if isinstance(s, Alloc):
            sizes[s.buffer] = -(-s.bytes // CUDA_GRANULE) * CUDA_GRANULE
            live += sizes[s.buffer]
            peak = max(peak, live)
        elif isinstance(s, Free):
            live -= sizes.pop(s.buffer)
    return peak


configs = st.fixed_dictionaries(
    {
        "workers": st.integers(1, 3),
        "gpus": st.integers(1, 2),
        "proofs": st.integers(1, 4),
        "partitions": st.integers(1, 3),
        "vram": st.integers(20, 120).map(lambda m: m * MIB),
        "context": st.sampled_from([0, 4 * MIB]),
        "routing": st.sampled_from(["assigned", "device0"]),
        "pool_release_threshold": st.sampled_from([0, 2**64 - 1]),
    }
)


@given(scoped_plans(), configs, st.booleans())
def test_ledger_balances_and_peaks_bound_every_live_sum(plan, cfg, record):
    sim, result = run_plan(plan, record=record, **cfg)
    for dev in sim.devices:
        mem = dev.memory
        mem.settle(float("inf"))
        mem.check_ledger()  # the O(1) counter equals the sum of its parts, none negative
        assert not mem.live  # well-formed plans free everything (panics unwind)
        assert mem.used <= mem.total
        assert result.peak_vram_bytes[dev.index] >= mem.context
        assert result.peak_vram_bytes[dev.index] <= mem.total
    for _t, d, used in result.vram_samples:
        assert 0 <= used <= result.peak_vram_bytes[d]
    for e in result.oom_events:  # the ledger in every post-mortem fits the device
        assert sum(sum(b.values()) for b in e.ledger.values()) <= result.vram_total_bytes[e.device]
        granule = CUDA_GRANULE  # a caching pool's new segment is a cudaMalloc too
        charged = -(-e.requested_bytes // granule) * granule + CUDA_MALLOC_HEADROOM
        assert charged > e.free_bytes or e.reason == "skip_vram" or e.allocator == "async"
    assert (
        result.partitions_completed + result.partitions_failed <= cfg["proofs"] * cfg["partitions"]
    )


@given(scoped_plans(), configs, st.integers(0, 2**32))
def test_same_seed_same_json(plan, cfg, seed):
    _, a = run_plan(plan, seed=seed, **cfg)
    _, b = run_plan(plan, seed=seed, **cfg)
    assert json.dumps(a.to_dict()) == json.dumps(b.to_dict())


@given(scoped_plans(allocators=("sync", "async")), st.integers(0, 8), st.integers(0, 3 * MIB))
def test_a_plan_that_fits_one_worker_never_ooms_with_one_worker(plan, proofs, slack):
    context = 4 * MIB
    # a cudaMalloc needs one granule free beyond its size: at the peak, that granule
    vram = oracle_peak(plan) + context + CUDA_MALLOC_HEADROOM + slack
    _, result = run_plan(plan, workers=1, proofs=proofs, partitions=2, vram=vram, context=context)
    assert not result.oom_events
    assert result.proofs_completed == proofs
    assert result.peak_vram_bytes[0] == oracle_peak(plan) + context or proofs == 0


@given(scoped_plans(allocators=("sync",)), st.integers(1, 4 * MIB))
def test_one_byte_short_of_the_peak_ooms(plan, short):
    vram = oracle_peak(plan) - short
    _, result = run_plan(plan, workers=1, proofs=1, vram=vram)
    assert result.oom


# the speed-ups that are exact to the bit (merging and arithmetic CPU sum differently)
EXACT_OFF = FastPaths(
    merge_kernels=True,
    inline_steps=False,
    section_stamping=False,
    section_replay=False,
    helper_without_process=False,
    arithmetic_cpu=True,
)


@given(scoped_plans(), configs, st.booleans())
def test_fast_layer_equals_the_plain_interpreter(plan, cfg, record):
    """Critical sections without wake-ups, replayed once learnt, inlined steps change
    nothing observable: the plain interpreter (every speed-up off) is the reference."""
    proofs = cfg.pop("proofs") + 2  # enough repeats for sections to be learnt and replayed
    _, fast = run_plan(plan, proofs=proofs, record=record, **cfg)
    _, plain = run_plan(plan, proofs=proofs, record=record, fast=FastPaths.none(), **cfg)
    assert_same_run(fast, plain)
    _, exact = run_plan(plan, proofs=proofs, record=record, fast=EXACT_OFF, **cfg)
    assert json.dumps(fast.to_dict()) == json.dumps(exact.to_dict())


@given(scoped_plans(), configs)
def test_recording_a_trace_changes_no_number(plan, cfg):
    _, plain = run_plan(plan, **cfg)
    _, traced = run_plan(plan, record=True, **cfg)
    assert json.dumps(plain.to_dict()) == json.dumps(traced.to_dict())


def assert_same_run(fast, slow, where=""):
    """Equal up to float rounding (merged kernels sum their times in another order)."""
    assert [p for p, _, _ in fast.proof_done_times] == [p for p, _, _ in slow.proof_done_times]
    assert [t for _, _, t in fast.proof_done_times] == pytest.approx(
        [t for _, _, t in slow.proof_done_times], rel=1e-12, abs=1e-9
    ), where
    assert fast.peak_vram_bytes == slow.peak_vram_bytes, where
    assert [(e.worker, e.buffer) for e in fast.oom_events] == [
        (e.worker, e.buffer) for e in slow.oom_events
    ], where
    assert [e.time_s for e in fast.oom_events] == pytest.approx(
        [e.time_s for e in slow.oom_events], rel=1e-12, abs=1e-9
    ), where
