"""gpu/bucket_scan.carve_from without a GPU: a stand-in for CuPy's allocator API records
what the carver hands out -- consecutive pieces of the spare array, each at a 256-byte
boundary, and the allocator in force before it past the spare's end."""

from __future__ import annotations

import sys
import types

import pytest


class _Spare:
    """Stand-in for a CuPy array: its device address and size."""

    def __init__(self, ptr: int, nbytes: int) -> None:
        self.data = types.SimpleNamespace(ptr=ptr)
        self.nbytes = nbytes


@pytest.fixture
def fake_cupy(monkeypatch):
    pool_calls: list[int] = []
    cuda = types.SimpleNamespace(
        get_allocator=lambda: lambda n: pool_calls.append(n) or ("pool", n),
        UnownedMemory=lambda ptr, size, owner: ("unowned", ptr, size, owner),
        MemoryPointer=lambda mem, offset: ("pointer", mem, offset),
    )
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(cuda=cuda))
    return pool_calls


def test_pieces_are_consecutive_aligned_and_inside_the_spare(fake_cupy):
    from cuzk_sim.gpu.bucket_scan import carve_from

    spare = _Spare(0x10000, 4096)
    alloc = carve_from(spare)
    # 767 B (CUB's scratch of a one-tile scan: 33 x 8 B, aligned), then 1000 B at the next
    # 256-byte boundary after 767 (768), then 2000 B at the next after 1768 (1792):
    # 3792 <= 4096
    assert alloc(767) == ("pointer", ("unowned", 0x10000, 767, spare), 0)
    assert alloc(1000) == ("pointer", ("unowned", 0x10000 + 768, 1000, spare), 0)
    assert alloc(2000) == ("pointer", ("unowned", 0x10000 + 1792, 2000, spare), 0)
    assert fake_cupy == []


def test_a_piece_past_the_spare_comes_from_the_allocator_before(fake_cupy):
    from cuzk_sim.gpu.bucket_scan import carve_from

    spare = _Spare(0x20000, 1024)
    alloc = carve_from(spare)
    assert alloc(1025) == ("pool", 1025)  # larger than the whole spare
    assert alloc(600)[0] == "pointer"  # the spare is still untouched: [0, 600)
    assert alloc(600) == ("pool", 600)  # 768 + 600 > 1024
    assert alloc(256) == ("pointer", ("unowned", 0x20000 + 768, 256, spare), 0)  # exactly fits
    assert fake_cupy == [1025, 600]


def test_the_spare_is_the_larger_unwritten_buffer():
    from cuzk_sim.gpu.bucket_scan import spare_of

    small, large = _Spare(1, 100), _Spare(2, 5000)
    bufs = {
        "buckets": types.SimpleNamespace(array=small),
        "order": types.SimpleNamespace(array=large),
    }
    assert spare_of(bufs) is large
    bufs = {
        "buckets": types.SimpleNamespace(array=large),
        "order": types.SimpleNamespace(array=small),
    }
    assert spare_of(bufs) is large
