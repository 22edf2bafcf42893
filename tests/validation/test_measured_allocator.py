"""The allocator facts measured on the H200 (docs/validation.md), as the model holds them:
a CuPy pool segment is one cudaMalloc and costs its size rounded up to 2 MiB."""

from __future__ import annotations

from cuzk_sim.model.allocator import DeviceMemory

MIB = 1 << 20


def test_caching_segment_costs_whole_2_mib_granules():
    mem = DeviceMemory(0, total=100 * MIB)
    buf = mem.try_alloc("w", "x", 3 * MIB, "caching")  # by hand: 3 MiB -> 4 MiB of VRAM
    assert buf is not None and buf.bytes == 3 * MIB  # the chunk is what CuPy asked for
    assert mem.free == 96 * MIB and mem.caching.slack == 1 * MIB
    mem.check_ledger()
    mem.release("w", "x")
    assert mem.free == 96 * MIB  # cached by the pool, slack included
    mem.caching._release_free_segments()
    assert mem.free == 100 * MIB and mem.caching.slack == 0
    mem.check_ledger()


def test_a_segment_that_fits_only_without_its_granule_fails():
    # 12 MiB free, and a cudaMalloc needs one 2 MiB granule free beyond its rounded size:
    # 9 MiB + 512 B rounds to 10 MiB (10 + 2 fits); 10 MiB + 1 B -> 12 MiB (12 + 2 does not)
    mem = DeviceMemory(0, total=12 * MIB)
    assert mem.try_alloc("w", "a", 10 * MIB + 1, "caching") is None
    assert mem.try_alloc("w", "b", 9 * MIB + 512, "caching") is not None
    assert mem.free == 2 * MIB


def test_h200_profile_context_is_the_measured_one():
    from cuzk_sim.profiles.profile import load_profile

    # the mean of the deb8e14 calibration logs' CUZK_SIM_CONTEXT lines (seven at 1446.8 MiB,
    # the 2^24 one at 1470.8 MiB; docs/validation/h200-2026-12-01-deb8e14/calib/)
    assert load_profile("h200").context_overhead == (7 * 1_517_092_864 + 1_542_258_688) // 8
