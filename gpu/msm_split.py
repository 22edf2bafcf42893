"""The split MSM: sum_i s_i P_i with the bit-valued scalars apart (ProverFlags.split_msm).

A hash-heavy witness is mostly 0 and 1 (gpu/witness_shape.py: SHA-256 has no other aux
value). Pippenger sorts every scalar through every window; here
1. `split_scalars` (kernels/msm_signed.cu) puts the positions of the scalars equal to 1 at
   the front of one index buffer and those of the rest (not 0, not 1) at its back, with
   their counts; zeros go nowhere;
2. the ones: their points summed by plain mixed additions, as one bucket of the balanced
   accumulation (the same `*_acc_balanced` / `*_acc_level` kernels over the front of the
   index: every thread adds the same number of points, whatever the count);
3. the rest: the signed Pippenger over the back of the index (`signed_count` /
   `signed_scatter` read scalar and point through it).
The result is two partial sums whose sum is the MSM: the ones' (one Jacobian point) and
the rest's (window sums), both `WindowSums`, finished on the host like any chunk's.

The plan is fixed by the shape, not the witness: index buffers hold n entries, the
kernels' sizes are the shape's expected counts (WitnessShape.split: the ones' sum a
`batch_add_g1` / `_g2` step of `ones` points, the rest an MSM of `rest` random scalars),
and the counts come back in a 12-byte copy (`<stage>.split_counts`) before the rest is
launched.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .device import Buffer, Device
from .msm import LEVEL_FAN_IN, MAX_ACC_THREADS, MIN_ACC_CHUNK, POINT_WORDS, Group, WindowSums


@dataclass(frozen=True)
class OnesShape:
    """The accumulation of up to n ones into one bucket: `threads` threads of `chunk`
    sorted points each, then levels of LEVEL_FAN_IN slots until one thread holds all."""

    group: Group
    n: int

    @property
    def chunk(self) -> int:
        return max(MIN_ACC_CHUNK, -(-max(1, self.n) // MAX_ACC_THREADS))

    @property
    def threads(self) -> int:
        return -(-max(1, self.n) // self.chunk)

    def level_slots(self, level: int) -> int:
        slots = 2 * self.threads
        for _ in range(level):
            slots = 2 * -(-slots // LEVEL_FAN_IN)
        return slots

    def levels(self) -> int:
        k = 0
        while self.level_slots(k) > LEVEL_FAN_IN:
            k += 1
        return k + 1

    def scratch(self) -> dict[str, int]:
        """Buffer suffix -> bytes, in allocation order."""
        jw = POINT_WORDS[self.group] * 3 // 2
        return {
            "ones.bucket": 4 * jw,
            "ones.slots": 4 * 2 * self.threads * jw,
            "ones.slot_keys": 4 * 2 * 2 * self.threads,
            "ones.slots2": 4 * self.level_slots(1) * jw,
            "ones.slot_keys2": 4 * 2 * self.level_slots(1),
        }


def split_buffers(n: int) -> dict[str, int]:
    """The split's own buffers: the index (n positions) and the counts [0, ones, rest]."""
    return {"split_index": 4 * max(1, n), "split_counts": 4 * 3}


def msm_split(
    dev: Device,
    stage: str,
    group: Group,
    points: Buffer,
    scalars: Buffer,
    n: int,
    scalar_offset_words: int,
    expected: tuple[int, int, int],
) -> list[WindowSums | None]:
    """[the ones' sum, the rest's window sums] of sum_{i<n} s_i P_i (None in dry-run).
    `expected`: (zeros, ones, rest) the plan prices (WitnessShape.split(n))."""
    from .msm import _msm_signed

    own = {k: dev.alloc(f"{stage}.{k}", v) for k, v in split_buffers(n).items()}
    ones = OnesShape(group, n)
    acc = {k: dev.alloc(f"{stage}.{k}", v) for k, v in ones.scratch().items()}
    index, counts = own["split_index"].array, own["split_counts"].array

    def classify() -> None:
        from .module import launch

        s = scalars.array[scalar_offset_words : scalar_offset_words + 8 * n]
        counts.fill(0)
        launch("msm_signed.cu", "split_scalars", n, s, np.int64(n), index, counts)

    dev.kernel(f"{stage}.split", "pointwise", n, classify)
    dev.kernel(  # a batch addition of the ones' points: the profile's batch_add_g1 / _g2
        f"{stage}.ones",
        f"batch_add_{group}",
        expected[1],
        lambda: _sum_ones(group, points, index, counts, ones, acc),
    )
    jw = POINT_WORDS[group] * 3 // 2
    ones_sum = dev.copy_dtoh(f"{stage}.ones.result", acc["ones.bucket"], jw)
    got = dev.copy_dtoh(f"{stage}.split_counts", own["split_counts"], 3)
    for name in reversed(list(acc)):
        dev.free(f"{stage}.{name}")
    n_rest = int(got[2]) if got is not None else expected[2]
    select = (own["split_index"], n - n_rest, n_rest)
    rest = _msm_signed(
        dev,
        stage,
        group,
        points,
        scalars,
        n,
        scalar_offset_words,
        None,
        None,
        defer=True,
        select=select,
        planned=expected[2],
    )
    for name in reversed(list(own)):
        dev.free(f"{stage}.{name}")
    if ones_sum is None:
        return [None, None]
    return [WindowSums(group, 1, ones_sum), rest]  # type: ignore[list-item]


def _sum_ones(
    group: Group,
    points: Buffer,
    index: object,
    counts: object,
    ones: OnesShape,
    acc: dict[str, Buffer],
) -> None:
    """The points at index[0:counts[1]] summed into acc['ones.bucket']: one bucket of the
    balanced accumulation, starts = counts[0:2] = [0, ones] (read on the device)."""
    from .module import launch

    f = "msm_signed.cu"
    bucket = acc["ones.bucket"].array
    slots = [acc["ones.slots"].array, acc["ones.slots2"].array]
    keys = [acc["ones.slot_keys"].array, acc["ones.slot_keys2"].array]
    launch(
        f,
        f"{group}_acc_balanced",
        ones.threads,
        points.array,
        index,
        counts,
        np.int64(1),
        np.int64(ones.chunk),
        bucket,
        slots[0],
        keys[0],
        np.int64(ones.threads),
        threads=128,
    )
    for level in range(ones.levels()):
        n_in = ones.level_slots(level)
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
            np.int64(1),
            bucket,
            slots[dst],
            keys[dst],
            np.int64(threads),
            threads=64,
        )
    launch(f, f"{group}_acc_empty", 1, counts, np.int64(1), bucket)
