"""The price of one kernel or CPU kind as a function of its size (a profile's `Cost`).

seconds(size) = fixed + per_unit · work(size), work = size or size·log2(size), or read
off the sizes measured (`points`). An MSM over scalars of a known shape (how many are 0
and how many 1, `Kernel.zeros` / `.ones`) is priced by `shaped_seconds`: the part of
its random-scalar time that 0 and 1 scalars do not shrink (`shape_fixed`: the window
sums, the bucket reduction, the launches, whose work depends on the window size and not
on the scalars) stays whole, the rest is weighted scalar by scalar (`shares`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

Scaling = Literal["linear", "n_log_n"]


def _work(size: int, scaling: Scaling) -> float:
    return size * math.log2(size) if scaling == "n_log_n" and size > 1 else float(size)


@dataclass(frozen=True)
class Cost:
    """seconds(size) = fixed + per_unit · work(size); work = size or size·log2(size).

    With `points` ((work, seconds) measured at several sizes, ascending), the time is
    read off them instead: linear in work between two points, along the nearest
    segment's line beyond them (one point: fixed + per_unit through it). A line through
    four sizes from 2^16 to 2^24 can miss one of them by 10 %; the points do not."""

    fixed: float
    per_unit: float
    scaling: Scaling
    points: tuple[tuple[float, float], ...] = ()
    # an MSM's price of a scalar equal to 0 and to 1, each as a share of a random
    # scalar's (`zero_share`, `one_share`); None: every scalar priced as random
    shares: tuple[float, float] | None = None
    # seconds of a shaped MSM that its 0 and 1 scalars do not shrink (`shape_fixed`)
    shape_fixed: float = 0.0

    def seconds(self, size: int) -> float:
        if not size:
            return 0.0
        w = _work(size, self.scaling)
        if len(self.points) < 2:
            return self.fixed + self.per_unit * w
        return read_off(self.points, w)

    def shaped_seconds(self, size: int, zeros: int, ones: int) -> float:
        """An MSM of `size` scalars, `zeros` of them 0 and `ones` 1 (the rest random):
        `shape_fixed` (at most the whole random-scalar price at `size`) plus the rest of
        that price, each scalar weighted by its share of it."""
        t = self.seconds(size)
        if self.shares is None or not size:
            return t
        zero_share, one_share = self.shares
        kept = min(self.shape_fixed, t)
        rest = size - zeros - ones
        return kept + (t - kept) * (rest + zero_share * zeros + one_share * ones) / size


def read_off(pts: tuple[tuple[float, float], ...], x: float) -> float:
    """The time at x from measured (x, seconds) points, ascending: linear between two,
    along the nearest segment's line beyond them."""
    i = 1
    while i < len(pts) - 1 and x > pts[i][0]:
        i += 1
    (x0, t0), (x1, t1) = pts[i - 1], pts[i]
    return max(t0 + (t1 - t0) * (x - x0) / (x1 - x0), 0.0)


def solve_shape_fixed(random_s: float, weight: float, measured_s: float) -> float:
    """The `shape_fixed` that makes `shaped_seconds` equal a measured time: an MSM whose
    random-scalar price is `random_s`, whose scalars weigh `weight` of random ones (the
    shares' mean over its scalars, < 1), measured at `measured_s`:
    measured = F + (random - F) · weight, so F = (measured - random · weight) / (1 - weight)."""
    if not 0.0 <= weight < 1.0:
        raise ValueError(f"the scalars' weight must lie in [0, 1), got {weight}")
    return (measured_s - random_s * weight) / (1.0 - weight)
