"""What each allocator really reserves on this GPU, read from cudaMemGetInfo.

Measures (prints JSON, writes it after every section so a failing one loses nothing):
- the CUDA context: used bytes after the first CUDA call, after our kernels are loaded (one
  2^10 partition per allocator), at the end;
- cudaMalloc: bytes taken per allocation for sizes around the 2 MiB granule;
- CuPy's caching pool: bytes taken per pool.malloc (rounding, one segment per request),
  reuse of a freed block by a smaller request, and what a larger request does;
- the cudaMallocAsync (default) pool: reservation per allocation, what a free gives back at
  a synchronization with release threshold 0 and with UINT64_MAX, whether idle pool bytes
  serve a larger async request and whether they are available to cudaMalloc;
- CuPy's temporaries: bytes CuPy's own pool keeps after cumsum over the MSM bucket counts.
Usage: python3 benchmarks/allocator_probe.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json

MIB = 1 << 20
SIZES = [1, 512, 4096, 65536, MIB, MIB + 1, 2 * MIB, 2 * MIB + 1, 3 * MIB, 10 * MIB + 1,
         64 * MIB + 1]  # fmt: skip
K = 8


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    import cupy as cp

    rt = cp.cuda.runtime
    out: dict = {"cupy": cp.__version__, "runtime": rt.runtimeGetVersion()}

    def free() -> int:
        cp.cuda.Device().synchronize()
        return int(rt.memGetInfo()[0])

    total = int(rt.memGetInfo()[1])
    out["total_bytes"] = total
    out["context_first_call"] = total - free()
    pool = cp.get_default_memory_pool()
    mp = rt.deviceGetDefaultMemPool(0)
    thr = getattr(rt, "cudaMemPoolAttrReleaseThreshold", 4)
    res_cur = getattr(rt, "cudaMemPoolAttrReservedMemCurrent", 5)

    def save() -> None:
        if args.json:
            with open(args.json, "w") as f:
                json.dump(out, f, indent=1)

    def section(name: str, fn) -> None:  # one failing section must not lose the others
        try:
            fn()
        except Exception as e:  # recorded, not raised: the probe reports what it could
            out.setdefault("errors", {})[name] = f"{type(e).__name__}: {e}"
        pool.free_all_blocks()
        save()

    def kernels() -> None:
        from cuzk_sim.gpu.device import Device
        from cuzk_sim.gpu.flags import ProverFlags
        from cuzk_sim.gpu.partition_data import synthetic_data
        from cuzk_sim.gpu.prover import PartitionShape, partition

        shape = PartitionShape.synthetic(10)
        data = synthetic_data(shape, True)
        for alloc in ("caching", "async", "sync"):
            dev = Device("real", 0, alloc)
            try:
                partition(dev, shape, ProverFlags(allocator=alloc), data.data)
                out.setdefault("partition_ok", []).append(alloc)
            except Exception as e:
                out.setdefault("partition_errors", {})[alloc] = f"{type(e).__name__}: {e}"
            dev.free_all()
        pool.free_all_blocks()
        cp.get_default_pinned_memory_pool().free_all_blocks()
        rt.memPoolTrimTo(mp, 0)
        out["context_with_kernels"] = total - free()

    def cuda_malloc() -> None:
        rows = {}
        for s in SIZES:
            f0 = free()
            ptrs = [rt.malloc(s) for _ in range(K)]
            f1 = free()
            for p in ptrs:
                rt.free(p)
            rows[str(s)] = (f0 - f1) / K
        out["cudaMalloc_bytes_per_alloc"] = rows

    def caching() -> None:
        rows = {}
        for s in SIZES:
            pool.free_all_blocks()
            f0 = free()
            mem = [pool.malloc(s) for _ in range(K)]
            f1 = free()
            rows[str(s)] = {
                "free_drop_per_alloc": (f0 - f1) / K,
                "pool_total_per_alloc": pool.total_bytes() / K,
            }
            del mem
        pool.free_all_blocks()
        f0 = free()
        a = pool.malloc(64 * MIB)
        del a
        b = pool.malloc(40 * MIB)  # served from the freed 64 MiB block (split)?
        f1 = free()
        c = pool.malloc(100 * MIB)  # larger than any free block: a new segment
        f2 = free()
        out["caching_pool"] = {
            "per_size": rows,
            "smaller_after_free_new_bytes": f0 - f1,
            "larger_than_free_block_new_bytes": f1 - f2,
            "pool_total_after": pool.total_bytes(),
        }
        del b, c

    def reserved() -> int:
        return int(rt.memPoolGetAttribute(mp, res_cur))

    def async_pool() -> None:
        apool = cp.cuda.MemoryAsyncPool()
        asy: dict = {}
        out["async_pool"] = asy
        for threshold, label in ((2**64 - 1, "threshold_max"), (0, "threshold_0")):
            rt.memPoolSetAttribute(mp, thr, threshold)
            rt.memPoolTrimTo(mp, 0)
            rows: dict = {}
            asy[label] = rows
            for s in SIZES:
                try:
                    f0 = free()
                    mem = [apool.malloc(s) for _ in range(K)]
                    f1 = free()
                    r1 = reserved()
                    del mem
                    f2 = free()  # after a device synchronize
                    rows[str(s)] = {
                        "free_drop_per_alloc": (f0 - f1) / K,
                        "reserved_per_alloc": r1 / K,
                        "given_back_at_sync": f2 - f1,
                    }
                except Exception as e:
                    rows[str(s)] = f"{type(e).__name__}: {e}"
                rt.memPoolTrimTo(mp, 0)
        rt.memPoolSetAttribute(mp, thr, 2**64 - 1)
        rt.memPoolTrimTo(mp, 0)
        f0 = free()
        mem = [apool.malloc(64 * MIB) for _ in range(4)]
        del mem
        f1 = free()
        big = apool.malloc(128 * MIB)  # larger than any idle block, less than the idle total
        f2 = free()
        asy["idle_256MiB_then_128MiB_request_new_bytes"] = f1 - f2
        asy["idle_256MiB_kept_after_free"] = f0 - f1
        asy["reserved_after"] = reserved()
        del big
        idle = reserved()
        try:  # idle pool bytes and cudaMalloc: ask for free + half the idle bytes
            p = rt.malloc(free() + idle // 2)
            rt.free(p)
            asy["cudaMalloc_can_use_idle_pool_bytes"] = True
        except rt.CUDARuntimeError:
            asy["cudaMalloc_can_use_idle_pool_bytes"] = False
        asy["reserved_after_cudaMalloc_attempt"] = reserved()
        rt.memPoolTrimTo(mp, 0)
        # growth when the idle bytes cannot hold a request: 128 MiB idle (4 x 32 MiB), then
        # 160 MiB: new bytes = 160 MiB (a whole new block) or 32 MiB (the missing part)?
        mem = [apool.malloc(32 * MIB) for _ in range(4)]
        del mem
        f1 = free()
        big = apool.malloc(160 * MIB)
        asy["idle_128MiB_then_160MiB_request_new_bytes"] = f1 - free()
        del big
        rt.memPoolTrimTo(mp, 0)
        # the same with only 64 MiB free beyond the idle bytes (a ballast): does it fit?
        mem = [apool.malloc(32 * MIB) for _ in range(4)]
        del mem
        ballast = rt.malloc(free() - 64 * MIB)
        try:
            big = apool.malloc(160 * MIB)
            asy["idle_128MiB_free_64MiB_160MiB_request"] = "fits"
            del big
        except Exception as e:
            asy["idle_128MiB_free_64MiB_160MiB_request"] = f"{type(e).__name__}"
        rt.free(ballast)
        rt.memPoolTrimTo(mp, 0)

    def temporaries() -> None:
        from cuzk_sim.gpu.msm import MsmShape

        temps = {}
        for log_n in (10, 16, 18, 20, 24):
            ms = MsmShape.of("g1", 1 << log_n)
            counts = cp.zeros(ms.buckets + 1, dtype=cp.uint32)
            starts = cp.zeros(ms.buckets + 1, dtype=cp.uint32)
            used0, total0 = pool.used_bytes(), pool.total_bytes()
            f0 = free()
            cp.cumsum(counts[: ms.buckets], out=starts[1:])
            f1 = free()
            temps[str(log_n)] = {
                "buckets": ms.buckets,
                "pool_total_growth": pool.total_bytes() - total0,
                "pool_used_growth": pool.used_bytes() - used0,
                "free_drop": f0 - f1,
            }
            del counts, starts
            pool.free_all_blocks()
        out["cupy_cumsum_temporaries"] = temps

    for name, fn in (
        ("kernels", kernels),
        ("cudaMalloc", cuda_malloc),
        ("caching", caching),
        ("async", async_pool),
        ("temporaries", temporaries),
    ):
        section(name, fn)
    out["context_end"] = total - free()
    save()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
