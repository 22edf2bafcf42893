"""The bucket starts of the MSM's counting sort: a prefix sum of the bucket counts, by
CuPy's cumsum (CUB's scan), with the scan's scratch carved from a plan buffer that the
sort has not written yet instead of CuPy's memory pool.

Why: the plan is the contract -- every device byte a partition allocates is a plan
buffer. A CUPTI capture of the prover on the H200 (issue 28, 2026-12-03) found one
allocation the plan did not have: CUB's scan scratch (1536 B at 2^18), which CuPy takes
from its caching pool and keeps there until the pool is emptied. Served from the MSM's
own `buckets` or `order` buffer (whichever is larger; both are written only after the
scan, on the same stream), it allocates nothing. A scratch larger than that buffer (an
MSM of a few points, whose buffers are smaller than CUB's minimum of about 0.75 KiB)
comes from CuPy's allocator as before.
"""

from __future__ import annotations

from typing import Any

ALIGN = 256  # bytes: CUB aligns its temporaries so; so does every carved piece


def carve_from(spare: Any) -> Any:
    """A CuPy allocator (size -> MemoryPointer) that hands out consecutive aligned pieces
    of device array `spare` and, past its end, falls back to the allocator in force when
    it was made. The pieces are valid while `spare` is and must not outlive its next use."""
    import cupy

    fallback = cupy.cuda.get_allocator()
    base, size = spare.data.ptr, spare.nbytes
    used = 0

    def alloc(nbytes: int) -> Any:
        nonlocal used
        start = -(-used // ALIGN) * ALIGN
        if start + nbytes > size:
            return fallback(nbytes)
        used = start + nbytes
        return cupy.cuda.MemoryPointer(cupy.cuda.UnownedMemory(base + start, nbytes, spare), 0)

    return alloc


def bucket_starts(counts: Any, starts: Any, nb: int, spare: Any) -> None:
    """starts[0] = 0, starts[1 : nb + 1] = the running sum of counts[:nb], on the current
    stream; the scan's scratch from `spare` (a device array not yet written, module doc)."""
    import cupy

    starts[0] = 0
    with cupy.cuda.using_allocator(carve_from(spare)):
        cupy.cumsum(counts[:nb], out=starts[1 : nb + 1])


def spare_of(bufs: dict[str, Any]) -> Any:
    """The larger of the MSM's `buckets` and `order` arrays: unwritten when the scan runs."""
    return max((bufs["buckets"].array, bufs["order"].array), key=lambda a: a.nbytes)
