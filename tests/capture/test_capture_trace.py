"""The trace model: what CUDA allows of memory events, the JSON round trip, and the
allocator read from an API's name (names as Nsight Systems writes them: `_v3020`)."""

import pytest

from cuzk_sim.capture.trace import (
    KernelEvent,
    MemEvent,
    Process,
    RangeEvent,
    Trace,
    TraceError,
    allocator_of,
    is_pinned_api,
)


def mem(t, op, addr, n, **kw):
    return MemEvent(t_ns=t, pid=7, device=0, op=op, address=addr, bytes=n, **kw)


def test_free_of_unknown_address_is_named():
    tr = Trace("r.sqlite", "nsys", memory=(mem(10, "alloc", 0x100, 64), mem(20, "free", 0x200, 0)))
    with pytest.raises(TraceError, match=r"r.sqlite: .*20 ns.*free of address 0x200"):
        tr.check()


def test_negative_size_is_named():
    with pytest.raises(TraceError, match=r"bytes -5 out of range"):
        Trace("r", "nsys", memory=(mem(1, "alloc", 1, -5),)).check()


def test_live_address_allocated_twice_is_named():
    tr = Trace("r", "nsys", memory=(mem(1, "alloc", 0x10, 8), mem(2, "alloc", 0x10, 8)))
    with pytest.raises(TraceError, match=r"0x10 allocated again while live \(allocated at 1 ns\)"):
        tr.check()


def test_reuse_after_free_and_host_device_spaces_are_separate():
    # an address freed and handed out again is fine; a pinned host buffer at the same
    # numeric address as a device one is another space
    Trace(
        "r",
        "nsys",
        memory=(
            mem(1, "alloc", 0x10, 8),
            mem(2, "alloc", 0x10, 8, memory="host_pinned"),
            mem(3, "free", 0x10, 0),
            mem(4, "alloc", 0x10, 16),
        ),
    ).check()


def test_kernel_ending_before_start_refused():
    tr = Trace("r", "nsys", kernels=(KernelEvent(10, 5, 7, 0, "k"),))
    with pytest.raises(TraceError, match="kernel at 10 ns ends before it starts"):
        tr.check()


def test_json_round_trip():
    tr = Trace(
        "r",
        "cupti",
        processes=(Process(7, "prover", {0: 7}, {0: 500 << 20}),),
        memory=(mem(1, "alloc", 16, 64, api="cudaMallocAsync", allocator="async", stream=13),),
        kernels=(KernelEvent(5, 9, 7, 0, "ntt", 13, issued_ns=4),),
        ranges=(RangeEvent(0, None, 7, "partition", "mark"),),
        missing=("no syncs",),
    )
    assert Trace.from_dict(tr.to_dict()) == tr
    with pytest.raises(TraceError, match=r"kernels\[0\]"):
        Trace.from_dict({"kernels": [{"start_ns": 1, "nme": "k"}]})


@pytest.mark.parametrize(
    "api,want",
    [
        ("cudaMalloc_v3020", "sync"),
        ("cuMemAlloc_v2", "sync"),
        ("cudaMallocAsync_v11020", "async"),
        ("cudaMallocAsync_ptsz_v11020", "async"),
        ("cuMemAllocFromPoolAsync", "async"),
        ("cudaHostAlloc_v3020", None),
        ("", None),
    ],
)
def test_allocator_from_api(api, want):
    assert allocator_of(api) == want


def test_pinned_apis():
    assert is_pinned_api("cudaHostAlloc_v3020") and is_pinned_api("cuMemHostRegister_v2")
    assert not is_pinned_api("cudaMalloc_v3020")
