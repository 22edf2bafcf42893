"""GPU prover benchmarks on one device: G1/G2 MSM, NTT, full partition prove (synthetic key).

Prints a table (median of CUDA-event timings after a warm-up) and writes JSON.
Usage: python3 benchmarks/gpu_bench.py [--quick] [--json out.json]
Synthetic data: points P_i = k_i G computed on the GPU, random scalars < 2^254; a full
prove uses random a/b/c vectors (the NTT-H and MSM work is the same as for a real witness).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np


def _timeit(fn, reps: int) -> float:
    import cupy as cp

    fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    return statistics.median(times)


def _scalars(cp, n: int, seed: int):
    rng = cp.random.default_rng(seed)
    s = rng.integers(0, 2**32, size=(n, 8), dtype=cp.uint64).astype(cp.uint32)
    s[:, 7] &= 0x3FFFFFFF  # < 2^254 < r
    return s


def _points(cp, group: str, n: int):
    import py_ecc.optimized_bls12_381 as bls
    from cuzk_sim.gpu import encoding
    from cuzk_sim.gpu.module import launch

    gen = encoding.g1_to_limbs([bls.G1]) if group == "g1" else encoding.g2_to_limbs([bls.G2])
    words = 24 if group == "g1" else 48
    out = cp.empty((n, words), dtype=cp.uint32)
    launch(
        "msm.cu",
        f"{group}_scalar_mul",
        n,
        cp.asarray(gen),
        _scalars(cp, n, 99),
        out,
        np.int64(n),
        threads=128,
    )
    return out


def bench_msm(cp, group: str, logs: list[int], reps: int) -> list[dict]:
    from cuzk_sim.gpu.device import Buffer, Device
    from cuzk_sim.gpu.msm import msm

    t0 = time.perf_counter()
    pts = _points(cp, group, 1 << max(logs))
    cp.cuda.Device().synchronize()
    gen_s = time.perf_counter() - t0
    rows = []
    for k in logs:
        n = 1 << k
        sc = _scalars(cp, n, k).reshape(-1)
        dev = Device("real")
        p = Buffer("points", 0, pts[:n].reshape(-1))
        s = Buffer("scalars", 0, sc)
        ms = _timeit(lambda dev=dev, p=p, s=s, n=n: msm(dev, f"msm_{group}", group, p, s, n), reps)
        phases: dict[str, float] = {}
        msm(dev, f"msm_{group}", group, p, s, n, phase_ms=phases)
        rows.append(
            {"what": f"msm_{group}", "log2": k, "ms": ms, "points_gen_s": gen_s, "phases": phases}
        )
        print(
            f"msm_{group} 2^{k}: {ms:.2f} ms  phases(ms): "
            + ", ".join(f"{a}={b:.2f}" for a, b in phases.items()),
            flush=True,
        )
    return rows


def bench_ntt(cp, logs: list[int], reps: int) -> list[dict]:
    from cuzk_sim.gpu import ntt as gntt
    from cuzk_sim.reference.domain import Domain

    rows = []
    for k in logs:
        n = 1 << k
        dom = Domain(n)
        t = gntt.DeviceTables.from_buffer(
            cp.asarray(gntt.domain_tables(k, dom.omega, 7, 1).pack()), k
        )
        a = _scalars(cp, n, k).reshape(-1)
        ms = _timeit(lambda a=a, t=t: gntt.ntt(a, t), reps)
        rows.append({"what": "ntt", "log2": k, "ms": ms})
        print(f"ntt 2^{k}: {ms:.2f} ms", flush=True)
    return rows


def bench_prove(cp, logs: list[int], reps: int) -> list[dict]:
    import py_ecc.optimized_bls12_381 as bls
    from cuzk_sim.gpu.device import Device
    from cuzk_sim.gpu.prover import (
        HostKey,
        PartitionInput,
        PartitionShape,
        ProverFlags,
        assemble,
        msm_results,
        partition,
    )

    rows = []
    top = 1 << max(logs)
    g1 = _points(cp, "g1", top).get()
    g2 = _points(cp, "g2", top).get()
    for k in logs:
        shape = PartitionShape.synthetic(k)
        n = shape.domain_size
        pts = {
            "msm_h": g1[: shape.h_len],
            "msm_a": g1[:n],
            "msm_b_g1": g1[:n],
            "msm_b_g2": g2[:n],
            "msm_l": g1[: n - 2],
        }
        data = PartitionInput(
            _scalars(cp, 3 * n, 1).get().reshape(3, n, 8), _scalars(cp, n, 2).get(), pts
        )
        key = HostKey(pts, bls.G1, bls.G1, bls.G2, bls.G1, bls.G2)
        for flags in (
            ProverFlags(),
            ProverFlags(prestage=True, pinned=True),
            ProverFlags(msm_chunk=1 << 18),
        ):
            walls = []
            for _ in range(reps + 1):
                t0 = time.perf_counter()
                dev = Device("real", allocator=flags.allocator)
                raw = partition(dev, shape, flags, data)
                res = msm_results(raw)
                assemble(key, res, 3, 4)
                walls.append(1000 * (time.perf_counter() - t0))
            traced = Device("traced", allocator=flags.allocator)
            partition(traced, shape, flags, data)
            stages: dict[str, float] = {}
            for name, ms in traced.timings_ms:
                stage = name.split(".")[0].replace("upload_", "upload:")
                stages[stage] = stages.get(stage, 0.0) + ms
            ms = statistics.median(walls[1:])
            tag = (
                "prestage+pinned"
                if flags.prestage
                else f"chunk {flags.msm_chunk}"
                if flags.msm_chunk
                else "default"
            )
            rows.append({"what": "prove", "log2": k, "ms": ms, "flags": tag, "stages_ms": stages})
            print(
                f"prove 2^{k} [{tag}]: {ms:.1f} ms  stages(ms): "
                + ", ".join(f"{s}={v:.1f}" for s, v in stages.items()),
                flush=True,
            )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default=None)
    ap.add_argument("--only", default="msm_g1,msm_g2,ntt,prove")
    ap.add_argument("--max-log2", type=int, default=24)
    args = ap.parse_args()
    import cupy as cp

    only = set(args.only.split(","))
    reps = 3 if args.quick else 5
    props = cp.cuda.runtime.getDeviceProperties(0)
    info = {
        "device": props["name"].decode(),
        "python": platform.python_version(),
        "cupy": cp.__version__,
        "defines": os.environ.get("CUZK_KERNEL_DEFINES", ""),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    print(info, flush=True)
    rows: list[dict] = []
    if "ntt" in only:
        rows += bench_ntt(cp, [k for k in (16, 18, 20, 22, 24) if k <= args.max_log2], reps)
    if "msm_g1" in only:
        rows += bench_msm(cp, "g1", [k for k in (16, 18, 20, 22) if k <= args.max_log2], reps)
    if "msm_g2" in only:
        rows += bench_msm(cp, "g2", [k for k in (16, 18, 20) if k <= args.max_log2], reps)
    if "prove" in only:
        rows += bench_prove(cp, [k for k in (16, 18, 20) if k <= args.max_log2], 2)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"info": info, "rows": rows}, f, indent=1)
    print("\n| what | size | ms |\n|---|---|---|")
    for r in rows:
        print(f"| {r['what']} {r.get('flags', '')} | 2^{r['log2']} | {r['ms']:.2f} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
