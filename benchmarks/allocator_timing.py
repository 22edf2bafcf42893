"""How long each allocator's calls take on this GPU (host wall time, perf_counter).

The model prices kernels and copies; this measures what it does not (yet): the time of
cudaMalloc / cudaFree by size (cudaFree also waits for the device: measured with a kernel
still running), a hit in CuPy's caching pool, and the cudaMallocAsync pool's malloc/free
with release threshold 0 (what a synchronisation gives back must be mapped again by the
next malloc) and with UINT64_MAX. Median of REPEATS after one warm-up call per case.
Usage: python3 benchmarks/allocator_timing.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

MIB = 1 << 20
SIZES_MIB = [2, 8, 32, 128, 512]
REPEATS = 7


def size_row(cp, rt, mib: int, median_ms, keep_busy) -> dict:
    """The timings of one buffer size (ms)."""
    n = mib * MIB
    ptr: list[int] = []
    row = {"mib": mib}
    row["cudaMalloc"] = median_ms(lambda: ptr.append(rt.malloc(n)))
    for p in ptr:
        rt.free(p)
    ptr.clear()

    def one() -> None:
        ptr.append(rt.malloc(n))

    row["cudaFree_idle"] = median_ms(lambda: rt.free(ptr.pop()), setup=one)

    def one_busy() -> None:
        one()
        cp.cuda.Device().synchronize()
        keep_busy()

    t_busy = median_ms(lambda: cp.cuda.Device().synchronize(), setup=keep_busy)
    row["device_busy_ms"] = t_busy
    row["cudaFree_busy"] = median_ms(lambda: rt.free(ptr.pop()), setup=one_busy)
    cp.cuda.Device().synchronize()

    pool = cp.get_default_memory_pool()
    pool.free_all_blocks()
    held: list = []
    held.append(pool.malloc(n))
    held.clear()  # one cached block of this size
    row["cupy_pool_hit"] = median_ms(lambda: held.append(pool.malloc(n)), setup=held.clear)
    held.clear()
    pool.free_all_blocks()
    row["cupy_pool_miss"] = median_ms(
        lambda: held.append(pool.malloc(n)),
        setup=lambda: (held.clear(), pool.free_all_blocks()),
    )
    held.clear()
    pool.free_all_blocks()

    mp = rt.deviceGetDefaultMemPool(0)
    for label, threshold in (("async_threshold0", 0), ("async_thresholdmax", 2**64 - 1)):
        rt.memPoolSetAttribute(mp, rt.cudaMemPoolAttrReleaseThreshold, threshold)
        apool = cp.cuda.MemoryAsyncPool()

        def cycle(apool=apool) -> None:  # malloc, free, synchronise: one buffer's life
            m = apool.malloc(n)
            del m
            cp.cuda.Device().synchronize()

        cycle()
        row[label + "_cycle"] = median_ms(cycle)
    rt.memPoolSetAttribute(mp, rt.cudaMemPoolAttrReleaseThreshold, 0)
    rt.memPoolTrimTo(mp, 0)
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    import cupy as cp

    rt = cp.cuda.runtime
    out: dict = {"cupy": cp.__version__, "runtime": rt.runtimeGetVersion(), "unit": "ms"}
    cp.cuda.Device().synchronize()

    def median_ms(fn, setup=None) -> float:
        times = []
        for i in range(REPEATS + 1):
            if setup is not None:
                setup()
            t = time.perf_counter()
            fn()
            dt = time.perf_counter() - t
            if i:
                times.append(1000 * dt)
        return round(statistics.median(times), 4)

    busy = cp.zeros(1 << 24, dtype=cp.float64)

    def keep_busy() -> None:  # ~a few ms of device work queued, not waited for
        for _ in range(20):
            cp.sin(busy, out=busy)

    rows = []
    for mib in SIZES_MIB:
        row = size_row(cp, rt, mib, median_ms, keep_busy)
        rows.append(row)
        print(json.dumps(row), flush=True)
    out["rows"] = rows
    sync_ms = median_ms(lambda: cp.cuda.Device().synchronize())
    out["idle_synchronize_ms"] = sync_ms
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    print(json.dumps({"idle_synchronize_ms": sync_ms}))


if __name__ == "__main__":
    main()
