"""GPU prover benchmarks on one device: G1/G2 MSM, NTT, full partition prove (synthetic key),
each kernel family's named baseline ("old") and the defaults ("new") side by side in one run
(ratio per row).

Prints a table (median of CUDA-event timings after a warm-up) and writes JSON.
Usage: python3 benchmarks/gpu_bench.py [--quick] [--json out.json] [--only msm_g1,ntt,...]
       [--sizes 16,20] [--max-log2 24] [--variants precomputed | all] [--extra]
       [--witness dense | sha256 | porep]  (the prove rows' witness shape, issue 23)
The baselines (one per kernel family, kept for side-by-side runs):
- field product: FIELD_MUL_WIDE=0, the 64-bit C Montgomery product of commit 6c50516 (the
  kernels of 2026-12-01 06:33 UTC): the `old` column of the MSM and prove rows;
- MSM: the unsigned-digit MSM (msm(..., algo="unsigned"), kernels/msm.cu): column
  `unsigned` of the MSM rows;
- NTT: fr_ntt_group_tw after fr_bitrev (the NTT of commit 43bbd30): column `old` of the
  NTT rows (new = fr_bitrev_tiled, then fr_ntt_pass); each NTT row also times every launch
  of one transform, and the fr_mul_rate row gives the Fr product's throughput (the NTT's
  arithmetic ceiling).
Other columns: MSM `precomputed` (the signed MSM over precomputed bases, table built before
timing: its build time and bytes reported; with --variants precomputed or --extra). Every
other variant that this benchmark once ran beside these (kernel switches, NTT kernels, MSM
constants) was measured, lost and was retired (issue 29): their figures are in
docs/benchmarks.md and docs/history/2026-12-01-benchmarks.md, the retirement in docs/gpu.md.
Prove: old and new default
flags (old: the field product's baseline), new with prestage +
pinned (a/b/c and the witness staged through pinned memory per copy), new with `key_pinned`
(the key's points in pinned host memory, pinned once before timing: its time reported), and
`key+abc pinned` (that, plus prestage + pinned with the caller's a/b/c and witness already
in pinned memory: every upload a DMA; before commit 8ee75b9, 2026-12-01 ~11:40 UTC, the
witness was uploaded from pageable memory), and both of those with `overlap_uploads` (each
MSM's points uploaded on a stream of their own beside the MSM before it). `overlap_tails`
(each MSM's deferred Horner + point finished in a helper process while the GPU runs the next
MSM), `tails in a thread` (the same in a thread: the GIL's cost), `key_resident` (the key's
points kept on the device: the untimed first partition uploads them, its time reported as
first_partition_ms), and the combinations `pinned+overlap+resident+tails` (key_pinned,
overlap_uploads, key_resident, overlap_tails) and `all pinned+overlap+resident+tails` (that,
plus prestage + pinned a/b/c), and with `key_tables` (each MSM over precomputed tables kept
on the device; the untimed first partition, traced, builds them: first_partition_ms,
table_build_ms, table_bytes) `resident+tables` (key_resident + key_tables alone) and `all
pinned+overlap+resident+tails+tables`. Synthetic data: points P_i = k_i G computed on the
GPU, random scalars < 2^254; a full prove uses random a/b/c vectors (the NTT-H and MSM work
is the same as for a real witness) and full-size blinding scalars r, s (seeded; the host
assembly's scalar multiplications cost what a real proof's do: with r = 3, s = 4, as before
commit 99a10d1, 2026-12-01 ~11:33 UTC, they were ~23 ms cheaper on a CI-class CPU)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import numpy as np

# variant -> kernel defines appended to $CUZK_KERNEL_DEFINES (the field's baseline for old)
VARIANTS = {"old": "FIELD_MUL_WIDE=0", "new": "", "unsigned": "", "precomputed": ""}
ALWAYS = ("old", "new", "unsigned")  # run whatever --variants says


SKIP: set[str] = set()  # variants not asked for (main() fills it from --variants)


@contextmanager
def kernels(variant: str) -> Iterator[None]:
    """Run the block with `variant`'s kernel defines (VARIANTS; others: the defaults). The
    loader caches one module per set of defines, so every variant stays compiled."""
    saved = os.environ.get("CUZK_KERNEL_DEFINES")
    defines = VARIANTS.get(variant, "")
    if defines:
        os.environ["CUZK_KERNEL_DEFINES"] = f"{saved or ''} {defines}"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("CUZK_KERNEL_DEFINES", None)
        else:
            os.environ["CUZK_KERNEL_DEFINES"] = saved


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


def bench_msm(cp, group: str, logs: list[int], reps: int, extra: bool = False) -> list[dict]:
    from cuzk_sim.gpu.device import Buffer, Device
    from cuzk_sim.gpu.msm import msm
    from cuzk_sim.gpu.msm_tables import precompute_table

    t0 = time.perf_counter()
    pts = _points(cp, group, 1 << max(logs))
    cp.cuda.Device().synchronize()
    gen_s = time.perf_counter() - t0
    variants = [*ALWAYS] + (["precomputed"] if extra or "precomputed" not in SKIP else [])
    rows = []
    for k in logs:
        n = 1 << k
        sc = _scalars(cp, n, k).reshape(-1)
        p = Buffer("points", 0, pts[:n].reshape(-1))
        s = Buffer("scalars", 0, sc)
        results = {}
        for variant in variants:
            dev = Device("real")
            table, build_s = None, 0.0
            if variant.startswith("precomputed"):
                t0 = time.perf_counter()
                table = precompute_table(dev, f"msm_{group}.table", group, p, n)
                cp.cuda.Device().synchronize()
                build_s = time.perf_counter() - t0
            algo = "unsigned" if variant == "unsigned" else "signed"

            def run(dev=dev, p=p, s=s, n=n, algo=algo, table=table, phases=None):
                return msm(dev, f"msm_{group}", group, p, s, n, 0, phases, algo, table)

            with kernels(variant):
                ms = _timeit(run, reps)
                phases: dict[str, float] = {}
                results[variant] = run(phases=phases)
            row = {"what": f"msm_{group}", "variant": variant, "log2": k, "ms": ms}
            row |= {"points_gen_s": gen_s, "phases": phases}
            if table is not None:
                row |= {"table_build_s": build_s, "table_bytes": table.nbytes}
                dev.free(table.name)
            rows.append(row)
            new_ms = next((r["ms"] for r in rows if r["log2"] == k and r["variant"] == "new"), 0)
            print(
                f"msm_{group} 2^{k} [{variant}]: {ms:.2f} ms"
                + (f" (x{ms / new_ms:.2f} of new)" if new_ms and variant != "new" else "")
                + "  phases(ms): "
                + ", ".join(f"{a}={b:.2f}" for a, b in phases.items())
                + (
                    f"  table {table.nbytes / 2**30:.2f} GiB built in {build_s:.2f} s"
                    if table
                    else ""
                ),
                flush=True,
            )
        same = all((v == results["old"]).all() for v in results.values())
        print(f"msm_{group} 2^{k}: variants agree: {same}", flush=True)
        if not same:
            raise SystemExit(f"msm_{group} 2^{k}: the variants' results differ")
    return rows


# NTT columns: (variant, kernel, bit reversal). old = the NTT family's baseline
# (fr_ntt_group_tw after fr_bitrev, the NTT of commit 43bbd30); new = the default
# (fr_ntt_pass after fr_bitrev_tiled). Both with the default field product.
NTT_VARIANTS = [
    ("old", "fr_ntt_group_tw", "scatter"),
    ("new", "fr_ntt_pass", None),
]


def _launch_times(cp, launches, reps: int) -> dict[str, float]:
    """Median CUDA-event time of each launch of one transform (launches run in order)."""
    times: dict[str, list[float]] = {label: [] for label, _ in launches}
    for _ in range(reps):
        for label, run in launches:
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            run()
            end.record()
            end.synchronize()
            times[label].append(cp.cuda.get_elapsed_time(start, end))
    return {label: statistics.median(v) for label, v in times.items()}


def bench_fr_mul_rate(cp, reps: int, name: str = "fr_mul_rate") -> dict:
    """Fr Montgomery products per second (kernels/ntt.cu fr_mul_rate: 4 independent chains
    per thread, 132 x 16 blocks of 256 threads), the NTT's arithmetic ceiling."""
    from cuzk_sim.gpu.module import kernel

    blocks, threads, iters = 132 * 16, 256, 256
    src = _scalars(cp, 1024, 5).reshape(-1)
    out = cp.empty((blocks * threads * 8,), dtype=cp.uint32)
    fn = kernel("ntt.cu", name)
    ms = _timeit(lambda: fn((blocks,), (threads,), (out, src, np.int32(iters))), reps)
    products = blocks * threads * (4 * iters + 3)
    rate = products / ms / 1e6
    print(f"{name}: {products} products in {ms:.2f} ms = {rate:.1f} G/s", flush=True)
    return {"what": name, "log2": products.bit_length() - 1, "ms": ms, "g_per_s": rate}


