"""Synthetic proving keys made on the GPU, straight into host memory (pinned or pageable).

A synthetic key has the shape of a real one -- per MSM stage its own points, as many as
the stage's MSM -- so that the host holds what a real prover holds (the model charges
`key_points_bytes(shape)` of pinned memory once). Its points are random multiples s G of
the generator: valid curve points, pairwise distinct, whose MSMs do the work of a real
key's (no proof over them verifies: the verify mode proves a reference circuit with the
reference setup's key instead, `pipeline.reference_data`).

How: a fixed-base comb (kernels/keygen.cu): a table of d 2^(8 w) G for the 16 bytes of a
128-bit scalar, so a point costs at most 16 mixed additions, and one inversion per eight
points (Montgomery's trick) makes them affine. The scalars come from a counter (splitmix64
of seed + 2k, seed + 2k + 1), so a point is reproducible from its index alone:
`key_scalar` gives it on the host, and each key's first point per group is checked
against py_ecc before the key is used. Points go down in chunks into the host array,
which is allocated once (no host copy: peak host memory is the key itself).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

POINT_WORDS = {"g1": 24, "g2": 48}  # affine x | y, u32 words (as gpu/msm.py)
TABLE_WINDOWS = 16  # bytes of the 128-bit scalar
CHUNK_POINTS = 1 << 22  # points per kernel launch and device-to-host copy
MASK64 = (1 << 64) - 1
# one seed per stage: the stages' points differ (a real key's queries do)
STAGE_SEEDS = {
    "msm_h": 0x1000,
    "msm_a": 0x2000,
    "msm_b_g1": 0x3000,
    "msm_b_g2": 0x4000,
    "msm_l": 0x5000,
}


def splitmix64(x: int) -> int:
    """SplitMix64's output for state x (Steele, Lea, Flood 2014): one step of the
    generator, as kernels/keygen.cu computes it."""
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def key_scalar(seed: int, k: int) -> int:
    """The scalar of point k of a key stage with `seed`: lo + 2^64 hi, lo odd (never 0)."""
    lo = splitmix64((seed + 2 * k) & MASK64) | 1
    hi = splitmix64((seed + 2 * k + 1) & MASK64)
    return lo | hi << 64


@functools.cache
def table_limbs(group: str) -> np.ndarray:
    """(16 x 256, words) affine Montgomery limbs of d 2^(8 w) G, the comb table (row 256 w
    is infinity, unused), by additions on the host (py_ecc, ~1 s for G2)."""
    import py_ecc.optimized_bls12_381 as bls

    from . import encoding

    base = bls.G1 if group == "g1" else bls.G2
    points = []
    for _ in range(TABLE_WINDOWS):
        acc = bls.Z1 if group == "g1" else bls.Z2
        for _ in range(256):
            points.append(acc)
            acc = bls.add(acc, base)
        base = acc  # 256 2^(8 w) G
    to_limbs = encoding.g1_to_limbs if group == "g1" else encoding.g2_to_limbs
    out = to_limbs(points)
    out.setflags(write=False)
    return out


def key_bytes(sizes: Mapping[str, tuple[str, int]]) -> int:
    """Host bytes of a key with these stages (stage -> (group, points))."""
    return sum(4 * POINT_WORDS[g] * n for g, n in sizes.values())


@dataclass
class KeyStats:
    """How a key was made: seconds allocating host memory and generating, the method."""

    bytes: int = 0
    alloc_s: float = 0.0
    generate_s: float = 0.0
    method: str = "fixed-base"
    notes: list[str] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        return self.alloc_s + self.generate_s


def host_array(rows: int, words: int, pinned: bool) -> np.ndarray:
    """(rows, words) uint32 in host memory; pinned (and not empty): `pinned_empty`."""
    if not pinned or rows * words == 0:
        return np.empty((rows, words), dtype=np.uint32)
    return pinned_empty((rows, words), np.uint32)


def pinned_empty(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """An array in one cudaHostAlloc of exactly its bytes: what the dry run's
    `key_points.pinned.*` buffers record. CuPy's pinned pool, behind cupyx.empty_pinned,
    rounds every allocation up to a power of two (a 12 GiB stage of a 2^27 key would lock
    16 GiB, the whole key 96 GiB for 72); an empty array still comes from it (no bytes,
    and it counts as pinned: `device.host_is_pinned`)."""
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    if nbytes == 0:
        import cupyx

        return cupyx.empty_pinned(shape, dtype)
    import cupy

    portable = 1  # cudaHostAllocPortable: pinned for every context (every GPU's workers)
    mem = cupy.cuda.PinnedMemory(nbytes, portable)
    return np.ndarray(shape, dtype, cupy.cuda.PinnedMemoryPointer(mem, 0))


def allocate_in_order(
    sizes: Mapping[str, tuple[str, int]],
    alloc: Callable[[int, int], np.ndarray],
) -> Iterator[tuple[str, np.ndarray, float]]:
    """Each stage's host array, allocated one after another on a helper thread, yielded
    in stage order as each is ready with the seconds the caller waited for it: the
    page-locking of the next stages (the driver's, ~1 GiB/s on the H200's host) runs
    while the caller fills the stages before them."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1, thread_name_prefix="keygen-alloc") as pool:
        futures = [
            (stage, pool.submit(alloc, n, POINT_WORDS[g])) for stage, (g, n) in sizes.items()
        ]
        for stage, fut in futures:
            t = time.perf_counter()
            arr = fut.result()
            yield stage, arr, time.perf_counter() - t


