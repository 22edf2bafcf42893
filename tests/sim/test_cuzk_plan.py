"""The documented cuzk plan: buffer sizes from the source formulas, recomputed by hand,
and the variants as flags (where steps move, not what they are)."""

import math

import pytest

from cuzk_sim.plan.builders.circuits import SHAPES
from cuzk_sim.plan.builders.cuzk import CuzkVariant, build_partition_plan, msm_window_bits
from cuzk_sim.plan.contract import Plan
from cuzk_sim.profiles.profile import load_profile

GIB = 2**30
POREP = SHAPES["porep"]


def sizes(plan: Plan) -> dict[str, int]:
    return dict(plan.buffers())


def ops(plan: Plan) -> list[str]:
    return [getattr(s, "buffer", None) or getattr(s, "mutex", None) or s.op for s in plan.steps]


def test_ntt_buffers_at_domain_2_27_on_a_16_gib_card():
    plan = build_partition_plan(POREP, CuzkVariant(), 16 * GIB)
    got = sizes(plan)
    assert got["d_a"] == 2**27 * 32 == 4 * GIB
    assert got["d_b"] == 8 * GIB  # lot_of_memory: 3 * 4 GiB < 16 GiB - 1 GiB -> b and c apart


def test_d_b_shrinks_when_three_vectors_do_not_fit():
    plan = build_partition_plan(POREP, CuzkVariant(), 12 * GIB)  # 12 GiB !< 11 GiB
    assert sizes(plan)["d_b"] == 4 * GIB


def test_msm_window_for_2_27_points():
    # sppark: min(lg2(1.5 * 2^27) - 8, 18) = min(27 - 8, 18) = 18
    assert msm_window_bits(2**27) == 18
    assert msm_window_bits(100) == 10


def test_batch_add_temp_of_the_l_msm():
    # batch = ceil(ceil(n / 1024) / 8) * 1024; d_temp = 2 * batch * 96 + bit vectors
    n = POREP.l_points
    batch = math.ceil(math.ceil(n / 1024) / 8) * 1024
    words = math.ceil(math.ceil(n / 64) / 32) * 32
    assert sizes(build_partition_plan(POREP, CuzkVariant(), 16 * GIB))["batch_add_l"] == (
        2 * batch * 96 + words * 8
    )


def test_prestage_outside_the_mutex_allocates_before_locking():
    plan = build_partition_plan(POREP, CuzkVariant(prestage="outside_mutex"), 16 * GIB)
    order = ops(plan)
    assert order.index("d_a_stage") < order.index("gpu")
    assert sizes(plan)["d_a_stage"] + sizes(plan)["d_bc"] == 6 * GIB  # "~6 GiB" per worker


def test_prestage_under_the_mutex_allocates_after_locking():
    order = ops(build_partition_plan(POREP, CuzkVariant(prestage="under_mutex"), 16 * GIB))
    assert order.index("gpu") < order.index("d_a_stage")


def test_fix_frees_staged_buffers_before_unlock():
    fixed = build_partition_plan(
        POREP, CuzkVariant(prestage="under_mutex", free_d_bc_after_ntt=True), 16 * GIB
    )
    steps = fixed.steps
    unlock = max(i for i, s in enumerate(steps) if s.op == "unlock")
    frees = [i for i, s in enumerate(steps) if s.op == "free" and s.buffer == "d_bc"]
    first_batch_add = min(
        i for i, s in enumerate(steps) if getattr(s, "buffer", "") == "batch_add_l"
    )
    assert frees[0] < first_batch_add < unlock
    broken = build_partition_plan(POREP, CuzkVariant(prestage="under_mutex"), 16 * GIB)
    last = [i for i, s in enumerate(broken.steps) if s.op == "free" and s.buffer == "d_bc"][-1]
    assert last > max(i for i, s in enumerate(broken.steps) if s.op == "unlock")


def test_memory_aware_margin_covers_the_whole_prestage():
    plan = build_partition_plan(
        POREP, CuzkVariant(prestage="under_mutex", memory_aware_margin_bytes=512 * 2**20), 16 * GIB
    )
    first = next(s for s in plan.steps if getattr(s, "buffer", "") == "d_a_stage")
    assert first.bytes + first.margin == 6 * GIB + 512 * 2**20


@pytest.mark.parametrize("kind", sorted(SHAPES))
@pytest.mark.parametrize("b_g2", ["cpu", "gpu"])
def test_every_plan_round_trips_and_is_priced(kind, b_g2):
    from cuzk_sim.model.compiled import compile_plan

    plan = build_partition_plan(SHAPES[kind], CuzkVariant(b_g2_msm=b_g2), 16 * GIB)
    assert Plan.from_json(plan.to_json()) == plan
    compiled = compile_plan(plan, load_profile("rtx5070ti"))
    assert all(t >= 0 for t in compiled.seconds)


def test_mutex_scope_flag_reaches_the_lock_steps():
    plan = build_partition_plan(POREP, CuzkVariant(mutex_scope="global"), 16 * GIB)
    assert {s.scope for s in plan.steps if s.op in ("lock", "unlock")} == {"global"}


@pytest.mark.parametrize("prestage", ["outside_mutex", "under_mutex"])
def test_prestage_pins_its_host_vectors_before_the_mutex_and_unpins_at_the_end(prestage):
    # cuzk-project.md, Phase 9: "Pin host pages with cudaHostRegister before the GPU mutex"
    plan = build_partition_plan(POREP, CuzkVariant(prestage=prestage), 16 * GIB)
    steps = plan.steps
    pins = [i for i, s in enumerate(steps) if getattr(s, "memory", "") == "host_pinned"]
    first_lock = min(i for i, s in enumerate(steps) if s.op == "lock")
    allocs = {s.buffer: s.bytes for s in steps if s.op == "alloc" and s.memory == "host_pinned"}
    assert allocs == {"pinned_a": 2**27 * 32, "pinned_bc": 2**27 * 16}  # = d_a_stage, d_bc
    assert all(steps[i].op == "alloc" for i in pins[:2]) and pins[1] < first_lock
    assert [steps[i].buffer for i in pins[2:]] == ["pinned_a", "pinned_bc"]
    assert pins[2] > max(i for i, s in enumerate(steps) if s.op == "unlock")
    off = build_partition_plan(POREP, CuzkVariant(), 16 * GIB)
    assert not any(getattr(s, "memory", "") == "host_pinned" for s in off.steps)


def test_cpu_threads_follow_the_source():
    plan = build_partition_plan(POREP, CuzkVariant(b_g2_threads=7), 16 * GIB)
    threads = {s.name: s.threads for s in plan.steps if s.op == "cpu"}
    assert threads == {"prep_msm": 1, "b_g2_msm": 7, "assemble": 1}
