"""Pippenger multi-scalar multiplication sum_i s_i P_i on the GPU, G1 and G2.

Scalars are standard-form Fr limbs (n, 8); points affine Montgomery limbs. Every scratch
buffer is allocated through the `Device` with the stage's name, so the plan shows them.
Two algorithms (`algo`; the prover's ProverFlags.msm_algo):
- `signed` (the default, kernels/msm_signed.cu): signed digits (2^(c-1) buckets per
  window), counting sort, balanced accumulation (every thread adds the same number of
  sorted points, pieces of buckets that cross threads summed after), segmented reduction,
  tree, Horner over the windows on the host (gpu/msm_tail.py); optionally over precomputed
  bases 2^(w c) P_i (`table`), which leaves one bucket set and no doublings (its sum
  copied to the result on the device).
- `unsigned` (kernels/msm.cu): unsigned digits, one thread per bucket: the MSM family's
  baseline, kept for side-by-side benchmarks (benchmarks/gpu_bench.py column `unsigned`).
The variants measured against these and retired (issue 29: the device Horner
$CUZK_MSM_TAIL=device, the one-set sum through the host, the affine batch accumulation
ACC_AFFINE=1, $CUZK_MSM_ALGO) are in docs/benchmarks.md and its history.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .bucket_scan import bucket_starts, spare_of
from .device import Buffer, Device
from .flags import MsmAlgo

Group = Literal["g1", "g2"]
SIGNED_BITS = 256  # 255-bit scalars plus the carry of the signed recoding
MAX_ACC_THREADS = 1 << 18  # accumulation threads (bounds the slots buffer at any size)
MIN_ACC_CHUNK = 32  # sorted points per accumulation thread, at least
LEVEL_FAN_IN = 16  # slots per thread in each level that sums the pieces of crossing buckets
SCALAR_BITS = 255
POINT_WORDS = {"g1": 24, "g2": 48}  # affine x | y, u32 words
SEGMENT_LEN = 16  # buckets per thread in the bucket reduction
# points summed per thread in each level of the tree: 2, so the serial chain is log2(segments)
# dependent additions (15 for one set of 2^19 buckets), one per level, not 5 levels x 7 at 8:
# the few threads of the last levels leave the GPU idle, so each addition costs its latency
TREE_FAN_IN = 2


@dataclass(frozen=True)
class MsmShape:
    """The window layout of one MSM of n points: everything its buffers' sizes depend on."""

    group: Group
    n: int
    c: int  # window bits
    windows: int
    segments: int  # segments per window in the bucket reduction

    @classmethod
    def of(cls, group: Group, n: int) -> MsmShape:
        target = max(4, min(16, n.bit_length() - 4))
        windows = -(-SCALAR_BITS // target)
        c = -(-SCALAR_BITS // windows)  # widths c or c - 1, spread evenly (kernels/msm.cu)
        segments = max(1, (1 << c) // SEGMENT_LEN)
        return cls(group, n, c, windows, segments)

    @property
    def buckets(self) -> int:
        return self.windows << self.c

    @property
    def jacobian_words(self) -> int:
        return POINT_WORDS[self.group] * 3 // 2

    def scratch(self) -> dict[str, int]:
        """Buffer suffix -> bytes, in allocation order."""
        return {
            "counts": 4 * (self.buckets + 1),
            "starts": 4 * (self.buckets + 1),
            "order": 4 * max(1, self.n * self.windows),
            "buckets": 4 * self.buckets * self.jacobian_words,
            "segments": 4 * self.windows * self.segments * self.jacobian_words,
            "tree": 4 * self.windows * max(1, self.segments // TREE_FAN_IN) * self.jacobian_words,
            "windows": 4 * self.windows * self.jacobian_words,
            "result": 4 * POINT_WORDS[self.group],
        }


@dataclass(frozen=True)
class SignedShape:
    """Layout of one signed-digit MSM of n points: windows of c bits (windows c >= 256),
    `sets` bucket sets of 2^(c-1) buckets (one per window; one in all with precomputed
    bases), accumulation in `acc_threads` threads of `acc_chunk` sorted points each."""

    group: Group
    n: int
    c: int
    windows: int
    precomputed: bool
    acc_chunk: int
    acc_threads: int

    @classmethod
    def of(cls, group: Group, n: int, precomputed: bool = False) -> SignedShape:
        bits = n.bit_length()
        # one bucket set (precomputed): wider windows cost 2^(c-1) buckets once, not per
        # window; c = ceil(log2 n) up to 20 (2^20 - 1 points too: 13 tables, not 14 at c = 19)
        c = max(4, min(20, (n - 1).bit_length())) if precomputed else max(4, min(16, bits - 4))
        windows = -(-SIGNED_BITS // c)
        if precomputed and n * windows >= 1 << 31:
            raise ValueError(f"precomputed MSM of {n} points x {windows} tables: index > 2^31")
        entries = max(1, n * windows)
        chunk = max(MIN_ACC_CHUNK, -(-entries // MAX_ACC_THREADS))
        return cls(group, n, c, windows, precomputed, chunk, -(-entries // chunk))

    @property
    def sets(self) -> int:
        return 1 if self.precomputed else self.windows

    @property
    def tables(self) -> int:
        return self.windows if self.precomputed else 1

    @property
    def per_set(self) -> int:
        return 1 << (self.c - 1)

    @property
    def buckets(self) -> int:
        return self.sets * self.per_set

    @property
    def segments(self) -> int:
        return max(1, self.per_set // SEGMENT_LEN)

    @property
    def jacobian_words(self) -> int:
        return POINT_WORDS[self.group] * 3 // 2

    def level_slots(self, level: int) -> int:
        """Slots out of accumulation level `level` (0: the accumulation itself, 2 per thread;
        each later level: 2 per LEVEL_FAN_IN slots of the level before)."""
        slots = 2 * self.acc_threads
        for _ in range(level):
            slots = 2 * -(-slots // LEVEL_FAN_IN)
        return slots

    def levels(self) -> int:
        """Levels after the accumulation: until one thread takes every slot."""
        k = 0
        while self.level_slots(k) > LEVEL_FAN_IN:
            k += 1
        return k + 1

    def table_bytes(self) -> int:
        """Device bytes of the precomputed bases (tables x n affine points)."""
        return 4 * POINT_WORDS[self.group] * self.n * self.windows

    def scratch(self) -> dict[str, int]:
        """Buffer suffix -> bytes, in allocation order."""
        jw = self.jacobian_words
        return {
            "counts": 4 * (self.buckets + 1),
            "starts": 4 * (self.buckets + 1),
            "order": 4 * max(1, self.n * self.windows),
            "buckets": 4 * self.buckets * jw,
            "slots": 4 * 2 * self.acc_threads * jw,
            "slot_keys": 4 * 2 * 2 * self.acc_threads,
            "slots2": 4 * self.level_slots(1) * jw,
            "slot_keys2": 4 * 2 * self.level_slots(1),
            "segments": 4 * self.sets * self.segments * jw,
            "tree": 4 * self.sets * max(1, self.segments // TREE_FAN_IN) * jw,
            "windows": 4 * self.sets * jw,
            "result": 4 * jw,  # Jacobian; jacobian_to_affine on the host
        }


@dataclass(frozen=True)
class WindowSums:
    """A signed MSM's result before its Horner: the window sums S_j (Jacobian Montgomery
    limbs, window 0 first) of c-bit windows. Small and picklable (G1 2^20: 2.3 KiB), so it
    can cross to another process; `point()` = sum_j 2^(j c) S_j as affine Montgomery limbs,
    what `msm` returns without `defer`."""

    group: Group
    c: int
    words: np.ndarray

    def point(self) -> np.ndarray:
        from .msm_tail import horner

        return jacobian_to_affine(self.group, horner(self.group, self.words, self.c))


def jacobian_to_affine(group: Group, words: np.ndarray) -> np.ndarray:
    """Affine Montgomery limbs (as the unsigned MSM returns) of a Jacobian Montgomery point:
    one inversion in Python ints instead of a serial chain of products in one GPU thread."""
    from cuzk_sim.reference.field import Q

    from .encoding import FQ_MONT, FQ_MONT_INV, ints_to_limbs, limbs_to_ints

    k = 1 if group == "g1" else 2
    v = [c * FQ_MONT_INV % Q for c in limbs_to_ints(words.reshape(3 * k, 12))]
    x, y, z = v[:k], v[k : 2 * k], v[2 * k :]
    if not any(z):
        return np.zeros(POINT_WORDS[group], dtype=np.uint32)

    def mul(a: list[int], b: list[int]) -> list[int]:  # Fq or Fq2 = Fq[u]/(u^2 + 1)
        if k == 1:
            return [a[0] * b[0] % Q]
        return [(a[0] * b[0] - a[1] * b[1]) % Q, (a[0] * b[1] + a[1] * b[0]) % Q]

    if k == 1:
        zi = [pow(z[0], -1, Q)]
    else:
        norm = pow((z[0] * z[0] + z[1] * z[1]) % Q, -1, Q)
        zi = [z[0] * norm % Q, -z[1] * norm % Q]
    zi2 = mul(zi, zi)
    coords = mul(x, zi2) + mul(y, mul(zi2, zi))
    return ints_to_limbs([c * FQ_MONT % Q for c in coords], 12).reshape(-1)


def msm(
    dev: Device,
    stage: str,
    group: Group,
    points: Buffer,
    scalars: Buffer,
    n: int,
    scalar_offset_words: int = 0,
    phase_ms: dict[str, float] | None = None,
    algo: MsmAlgo = "signed",
    table: Buffer | None = None,
    defer: bool = False,
    expect: tuple[int, int] | None = None,
) -> np.ndarray | WindowSums | None:
    """sum_{i<n} s_i P_i as affine Montgomery limbs (host array; None in dry-run).
    expect: (zeros, ones) the plan expects among the n scalars (the witness shape's;
    None: random), recorded on the kernel step for the model's price.
    phase_ms: if given, CUDA-event milliseconds of each phase are added to it (benchmarks).
    algo: "signed", or the baseline "unsigned" (module docstring). table: precomputed bases
    of `points` (`precompute_table`; signed only). defer (signed): return the window sums
    (`WindowSums`, whose `point()` is the result) instead of running the Horner here, so
    that the caller can run it elsewhere -- the pipeline runs it in the assembler process,
    outside the GPU section and off the worker threads (no Python arithmetic holding the GIL
    beside the launches)."""
    if algo == "signed":
        return _msm_signed(
            dev, stage, group, points, scalars, n, scalar_offset_words, phase_ms, table, defer,
            expect=expect,
        )  # fmt: skip
    if table is not None:
        raise ValueError("precomputed bases need algo='signed'")
    return _msm_unsigned(
        dev, stage, group, points, scalars, n, scalar_offset_words, phase_ms, expect
    )


class _Marks:
    """CUDA events between phases (only when phase_ms is asked for)."""

    def __init__(self, phase_ms: dict[str, float] | None) -> None:
        self.phase_ms, self.marks = phase_ms, []

    def __call__(self, name: str) -> None:
        if self.phase_ms is not None:
            import cupy

            ev = cupy.cuda.Event()
            ev.record()
            self.marks.append((name, ev))

    def collect(self) -> None:
        if self.phase_ms is None:
            return
        import cupy

        self.marks[-1][1].synchronize()
        for (_, a), (name, b) in zip(self.marks, self.marks[1:], strict=False):
            self.phase_ms[name] = self.phase_ms.get(name, 0.0) + cupy.cuda.get_elapsed_time(a, b)


def _tree(group: Group, bufs: dict[str, Buffer], sets: int, segments: int, kernel: str) -> None:
    """Sum each set's segments into `windows` (fan-in TREE_FAN_IN levels, ping-pong)."""
    from .module import launch

    src, per = "segments", segments
    file = "msm_signed.cu" if kernel == "sum_groups" else "msm.cu"
    while per > 1:
        fan = min(TREE_FAN_IN, per)
        per //= fan
        dst = "windows" if per == 1 else ("tree" if src == "segments" else "segments")
        groups = sets * per
        launch(
            file,
            f"{group}_{kernel}",
            groups,
            bufs[src].array,
            bufs[dst].array,
            np.int64(groups),
            np.int32(fan),
            threads=64,
        )
        src = dst
    if segments == 1:
        bufs["windows"].array[:] = bufs["segments"].array[: bufs["windows"].array.size]


def _signed_sort(
    shape: SignedShape, bufs: dict[str, Buffer], s: Any, sel: Any, use_sel: Any, k: int, n: int
) -> None:
    """The signed MSM's counting sort: each window's digits counted per bucket, the
    buckets' starts (a prefix sum), the entries scattered into `order`."""

    from .module import launch

    f = "msm_signed.cu"
    counts, starts = bufs["counts"].array, bufs["starts"].array
    nb = shape.buckets
    c, nw, g = np.int32(shape.c), np.int32(shape.windows), np.int32(shape.sets)
    counts.fill(0)
    launch(f, "signed_count", k, s, counts, np.int64(k), c, nw, g, sel, use_sel)
    bucket_starts(counts, starts, nb, spare_of(bufs))
    counts[:nb] = starts[:nb]  # counts becomes the cursor
    order = bufs["order"].array
    scatter = (np.int64(k), c, nw, g, sel, use_sel, np.int64(n))
    launch(f, "signed_scatter", k, s, counts, order, *scatter)


def _signed_accumulate(
    group: Group, shape: SignedShape, bufs: dict[str, Buffer], base: Any
) -> None:
    """The signed MSM's bucket accumulation: the balanced first level, the
    levels that sum the pieces of buckets crossing threads, the empty buckets zeroed."""
    from .module import launch

    f = "msm_signed.cu"
    starts, nb = bufs["starts"].array, shape.buckets
    slots = [bufs["slots"].array, bufs["slots2"].array]
    keys = [bufs["slot_keys"].array, bufs["slot_keys2"].array]
    acc_args = (base, bufs["order"].array, starts, np.int64(nb), np.int64(shape.acc_chunk))
    acc_args += (bufs["buckets"].array, slots[0], keys[0], np.int64(shape.acc_threads))
    launch(f, f"{group}_acc_balanced", shape.acc_threads, *acc_args, threads=128)
    for level in range(shape.levels()):  # ping-pong slots <-> slots2
        n_in = shape.level_slots(level)
        threads = -(-n_in // LEVEL_FAN_IN)
        src, dst = level % 2, 1 - level % 2
        launch(
            f,
            f"{group}_acc_level",
            threads,
            slots[src],
            keys[src],
            np.int64(n_in),
            np.int64(LEVEL_FAN_IN),
            np.int64(nb),
            bufs["buckets"].array,
            slots[dst],
            keys[dst],
            np.int64(threads),
            threads=64,
        )
    launch(f, f"{group}_acc_empty", nb, starts, np.int64(nb), bufs["buckets"].array)


def _msm_signed(
    dev: Device,
    stage: str,
    group: Group,
    points: Buffer,
    scalars: Buffer,
    n: int,
    scalar_offset_words: int,
    phase_ms: dict[str, float] | None,
    table: Buffer | None,
    defer: bool = False,
    select: tuple[Buffer, int, int] | None = None,
    planned: int | None = None,
    expect: tuple[int, int] | None = None,
) -> np.ndarray | WindowSums | None:
    """`select` = (index, start, k): only the k entries index[start:start + k] (positions
    of scalar and point) take part, the rest of a split MSM (gpu/msm_split.py); buffers
    stay sized for n. `planned`: the kernel size the plan prices (default n). `expect`:
    (zeros, ones) the plan expects among them (`msm`)."""
    shape = SignedShape.of(group, n, precomputed=table is not None)
    bufs = {k: dev.alloc(f"{stage}.{k}", v) for k, v in shape.scratch().items()}

    def run() -> None:
        from .module import launch

        mark = _Marks(phase_ms)
        mark("start")
        f = "msm_signed.cu"
        s = scalars.array[scalar_offset_words : scalar_offset_words + 8 * n]
        k, sel, use_sel = n, s, np.int32(0)
        if select is not None:
            k, use_sel = select[2], np.int32(1)
            sel = select[0].array[select[1] : select[1] + max(1, k)]
            if k == 0:  # nothing but zeros and ones: every window sum is infinity (Z = 0)
                bufs["windows"].array.fill(0)
                return
        c, g = np.int32(shape.c), np.int32(shape.sets)
        _signed_sort(shape, bufs, s, sel, use_sel, k, n)
        mark("sort")
        base = table.array if table is not None else points.array
        _signed_accumulate(group, shape, bufs, base)
        mark("bucket_acc")
        launch(
            f,
            f"{group}_set_reduce",
            shape.sets * shape.segments,
            bufs["buckets"].array,
            bufs["segments"].array,
            c,
            g,
            np.int32(shape.segments),
            threads=64,
        )
        mark("bucket_reduce")
        _tree(group, bufs, shape.sets, shape.segments, "sum_groups")
        if shape.sets == 1 and not defer:  # one set: its sum is the result, no host trip
            bufs["result"].array[:] = bufs["windows"].array[: bufs["result"].array.size]
        elif not defer:  # same result in the same buffer: same plan
            from .msm_tail import horner

            window_sums = bufs["windows"].array.get()
            bufs["result"].array.set(horner(group, window_sums, shape.c))
        mark("tree_horner")
        mark.collect()

    dev.kernel(stage, f"msm_{group}", n if planned is None else planned, run, scalars=expect)
    jw = shape.jacobian_words
    src, words = (bufs["windows"], shape.sets * jw) if defer else (bufs["result"], jw)
    out = dev.copy_dtoh(f"{stage}.result", src, words)
    for name in reversed(list(bufs)):
        dev.free(f"{stage}.{name}")
    if out is None:
        return None
    return WindowSums(group, shape.c, out) if defer else jacobian_to_affine(group, out)


def _msm_unsigned(
    dev: Device,
    stage: str,
    group: Group,
    points: Buffer,
    scalars: Buffer,
    n: int,
    scalar_offset_words: int,
    phase_ms: dict[str, float] | None,
    expect: tuple[int, int] | None = None,
) -> np.ndarray | None:
    shape = MsmShape.of(group, n)
    bufs = {k: dev.alloc(f"{stage}.{k}", v) for k, v in shape.scratch().items()}

    def run() -> None:

        from .module import launch

        mark = _Marks(phase_ms)
        mark("start")
        s = scalars.array[scalar_offset_words : scalar_offset_words + 8 * n]
        counts, starts = bufs["counts"].array, bufs["starts"].array
        c, nw, nb = np.int32(shape.c), np.int32(shape.windows), shape.buckets
        counts.fill(0)
        launch("msm.cu", "msm_count", n * shape.windows, s, counts, np.int64(n), c, nw)
        bucket_starts(counts, starts, nb, spare_of(bufs))
        counts[:nb] = starts[:nb]  # counts becomes the cursor
        order = bufs["order"].array
        launch("msm.cu", "msm_scatter", n * shape.windows, s, counts, order, np.int64(n), c, nw)
        mark("sort")
        launch(
            "msm.cu",
            f"{group}_bucket_acc",
            nb,
            points.array,
            order,
            starts,
            bufs["buckets"].array,
            np.int64(nb),
            threads=128,
        )
        mark("bucket_acc")
        launch(
            "msm.cu",
            f"{group}_bucket_reduce",
            shape.windows * shape.segments,
            bufs["buckets"].array,
            bufs["segments"].array,
            c,
            nw,
            np.int32(shape.segments),
            threads=64,
        )
        mark("bucket_reduce")
        _tree(group, bufs, shape.windows, shape.segments, "group_sum")
        result = bufs["result"].array
        launch("msm.cu", f"{group}_horner", 1, bufs["windows"].array, result, nw, threads=32)
        mark("tree_horner")
        mark.collect()

    dev.kernel(stage, f"msm_{group}", n, run, scalars=expect)
    out = dev.copy_dtoh(f"{stage}.result", bufs["result"], POINT_WORDS[group])
    for name in reversed(list(bufs)):
        dev.free(f"{stage}.{name}")
    return out
