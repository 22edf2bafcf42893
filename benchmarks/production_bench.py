"""The GPU prover at production shape (issue 23), one device, side by side in one process:

- link: the HtoD bandwidth from pinned host memory (2 GiB copies), the PCIe floor;
- micro: G1 / G2 MSM 2^20 with random scalars (signed Pippenger, no precomputed tables;
  `gpu` = the deferred form a prove runs, window sums to the host; `full` = with the host
  Horner), NTT 2^24;
- split: G1 MSM 2^24 (and G2 MSM 2^23, rows with "group": "g2") with the witness shape's
  0/1 scalars: the split MSM, the signed Pippenger on the same scalars (their sums must
  be equal), and on random scalars -- what the profile's zero_share / one_share and
  batch_add figures come from (benchmarks/msm_shape_figures.py);
- partition: one 2^log2 partition of the shape (default 2^27, porep): synthetic data in
  pinned host memory (key points tiled from 2^14 GPU-made ones; a/b/c, witness and
  gathered scalars random, the latter of the shape's 0/1 shares), the key streamed
  within --budget (key_pinned, overlap_uploads, split, pinned a/b/c), wall per partition
  in steady state (after a first one), the traced split (each step's CUDA-event time,
  run serialised), the plan's peak and its PCIe bytes; then the key resident on the
  device (one worker: no key uploads after the first).

Usage: python3 benchmarks/production_bench.py [--only link,micro,split,partition]
       [--log2 27] [--budget "14 GiB"] [--witness porep] [--reps 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict

import numpy as np
from gpu_bench import _timeit  # one CUDA-event timer for both benchmarks (same folder)

GIB = 1 << 30


def _device_points(group: str, n: int):
    """n points k_i G on the device (random k_i), as gpu_bench makes them."""
    import cupy as cp
    import py_ecc.optimized_bls12_381 as bls
    from cuzk_sim.gpu import encoding
    from cuzk_sim.gpu.module import launch
    from cuzk_sim.gpu.witness_data import random_scalars

    gen = encoding.g1_to_limbs([bls.G1]) if group == "g1" else encoding.g2_to_limbs([bls.G2])
    out = cp.empty((n, 24 if group == "g1" else 48), dtype=cp.uint32)
    sc = cp.asarray(random_scalars(np.random.default_rng(99), n))
    launch("msm.cu", f"{group}_scalar_mul", n, cp.asarray(gen), sc, out, np.int64(n), threads=128)
    return out


def bench_link(reps: int) -> dict:
    import cupy as cp
    import cupyx

    nbytes = 2 * GIB
    host = cupyx.empty_pinned((nbytes // 4,), np.uint32)
    host[:] = 7
    dev = cp.empty((nbytes // 4,), dtype=cp.uint32)
    ms = _timeit(lambda: dev.set(host), reps)
    gbs = nbytes / (ms / 1e3) / GIB
    print(f"link HtoD pinned {nbytes / GIB:.0f} GiB: {ms:.1f} ms = {gbs:.1f} GiB/s", flush=True)
    return {"what": "link", "bytes": nbytes, "ms": ms, "gib_s": gbs}


def bench_micro(reps: int) -> list[dict]:
    import cupy as cp
    from cuzk_sim.gpu import ntt as gntt
    from cuzk_sim.gpu.device import Buffer, Device
    from cuzk_sim.gpu.msm import msm
    from cuzk_sim.gpu.witness_data import random_scalars
    from cuzk_sim.reference.domain import Domain

    rows = []
    n = 1 << 20
    sc = Buffer("s", 0, cp.asarray(random_scalars(np.random.default_rng(20), n)).reshape(-1))
    for group in ("g1", "g2"):
        p = Buffer("p", 0, _device_points(group, n).reshape(-1))
        for form, defer in (("gpu", True), ("full", False)):
            dev = Device("real")
            ms = _timeit(
                lambda d=dev, g=group, p=p, f=defer: msm(d, "m", g, p, sc, n, 0, defer=f), reps
            )
            rows.append({"what": f"msm_{group}", "form": form, "log2": 20, "ms": ms})
            print(f"msm {group} 2^20 random [{form}]: {ms:.2f} ms", flush=True)
    k = 24
    dom = Domain(1 << k)
    t = gntt.DeviceTables.from_buffer(cp.asarray(gntt.domain_tables(k, dom.omega, 7, 1).pack()), k)
    a = cp.asarray(random_scalars(np.random.default_rng(24), 1 << k)).reshape(-1)
    ms = _timeit(lambda: gntt.ntt(a, t), reps)
    rows.append({"what": "ntt", "log2": k, "ms": ms})
    print(f"ntt 2^{k}: {ms:.2f} ms", flush=True)
    return rows


def bench_split(reps: int, witness: str, log2: int = 24, group: str = "g1") -> list[dict]:
    import cupy as cp
    from cuzk_sim.gpu.device import Buffer, Device
    from cuzk_sim.gpu.msm import msm
    from cuzk_sim.gpu.msm_split import msm_split
    from cuzk_sim.gpu.witness_data import random_scalars, shaped_scalars
    from cuzk_sim.gpu.witness_shape import witness_shape

    ws = witness_shape(witness)
    n = 1 << log2
    p = Buffer("p", 0, _device_points(group, n).reshape(-1))
    bits = shaped_scalars(np.random.default_rng(5), n, ws.zero_fraction, ws.one_fraction)
    s_bits = Buffer("s", 0, cp.asarray(bits).reshape(-1))
    s_rand = Buffer("r", 0, cp.asarray(random_scalars(np.random.default_rng(6), n)).reshape(-1))
    expected = ws.split(n)
    rows, out = [], {}
    cases = {
        "split": lambda dev: msm_split(dev, "m", group, p, s_bits, n, 0, expected),
        "pippenger, same scalars": lambda dev: [msm(dev, "m", group, p, s_bits, n, 0, defer=True)],
        "pippenger, random scalars": lambda dev: [
            msm(dev, "m", group, p, s_rand, n, 0, defer=True)
        ],
    }
    for name, fn in cases.items():
        dev = Device("real")
        ms = _timeit(lambda fn=fn, dev=dev: fn(dev), reps)
        parts = fn(Device("real"))
        out[name] = _sum_parts(parts, group)
        row = {"what": "split_msm", "case": name, "log2": log2, "witness": witness, "ms": ms}
        rows.append(row if group == "g1" else {**row, "group": group})
        print(f"msm {group} 2^{log2} {witness} [{name}]: {ms:.2f} ms", flush=True)
    equal = out["split"] == out["pippenger, same scalars"]
    print(f"split == pippenger on the same scalars: {equal}", flush=True)
    rows.append({"what": "split_equal", "equal": bool(equal)})
    return rows


def _sum_parts(parts, group: str = "g1") -> tuple:
    """The affine point (a tuple, comparable) of a list of WindowSums partials."""
    import py_ecc.optimized_bls12_381 as bls
    from cuzk_sim.gpu import encoding

    acc, read = (
        (bls.Z1, encoding.g1_from_limbs) if group == "g1" else (bls.Z2, encoding.g2_from_limbs)
    )
    for v in parts:
        acc = bls.add(acc, read(v.point()))
    return () if bls.is_inf(acc) else tuple(repr(c) for c in bls.normalize(acc))


def _tiled(block: np.ndarray, rows: int) -> np.ndarray:
    """`rows` rows of `block` repeated, in pinned host memory (no pageable copy)."""
    import cupyx

    out = cupyx.empty_pinned((rows, *block.shape[1:]), block.dtype)
    for s in range(0, rows, len(block)):
        out[s : s + len(block)] = block[: rows - s]
    return out


def _pinned_scalars(rows: int, zero: float, one: float, seed: int) -> np.ndarray:
    """`rows` scalars < 2^254 in pinned host memory, made on the GPU 2^24 rows at a time:
    a `zero` share of 0 and a `one` share of 1 in random places, the rest uniform. Not
    tiled: a/b/c with a period would make H's coefficients mostly zero (the iNTT of a
    periodic vector), and an MSM skips zero digits."""
    import cupy as cp
    import cupyx

    out = cupyx.empty_pinned((rows, 8), np.uint32)
    rng = cp.random.default_rng(seed)
    step = 1 << 24
    for start in range(0, rows, step):
        k = min(step, rows - start)
        s = rng.integers(0, 2**32, size=(k, 8), dtype=cp.uint64).astype(cp.uint32)
        s[:, 7] &= 0x3FFFFFFF
        if zero or one:
            u = rng.random(k)
            s[u < zero + one] = 0
            s[(u >= zero) & (u < zero + one), 0] = 1
        s.get(out=out[start : start + k])
    return out


def partition_data(shape):
    """Pinned synthetic data of `shape` (module docstring): key points tiled from 2^14
    GPU-made ones (which points repeat does not change an MSM's work), a/b/c uniformly
    random, the witness and the gathered scalars random of the shape's 0/1 shares."""
    from cuzk_sim.gpu.prover import PartitionInput

    ws = shape.witness_shape()
    base = {g: _device_points(g, 1 << 14).get() for g in ("g1", "g2")}
    pts = {st: _tiled(base[g], count) for st, (g, count) in shape.msm_sizes().items()}
    n, m = shape.domain_size, shape.num_vars
    abc = _pinned_scalars(3 * n, 0.0, 0.0, 1).reshape(3, n, 8)
    z, o = ws.zero_fraction, ws.one_fraction
    witness = _pinned_scalars(m, z, o, 2)
    witness[0] = 0
    witness[0, 0] = 1
    counts = (("a", shape.a_count, 3), ("b", shape.b_count, 4))
    scalars = {q: _pinned_scalars(c, z, o, seed) for q, c, seed in counts if c}
    return PartitionInput(abc, witness, pts, scalars)


def _run(shape, flags, data, mode: str = "real"):
    """One partition's GPU work and its tails: (gpu s, tails s, Device)."""
    import cupy as cp
    from cuzk_sim.gpu.device import Device
    from cuzk_sim.gpu.msm_results import msm_results
    from cuzk_sim.gpu.prover import partition

    dev = Device(mode)
    t0 = time.perf_counter()
    with dev.selected():
        raw = partition(dev, shape, flags, data)
        cp.cuda.Device().synchronize()
    t1 = time.perf_counter()
    msm_results(raw)
    return t1 - t0, time.perf_counter() - t1, dev


def _breakdown(dev) -> dict[str, float]:
    """Traced ms by category: uploads, the NTT phase, each MSM stage, downloads."""
    out: dict[str, float] = defaultdict(float)
    for name, ms in dev.timings_ms:
        if name.startswith("upload"):
            cat = "uploads"
        elif name.startswith("compute_h"):
            cat = "ntt_phase"
        elif name.endswith(".result") or name.endswith("split_counts"):
            cat = "downloads"
        else:
            cat = name.split(".")[0]
        out[cat] += ms
    return {k: round(v, 2) for k, v in sorted(out.items())}


class _Chunk:
    def __init__(self, size: int) -> None:
        self.size, self.prev, self.next, self.free = size, None, None, False


def replay_pool(plan, partitions: int, limit: int | None) -> int:
    """The high-water of CuPy's caching pool over `partitions` runs of a plan's device
    allocs and frees, replayed on a model of its SingleDeviceMemoryPool (best fit among
    the free chunks, a larger one split, a freed one merged with its free neighbours;
    over `limit`, the unsplit free chunks given back, then a MemoryError). CuPy's own
    temporaries (the counting sort's cumsum) are not in the plan: the slack covers them."""
    import bisect

    free: list[tuple[int, int, _Chunk]] = []
    total = high = 0

    def insert(c: _Chunk) -> None:
        c.free = True
        bisect.insort(free, (c.size, id(c), c))

    def remove(c: _Chunk) -> None:
        free.remove((c.size, id(c), c))
        c.free = False

    def malloc(size: int) -> _Chunk:
        nonlocal total, high, free
        size = -(-size // 512) * 512
        i = bisect.bisect_left(free, (size, -1))
        if i < len(free):
            c = free.pop(i)[2]
            c.free = False
            if c.size > size:  # split: the rest stays free, linked to c
                rest = _Chunk(c.size - size)
                rest.prev, rest.next = c, c.next
                if c.next:
                    c.next.prev = rest
                c.next, c.size = rest, size
                insert(rest)
            return c
        if limit is not None and total + size > limit:
            total -= sum(t[0] for t in free if t[2].prev is None and t[2].next is None)
            free = [t for t in free if t[2].prev is not None or t[2].next is not None]
            if total + size > limit:
                raise MemoryError(f"{size} bytes over the pool limit {limit} ({total} held)")
        total += size
        high = max(high, total)
        return _Chunk(size)

    def release(c: _Chunk) -> None:
        while c.next is not None and c.next.free:
            n = c.next
            remove(n)
            c.size, c.next = c.size + n.size, n.next
            if n.next:
                n.next.prev = c
        while c.prev is not None and c.prev.free:
            p = c.prev
            remove(p)
            p.size, p.next = p.size + c.size, c.next
            if c.next:
                c.next.prev = p
            c = p
        insert(c)

    live: dict[str, _Chunk] = {}
    for _ in range(partitions):
        for st in plan.steps:
            if st.op == "alloc" and st.memory == "device" and not st.persistent:
                live[st.buffer] = malloc(max(st.bytes, 4))
            elif st.op == "free" and st.buffer in live:
                release(live.pop(st.buffer))
    return high


class PoolWatch:
    """The caching pool's high-water mark (`total_bytes` only grows inside a malloc: read
    after each of the prover's allocations) and the device's used bytes (cudaMemGetInfo:
    the context and everything else the process holds) at the same moments."""

    def __init__(self) -> None:
        self.pool = self.used = 0

    def __enter__(self) -> PoolWatch:
        import cupy as cp
        from cuzk_sim.gpu.device import Device

        pool, before = cp.get_default_memory_pool(), Device._malloc

        def watched(dev, nbytes):
            mem = before(dev, nbytes)
            self.pool = max(self.pool, pool.total_bytes())
            free, total = cp.cuda.runtime.memGetInfo()
            self.used = max(self.used, total - free)
            return mem

        self._restore = before
        Device._malloc = watched
        return self

    def __exit__(self, *exc) -> None:
        from cuzk_sim.gpu.device import Device

        Device._malloc = self._restore


def _runs(shape, flags, data, reps: int, name: str, limit: int | None):
    """reps + 1 partitions and a traced one, the pool limited to `limit`: (walls, traced
    Device, PoolWatch, None) or, when the pool's limit made an allocation fail, (.., the
    failure's line)."""
    from cuzk_sim.gpu.device import DeviceOutOfMemory
    from cuzk_sim.gpu.streaming import pool_limited

    walls = []
    with PoolWatch() as watch, pool_limited(limit):
        try:
            for i in range(reps + 1):
                gpu_s, tails_s, _ = _run(shape, flags, data)
                print(f"{name} partition {i}: gpu {gpu_s:.3f} s, tails {tails_s:.3f} s", flush=True)
                walls.append((gpu_s, tails_s))
            _, _, traced = _run(shape, flags, data, "traced")
        except DeviceOutOfMemory as e:
            return walls, None, watch, f"{name}: OOM under the pool limit {limit}: {e}"
    return walls, traced, watch, None


def _split_lines(row: dict, link_gib_s: float | None) -> None:
    """The split of one partition: uploads (bytes, rate against the link), the NTT phase,
    each MSM, the kernels' sum, and the idle gaps derived from them and the wall."""
    t, wall = row["traced_ms"], 1e3 * row["gpu_s"]
    up = t.get("uploads", 0.0)
    kernels = sum(v for k, v in t.items() if k not in ("uploads", "downloads"))
    gib = row["plan_htod_bytes"] / GIB
    rate = gib / (up / 1e3) if up else 0.0
    link = (
        f" (link {link_gib_s:.1f} GiB/s: floor {1e3 * gib / link_gib_s:.0f} ms)"
        if link_gib_s
        else ""
    )
    msms = ", ".join(f"{k} {v:.1f}" for k, v in t.items() if k.startswith("msm_"))
    print(f"  {row['config']}: wall {wall:.0f} ms; uploads {up:.0f} ms for {gib:.1f} GiB = "
          f"{rate:.1f} GiB/s{link}; NTT phase {t.get('ntt_phase', 0):.0f} ms; MSMs ms: {msms}; "
          f"downloads {t.get('downloads', 0):.1f} ms", flush=True)  # fmt: skip
    print(f"  {row['config']}: kernels {kernels:.0f} ms, compute idle {wall - kernels:.0f} ms "
          f"(waiting for copies), copy engine idle {wall - up:.0f} ms; ring {row['ring_depth']} "
          f"slots of chunk {row['msm_chunk']}", flush=True)  # fmt: skip
    limit = row["pool_limit_bytes"] / GIB if row["pool_limit_bytes"] else 0.0
    used = row["device_used_high_water_bytes"] / GIB
    print(f"  {row['config']}: pool high-water {row['pool_high_water_bytes'] / GIB:.2f} GiB "
          f"(limit {limit:.2f}) against the plan's peak {row['plan_peak_bytes'] / GIB:.2f} "
          f"GiB; device used {used:.2f} GiB (context included)", flush=True)  # fmt: skip


def bench_partition(
    log2: int,
    witness: str,
    budget: int,
    reps: int,
    flag_texts: tuple[str, ...] = (),
    link_gib_s: float | None = None,
) -> list[dict]:
    import cupy as cp
    from cuzk_sim.gpu.device import release_resident
    from cuzk_sim.gpu.flags import ProverFlags, with_texts
    from cuzk_sim.gpu.prover import PartitionShape, dry_run_plan
    from cuzk_sim.gpu.schedule import overlap
    from cuzk_sim.gpu.streaming import plan_peak, pool_limit, resolve_budget, stream_depth

    shape = PartitionShape.synthetic(log2, witness=witness)
    t0 = time.perf_counter()
    data = partition_data(shape)
    host = data.abc.nbytes + data.witness.nbytes
    host += sum(v.nbytes for v in (*data.key_points.values(), *data.scalars.values()))
    print(f"data 2^{log2} {witness}: {host / GIB:.1f} GiB pinned in "
          f"{time.perf_counter() - t0:.1f} s", flush=True)  # fmt: skip
    common = {"key_pinned": True, "pinned": True, "split_msm": True, "overlap_uploads": True}
    configs = {
        "streamed": ProverFlags(**common, vram_budget_bytes=budget),
        "resident": ProverFlags(**common, key_resident=True),
    }
    # --flag NAME=VALUE: applied to both configurations (any ProverFlags field)
    configs = {name: with_texts(flags, flag_texts) for name, flags in configs.items()}
    rows = []
    for name, flags in configs.items():
        plan = dry_run_plan(shape, flags)
        resolved = resolve_budget(shape, flags)
        depth = stream_depth(shape, resolved) if resolved.msm_chunk else 0
        htod = sum(s.bytes for s in plan.steps if s.op == "copy" and s.direction == "HtoD")
        o = overlap(plan)
        peak = plan_peak(plan)
        # the budgeted run's pool held to the plan's peak and the stated slack
        limit = pool_limit([peak]) if flags.vram_budget_bytes is not None else None
        if limit is not None:
            try:
                replayed = f"{replay_pool(plan, reps + 2, limit) / GIB:.3f} GiB"
            except MemoryError as e:
                replayed = f"over the limit: {e}"
            print(f"{name}: pool high-water predicted (the plan's allocs through a model of "
                  f"CuPy's pool, {reps + 2} partitions): {replayed}", flush=True)  # fmt: skip
        cp.get_default_memory_pool().free_all_blocks()
        walls, traced, watch, failed = _runs(shape, flags, data, reps, name, limit)
        if failed:  # say so, then measure without the limit
            print(failed, flush=True)
            cp.get_default_memory_pool().free_all_blocks()
            walls, traced, watch, _ = _runs(shape, flags, data, reps, name + " unlimited", None)
        split = _breakdown(traced)
        steady = walls[1:]
        row = {
            "what": "partition",
            "config": name,
            "log2": log2,
            "witness": witness,
            "msm_chunk": resolved.msm_chunk,
            "ring_depth": depth,
            "plan_peak_bytes": peak,
            "plan_htod_bytes": htod,
            "overlapped_bytes": o.overlapped_bytes,
            "gpu_s": statistics.median(g for g, _ in steady),
            "tails_s": statistics.median(t for _, t in steady),
            "first_gpu_s": walls[0][0],
            "traced_ms": split,
            "traced_total_ms": round(sum(split.values()), 1),
            "pool_limit_bytes": limit,
            "pool_limit_failed": failed,
            "pool_high_water_bytes": watch.pool,
            "device_used_high_water_bytes": watch.used,
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
        _split_lines(row, link_gib_s)
        release_resident()
        cp.get_default_memory_pool().free_all_blocks()
    return rows


def main() -> None:
    from cuzk_sim.io.units import parse_size

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="link,micro,split,partition")
    ap.add_argument("--log2", type=int, default=27)
    ap.add_argument("--budget", default="14 GiB")
    ap.add_argument("--witness", default="porep")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", default=None)
    ap.add_argument(
        "--flag",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="partition rows: applied to both configurations (repeatable; any ProverFlags "
        "field, e.g. split_msm=false)",
    )
    args = ap.parse_args()
    from cuzk_sim.gpu.flags import ProverFlags, with_texts

    try:
        with_texts(ProverFlags(), args.flag)
    except ValueError as e:
        ap.error(str(e))
    only = set(args.only.split(","))
    rows: list[dict] = []
    link = None
    if "link" in only:
        rows.append(bench_link(5))
        link = rows[-1]["gib_s"]
    if "micro" in only:
        rows += bench_micro(7)
    if "split" in only:
        rows += bench_split(5, args.witness)
        rows += bench_split(3, args.witness, 23, "g2")  # G2's shares: not measured before
    if "partition" in only:
        rows += bench_partition(
            args.log2, args.witness, parse_size(args.budget), args.reps, tuple(args.flag), link
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