def _table(group: str) -> Any:
    """The comb table of `group` on the device."""
    import cupy as cp

    return cp.asarray(table_limbs(group))


def _check(group: str, host: np.ndarray, seed: int, first: int) -> None:
    """Point `first` of a freshly made stage equals key_scalar(seed, first) G (py_ecc);
    RuntimeError if not."""
    import py_ecc.optimized_bls12_381 as bls

    from . import encoding

    g = bls.G1 if group == "g1" else bls.G2
    want = bls.normalize(bls.multiply(g, key_scalar(seed, first)))
    row = host[0]
    got = encoding.g1_from_limbs(row) if group == "g1" else encoding.g2_from_limbs(row)
    if bls.normalize(got) != want:
        raise RuntimeError(f"keygen.cu {group}_fixed_base: point {first} is not s G (py_ecc)")


def make_key_points(
    sizes: Mapping[str, tuple[str, int]],
    pinned: bool,
    progress: Callable[[int], None] | None = None,
) -> tuple[dict[str, np.ndarray], KeyStats]:
    """Per stage (stage -> (group, points)) a host array of distinct GPU-made points, in
    page-locked memory when `pinned`; `progress(points)` after each chunk. The device
    memory it used (the tables, one chunk) is returned to the driver. Where the kernel
    fails (it does not compile, or its first point is not s G), the comb table's points
    are tiled instead (`KeyStats.method` "tiled", the reason in `notes`)."""
    stats = KeyStats(bytes=key_bytes(sizes))
    t = time.perf_counter()
    host: dict[str, np.ndarray] = {}
    fill = _FixedBase(sizes)
    for stage, arr, waited in allocate_in_order(sizes, lambda n, w: host_array(n, w, pinned)):
        stats.alloc_s += waited
        host[stage] = arr
        group = sizes[stage][0]
        try:
            if fill.error is None:
                fill.stage(stage, arr, progress)
        except Exception as e:  # the kernel does not compile or is wrong here: tile
            fill.error = e
            stats.method = "tiled"
            stats.notes.append(f"fixed-base generation failed ({type(e).__name__}: {e})")
        if fill.error is not None:
            _tile(arr, table_limbs(group))
    fill.close()
    stats.generate_s = time.perf_counter() - t - stats.alloc_s
    return host, stats


def _tile(out: np.ndarray, rows: np.ndarray) -> None:
    """Fill `out` with copies of `rows` (the fallback: valid points, not distinct)."""
    for start in range(0, out.shape[0], rows.shape[0]):
        m = min(rows.shape[0], out.shape[0] - start)
        out[start : start + m] = rows[:m]


class _FixedBase:
    """Fills stage arrays with their points, chunk by chunk on the GPU (kernels/keygen.cu),
    checking each stage's first point against py_ecc; `close` gives the device memory
    (tables, one chunk buffer per group) back to the driver."""

    def __init__(self, sizes: Mapping[str, tuple[str, int]]) -> None:
        self.sizes = sizes
        self.tables: dict[str, Any] = {}
        self.buf: dict[str, Any] = {}
        self.error: Exception | None = None

    def stage(self, stage: str, out: np.ndarray, progress: Callable[[int], None] | None) -> None:
        import cupy as cp

        from .module import launch

        group, count = self.sizes[stage]
        if group not in self.tables:
            self.tables[group] = _table(group)
        seed = STAGE_SEEDS.get(stage, 0x9000 + len(stage))
        words = POINT_WORDS[group]
        k = 8 if group == "g1" else 4  # points per thread (one inversion each)
        for start in range(0, count, CHUNK_POINTS):
            m = min(CHUNK_POINTS, count - start)
            d = self.buf.get(group)
            if d is None or d.shape[0] < m:
                d = self.buf[group] = cp.empty((m, words), dtype=cp.uint32)
            launch(
                "keygen.cu",
                f"{group}_fixed_base",
                -(-m // k),
                self.tables[group],
                d,
                np.int64(m),
                np.int64(start),
                np.uint64(seed),
                threads=128,
            )
            d[:m].get(out=out[start : start + m])
            if start == 0:
                _check(group, out, seed, 0)
            if progress is not None:
                progress(m)

    def close(self) -> None:
        if not self.tables and not self.buf:
            return
        import cupy as cp

        cp.cuda.Device().synchronize()
        self.tables.clear()
        self.buf.clear()
        cp.get_default_memory_pool().free_all_blocks()


def make_key_with_progress(
    sizes: Mapping[str, tuple[str, int]], pinned: bool, label: str
) -> tuple[dict[str, np.ndarray], KeyStats]:
    """make_key_points with a progress bar on stderr (rich; shown on a terminal)."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    total = sum(n for _, n in sizes.values())
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=total)
        return make_key_points(sizes, pinned, lambda m: bar.advance(task, m))
