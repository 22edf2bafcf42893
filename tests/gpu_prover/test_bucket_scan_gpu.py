"""gpu/bucket_scan on the GPU: the bucket starts equal numpy's running sum, and the scan
takes no device memory from CuPy's pool (its scratch is carved from the spare array),
so a partition allocates only its plan's buffers (issue 28: the H200 capture of
2026-12-03 found CUB's scan scratch, 1536 B, in CuPy's pool)."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("nb", [1, 7, 155_649, 1 << 20])
def test_starts_are_the_running_sum_and_the_pool_is_not_touched(nb):
    import cupy

    rng = np.random.default_rng(nb)
    host = rng.integers(0, 1000, nb + 1, dtype=np.uint32)
    counts = cupy.asarray(host)
    starts = cupy.full(nb + 1, 7, dtype=cupy.uint32)
    spare = cupy.zeros(max(4096, nb), dtype=cupy.uint32)  # as an MSM's buckets buffer
    pool = cupy.get_default_memory_pool()
    cupy.cuda.Device().synchronize()
    pool.free_all_blocks()
    before = pool.total_bytes()
    from cuzk_sim.gpu.bucket_scan import bucket_starts

    bucket_starts(counts, starts, nb, spare)
    cupy.cuda.Device().synchronize()
    assert pool.total_bytes() == before
    want = np.concatenate([[0], np.cumsum(host[:nb], dtype=np.uint64)]).astype(np.uint32)
    assert np.array_equal(starts.get(), want)