def bench_ntt(cp, logs: list[int], reps: int) -> list[dict]:
    from cuzk_sim.gpu import ntt as gntt
    from cuzk_sim.reference.domain import Domain

    variants = NTT_VARIANTS
    rows = [bench_fr_mul_rate(cp, reps)]
    for k in logs:
        n = 1 << k
        dom = Domain(n)
        t = gntt.DeviceTables.from_buffer(
            cp.asarray(gntt.domain_tables(k, dom.omega, 7, 1).pack()), k
        )
        src = _scalars(cp, n, k).reshape(-1)
        outs = {}
        for variant, name, rev in variants:
            a = src.copy()
            ms = _timeit(lambda a=a, t=t, name=name, r=rev: gntt.ntt(a, t, name, r), reps)
            launches = gntt.ntt_launches(a, t, 0, name, bitrev=rev)
            passes = _launch_times(cp, launches, reps)
            b = src.copy()
            gntt.ntt(b, t, name, rev)
            outs[variant] = b
            row = {"what": "ntt", "variant": variant, "kernel": name, "log2": k, "ms": ms}
            rows.append(row | {"launches_ms": passes})
            print(
                f"ntt 2^{k} [{variant}: {name}]: {ms:.2f} ms  launches(ms): "
                + ", ".join(f"{lb}={v:.3f}" for lb, v in passes.items()),
                flush=True,
            )
        _check_equal(f"ntt 2^{k}", outs, rows[-len(variants) :])
        # coset iNTT (the prover's last NTT): new folds 1/n into the bit reversal
        cosets = variants
        for variant, name, rev in cosets:
            a = src.copy()
            ms = _timeit(lambda a=a, t=t, n=name, r=rev: gntt.coset_intt(a, t, n, r), reps)
            b = src.copy()
            gntt.coset_intt(b, t, name, rev)
            outs[variant] = b
            rows.append(
                {"what": "coset_intt", "variant": variant, "kernel": name, "log2": k, "ms": ms}
            )
            print(f"coset_intt 2^{k} [{variant}: {name}]: {ms:.2f} ms", flush=True)
        _check_equal(f"coset_intt 2^{k}", {v: outs[v] for v, *_ in cosets}, rows[-len(cosets) :])
    return rows


