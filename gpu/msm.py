"""Pippenger multi-scalar multiplication sum_i s_i P_i on the GPU, G1 and G2.

Scalars are standard-form Fr limbs (n, 8); points affine Montgomery limbs. Every scratch
buffer is allocated through the `Device` with the stage's name, so the plan shows them.
Steps (kernels/msm.cu): counting sort of (window, digit) keys, one thread per bucket,
segmented bucket reduction, window sums, Horner over windows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from .device import Buffer, Device

Group = Literal["g1", "g2"]
SCALAR_BITS = 255
POINT_WORDS = {"g1": 24, "g2": 48}  # affine x | y, u32 words
SEGMENT_LEN = 16  # buckets per thread in the bucket reduction
TREE_FAN_IN = 8  # points summed per thread in each level of the tree (short serial chains)


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


def msm(
    dev: Device,
    stage: str,
    group: Group,
    points: Buffer,
    scalars: Buffer,
    n: int,
    scalar_offset_words: int = 0,
    phase_ms: dict[str, float] | None = None,
) -> np.ndarray | None:
    """sum_{i<n} s_i P_i as affine Montgomery limbs (host array; None in dry-run).
    phase_ms: if given, CUDA-event milliseconds of each phase are added to it (benchmarks)."""
    shape = MsmShape.of(group, n)
    bufs = {k: dev.alloc(f"{stage}.{k}", v) for k, v in shape.scratch().items()}

    def run() -> None:
        import cupy

        from .module import launch

        marks: list[tuple[str, object]] = []

        def mark(name: str) -> None:
            if phase_ms is not None:
                ev = cupy.cuda.Event()
                ev.record()
                marks.append((name, ev))

        mark("start")
        s = scalars.array[scalar_offset_words : scalar_offset_words + 8 * n]
        counts, starts = bufs["counts"].array, bufs["starts"].array
        c, nw = np.int32(shape.c), np.int32(shape.windows)
        counts.fill(0)
        launch("msm.cu", "msm_count", n * shape.windows, s, counts, np.int64(n), c, nw)
        starts[0] = 0
        cupy.cumsum(counts[: shape.buckets], out=starts[1 : shape.buckets + 1])
        counts[: shape.buckets] = starts[: shape.buckets]  # counts becomes the cursor
        launch(
            "msm.cu",
            "msm_scatter",
            n * shape.windows,
            s,
            counts,
            bufs["order"].array,
            np.int64(n),
            c,
            nw,
        )
        mark("sort")
        launch(
            "msm.cu",
            f"{group}_bucket_acc",
            shape.buckets,
            points.array,
            bufs["order"].array,
            starts,
            bufs["buckets"].array,
            np.int64(shape.buckets),
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
        src, per = "segments", shape.segments
        while per > 1:  # tree sum over each window's segments, ping-pong segments <-> tree
            fan = min(TREE_FAN_IN, per)
            per //= fan
            dst = "windows" if per == 1 else ("tree" if src == "segments" else "segments")
            groups = shape.windows * per
            launch(
                "msm.cu",
                f"{group}_group_sum",
                groups,
                bufs[src].array,
                bufs[dst].array,
                np.int64(groups),
                np.int32(fan),
                threads=64,
            )
            src = dst
        if shape.segments == 1:
            bufs["windows"].array[:] = bufs["segments"].array[: bufs["windows"].array.size]
        launch(
            "msm.cu",
            f"{group}_horner",
            1,
            bufs["windows"].array,
            bufs["result"].array,
            nw,
            threads=32,
        )
        mark("tree_horner")
        if phase_ms is not None:
            marks[-1][1].synchronize()
            for (_, a), (name, b) in zip(marks, marks[1:], strict=False):
                phase_ms[name] = phase_ms.get(name, 0.0) + cupy.cuda.get_elapsed_time(a, b)

    dev.kernel(stage, f"msm_{group}", n, run)
    out = dev.copy_dtoh(f"{stage}.result", bufs["result"], POINT_WORDS[group])
    for name in reversed(list(bufs)):
        dev.free(f"{stage}.{name}")
    return out