def _check_equal(what: str, outs: dict, rows: list[dict]) -> None:
    """Each variant's output against old's: the default (new) must agree (else exit); the
    rows say so ("equal")."""
    equal = {v: bool((out == outs["old"]).all()) for v, out in outs.items()}
    for row in rows:
        row["equal"] = equal[row["variant"]]
    if not equal["new"]:
        raise SystemExit(f"{what}: the default kernel's result differs from old's")
    bad = sorted(v for v, ok in equal.items() if not ok)
    print(f"{what}: outputs equal to old's: " + ("all" if not bad else f"NOT {bad}"), flush=True)


# the blinding scalars of every timed proof: full size, as a real proof draws them
PROVE_RS = (
    0x1D2C3B4A59687786A5B4C3D2E1F00F1E2D3C4B5A69788796A5B4C3D2E1F0011,
    0x3A2B1C0D9E8F7061524334251607F8E9DACBBCAD9E8F70615243342516070F1,
)


def bench_prove(
    cp, logs: list[int], reps: int, witness: str = "dense", flag_texts: tuple[str, ...] = ()
) -> list[dict]:
    from concurrent.futures import ThreadPoolExecutor

    import py_ecc.optimized_bls12_381 as bls
    from cuzk_sim.gpu.device import Device, release_resident
    from cuzk_sim.gpu.flags import ProverFlags, with_texts
    from cuzk_sim.gpu.msm_results import msm_results, tail_pool
    from cuzk_sim.gpu.prover import (
        HostKey,
        PartitionInput,
        PartitionShape,
        partition,
        partition_proof,
        pin_points,
    )

    # $CUZK_BENCH_PROVE: comma-separated prove columns to run (default: all of them);
    # $CUZK_BENCH_PROVE_REPS: timed partitions per column (default: the caller's)
    only = {v for v in os.environ.get("CUZK_BENCH_PROVE", "").split(",") if v}
    reps = int(os.environ.get("CUZK_BENCH_PROVE_REPS", reps))
    tail_pool()  # the tails' process: started (and warmed) before any timing
    tail_thread = ThreadPoolExecutor(1)  # the same in a thread: what the GIL costs

    rows = []
    top = 1 << max(logs)
    g1 = _points(cp, "g1", top).get()
    g2 = _points(cp, "g2", top).get()
    for k in logs:
        shape = PartitionShape.synthetic(k, witness=witness)  # --witness: its densities
        n = shape.domain_size
        sizes = shape.msm_sizes()
        pts = {st: (g2 if g == "g2" else g1)[:count] for st, (g, count) in sizes.items()}
        w, scalars = _scalars(cp, n, 2).get(), {}
        if witness != "dense":  # the shape's 0/1 share (gpu/witness_data.py)
            from cuzk_sim.gpu.witness_data import shaped_witness

            w, scalars = shaped_witness(shape, np.random.default_rng(k))
        data = PartitionInput(_scalars(cp, 3 * n, 1).get().reshape(3, n, 8), w, pts, scalars)
        key = HostKey(pts, bls.G1, bls.G1, bls.G2, bls.G1, bls.G2)
        t0 = time.perf_counter()  # once per key, as host_key(pk, pinned=True) does
        pinned_key = PartitionInput(data.abc, data.witness, pin_points(pts), scalars)
        pin_ms = 1000 * (time.perf_counter() - t0)
        # as a caller synthesising into pinned memory: a/b/c and the witness
        staged = pin_points({"abc": data.abc, "witness": data.witness})
        all_pinned = PartitionInput(
            staged["abc"], staged["witness"], pinned_key.key_points, pin_points(scalars)
        )
        key_bytes = sum(int(v.nbytes) for v in pts.values())
        print(f"prove 2^{k}: key {key_bytes / 2**20:.0f} MiB pinned in {pin_ms:.0f} ms", flush=True)
        proofs = {}
        all_flags = ProverFlags(prestage=True, pinned=True, key_pinned=True, overlap_uploads=True)
        variants = {  # tag -> (flags, host data)
            "old": (ProverFlags(), data),
            "new": (ProverFlags(), data),
            "new prestage+pinned": (ProverFlags(prestage=True, pinned=True), data),
            "key_pinned": (ProverFlags(key_pinned=True), pinned_key),
            "key+abc pinned": (
                ProverFlags(prestage=True, pinned=True, key_pinned=True),
                all_pinned,
            ),
            "key pinned+overlap": (
                ProverFlags(key_pinned=True, overlap_uploads=True),
                pinned_key,
            ),
            "all pinned+overlap": (
                ProverFlags(prestage=True, pinned=True, key_pinned=True, overlap_uploads=True),
                all_pinned,
            ),
            # each MSM's Horner + point in the tails' process while the GPU runs the next
            "overlap_tails": (ProverFlags(overlap_tails=True), data),
            "tails in a thread": (ProverFlags(overlap_tails=True), data),
            # the key kept on the device: the first (untimed) partition uploads it
            "key_resident": (ProverFlags(key_resident=True), data),
            "pinned+overlap+resident+tails": (
                ProverFlags(
                    key_pinned=True, overlap_uploads=True, key_resident=True, overlap_tails=True
                ),
                pinned_key,
            ),
            "all pinned+overlap+resident+tails": (
                ProverFlags(
                    prestage=True,
                    pinned=True,
                    key_pinned=True,
                    overlap_uploads=True,
                    key_resident=True,
                    overlap_tails=True,
                ),
                all_pinned,
            ),
            # each of the two on the all-pinned row alone (every copy a DMA: steady times)
            "all pinned+overlap+tails": (replace(all_flags, overlap_tails=True), all_pinned),
            "all pinned+overlap+resident": (replace(all_flags, key_resident=True), all_pinned),
            "all pinned+overlap+tails in a thread": (
                replace(all_flags, overlap_tails=True),
                all_pinned,
            ),
            # + each MSM over precomputed tables kept on the device (key_tables): the first,
            # untimed partition builds them as it fills the resident key
            "resident+tables": (ProverFlags(key_resident=True, key_tables=True), data),
            "all pinned+overlap+resident+tails+tables": (
                replace(all_flags, key_resident=True, overlap_tails=True, key_tables=True),
                all_pinned,
            ),
        }
        variants = {k: v for k, v in variants.items() if k not in SKIP}
        if flag_texts:  # --flag NAME=VALUE: one more column, any ProverFlags field
            asked = with_texts(ProverFlags(), flag_texts)
            host = all_pinned if asked.pinned else pinned_key if asked.key_pinned else data
            variants["--flag " + " ".join(flag_texts)] = (asked, host)
        if only:  # $CUZK_BENCH_PROVE: these prove columns alone
            variants = {k: v for k, v in variants.items() if k in only}
        for tag, (flags, host) in variants.items():
            walls = []
            tails = None
            if flags.overlap_tails:
                tails = tail_thread if tag.endswith("in a thread") else tail_pool()
            with kernels(tag):
                for j in range(reps + 1):
                    t0 = time.perf_counter()
                    # key_tables: the untimed first partition traced (its table builds timed)
                    mode = "traced" if j == 0 and flags.key_tables else "real"
                    dev = Device(mode, allocator=flags.allocator)
                    # with tails: the assembly's products beside the GPU (gpu/blinding.py)
                    proof = partition_proof(dev, shape, flags, host, key, *PROVE_RS, tails)
                    walls.append(1000 * (time.perf_counter() - t0))
                    if j == 0:
                        first_dev = dev
                traced = Device("traced", allocator=flags.allocator)
                msm_results(partition(traced, shape, flags, host, tails))  # tails awaited
            proofs[tag] = proof
            stages: dict[str, float] = {}
            for name, ms in traced.timings_ms:
                stage = name.split(".")[0].replace("upload_", "upload:")
                stages[stage] = stages.get(stage, 0.0) + ms
            ms = statistics.median(walls[1:])
            row = {"what": "prove", "variant": tag, "log2": k, "ms": ms, "stages_ms": stages}
            if flags.key_pinned:
                row |= {"key_pin_ms": pin_ms, "key_bytes": key_bytes}
            if flags.key_resident:  # the untimed first partition, which uploads the key
                row |= {"first_partition_ms": walls[0]}
            if flags.key_tables:  # and builds the tables (traced)
                timed = first_dev.timings_ms
                built = sum(v for name, v in timed if name.endswith(".table.build"))
                kept = [a for a in first_dev.steps if getattr(a, "note", "").startswith("key_t")]
                row |= {"table_build_ms": built, "table_bytes": sum(a.bytes for a in kept)}
            rows.append(row)
            print(
                f"prove 2^{k} [{tag}]: {ms:.1f} ms  stages(ms): "
                + ", ".join(f"{s}={v:.1f}" for s, v in stages.items())
                + (f"  first partition {walls[0]:.0f} ms" if flags.key_resident else "")
                + (
                    f" (table builds {row['table_build_ms']:.0f} ms, tables "
                    f"{row['table_bytes'] / 2**30:.2f} GiB)"
                    if flags.key_tables
                    else ""
                ),
                flush=True,
            )
        first = next(iter(proofs.values()))  # old's, unless $CUZK_BENCH_PROVE leaves it out
        if any(p != proofs.get("old", first) for p in proofs.values()):
            raise SystemExit(f"prove 2^{k}: the variants' proofs differ")
        print(f"prove 2^{k}: variants' proofs equal: True", flush=True)
        print(f"prove 2^{k}: resident key freed: {release_resident()} bytes", flush=True)
    tail_thread.shutdown()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default=None)
    ap.add_argument("--only", default="msm_g1,msm_g2,ntt,prove")
    ap.add_argument("--max-log2", type=int, default=24)
    ap.add_argument("--sizes", default=None, help="comma-separated log2 sizes (default: all)")
    ap.add_argument(
        "--variants",
        default="",
        help="comma-separated further variants of VARIANTS to run beside old, new and "
        "unsigned (precomputed), or all",
    )
    ap.add_argument(
        "--extra",
        action="store_true",
        help="also the precomputed MSM",
    )
    ap.add_argument(
        "--witness",
        default="dense",
        help="prove rows: the partition's witness shape (gpu/witness_shape.py: dense, "
        "sha256, porep): query densities and the 0/1 share of the scalars",
    )
    ap.add_argument(
        "--flag",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="prove rows: one more column with these ProverFlags (repeatable; any field, "
        "e.g. key_pinned=true, vram_budget=14GiB)",
    )
    args = ap.parse_args()
    from cuzk_sim.gpu.flags import ProverFlags, with_texts

    try:
        with_texts(ProverFlags(), args.flag)
    except ValueError as e:
        ap.error(str(e))
    keep = set(ALWAYS) | {v for v in args.variants.split(",") if v}
    if args.variants == "all":
        keep = set(VARIANTS)
    unknown = keep - set(VARIANTS)
    if unknown:
        ap.error(f"--variants: unknown {sorted(unknown)}; known: {sorted(VARIANTS)} or all")
    SKIP.update(set(VARIANTS) - keep)
    sizes = {int(x) for x in args.sizes.split(",")} if args.sizes else None

    def pick(logs: tuple[int, ...]) -> list[int]:
        return [k for k in logs if k <= args.max_log2 and (sizes is None or k in sizes)]

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
    if "ntt" in only and pick((16, 18, 20, 22, 24)):
        rows += bench_ntt(cp, pick((16, 18, 20, 22, 24)), reps)
    if "msm_g1" in only and pick((16, 18, 20, 22)):
        rows += bench_msm(cp, "g1", pick((16, 18, 20, 22)), reps, args.extra)
    if "msm_g2" in only and pick((16, 18, 20)):
        rows += bench_msm(cp, "g2", pick((16, 18, 20)), reps, extra=args.extra)
    if "prove" in only and pick((16, 18, 20)):
        rows += bench_prove(cp, pick((16, 18, 20)), 2, args.witness, tuple(args.flag))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"info": info, "rows": rows}, f, indent=1)
    print(side_by_side(rows))
    sys.stdout.flush()


def side_by_side(rows: list[dict]) -> str:
    """Markdown: one line per (what, size) with the old and new times and new / old."""
    table: dict[tuple[str, int], dict[str, float]] = {}
    for r in rows:
        table.setdefault((r["what"], r["log2"]), {})[r.get("variant", "new")] = r["ms"]
    others = sorted({v for t in table.values() for v in t} - {"old", "new"})
    head = "| what | size | old ms | new ms | new/old | " + " | ".join(others) + " |"
    lines = ["", head, "|" + "---|" * (5 + len(others))]
    for (what, k), t in table.items():
        old, new = t.get("old"), t.get("new")
        ratio = f"{new / old:.2f}" if old and new else ""
        cells = [f"{t[o]:.2f}" if o in t else "" for o in others]
        fmt = [f"{v:.2f}" if v else "" for v in (old, new)]
        lines.append(
            f"| {what} | 2^{k} | {fmt[0]} | {fmt[1]} | {ratio} | " + " | ".join(cells) + " |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
