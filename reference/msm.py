"""Multi-scalar multiplication sum_i k_i·P_i: Pippenger's bucket method and the naive sum.

Pippenger with window c: write every k_i in base 2^c; for each window j drop P_i into
bucket d = digit_j(k_i); the window's sum is sum_d d·B_d, computed with running sums
(B_top, B_top + B_top-1, ...) in 2^(c+1) additions; windows are combined by c doublings
each, most significant first. Cost ~ (255/c)·(n + 2^(c+1)) additions instead of
~ n·(255 doublings + 128 additions) for the naive sum.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .curve import (
    G1,
    G2,
    Group,
    from_py_ecc_g1,
    from_py_ecc_g2,
    is_g2_point,
    to_py_ecc_g1,
    to_py_ecc_g2,
)
from .field import R

SCALAR_BITS = R.bit_length()  # 255


def window_bits(n: int) -> int:
    """Window c minimising (255/c)·(n + 2^(c+1)); about log2(n) - 2 for large n."""
    if n < 4:
        return 1
    best = min(range(1, 17), key=lambda c: math.ceil(SCALAR_BITS / c) * (n + (2 << c)))
    return best


def pippenger(group: Group, points: Sequence[Any], scalars: Sequence[int], c: int | None = None):
    """sum k_i·P_i over affine internal points (None = infinity); Jacobian result."""
    n = len(points)
    if c is None:
        c = window_bits(n)
    mask = (1 << c) - 1
    live = [(P, k % R) for P, k in zip(points, scalars, strict=True) if P is not None and k % R]
    add, add_affine, double = group.add, group.add_affine, group.double
    result = None
    for j in range(math.ceil(SCALAR_BITS / c) - 1, -1, -1):
        for _ in range(c):
            result = double(result)
        shift = j * c
        buckets: list[Any] = [None] * (mask + 1)
        for P, k in live:
            d = (k >> shift) & mask
            if d:
                buckets[d] = add_affine(buckets[d], P)
        # sum_d d·B_d = sum_{d} (B_top + ... + B_d): a running sum, added up.
        running = None
        window_sum = None
        for d in range(mask, 0, -1):
            running = add(running, buckets[d])
            window_sum = add(window_sum, running)
        result = add(result, window_sum)
    return result


def naive(group: Group, points: Sequence[Any], scalars: Sequence[int]):
    """sum k_i·P_i as n independent double-and-add scalar multiplications."""
    acc = None
    for P, k in zip(points, scalars, strict=True):
        if P is not None:
            acc = group.add(acc, group.multiply(P, k % R))
    return acc


def _check(points: Sequence[Any], scalars: Sequence[int], what: str) -> None:
    if len(points) != len(scalars):
        raise ValueError(f"{what}: {len(points)} points but {len(scalars)} scalars")
    for i, k in enumerate(scalars):
        if not isinstance(k, int) or isinstance(k, bool):
            raise ValueError(f"{what}: scalars[{i}] must be an int, got {k!r}")


def msm_g1(points: Sequence[Any], scalars: Sequence[int]) -> Any:
    """Pippenger over py_ecc G1 points; returns a py_ecc point with z = 1 (or Z1)."""
    _check(points, scalars, "msm_g1")
    affine = [from_py_ecc_g1(P) for P in points]
    return to_py_ecc_g1(G1.normalize_many([pippenger(G1, affine, scalars)])[0])


def msm_g2(points: Sequence[Any], scalars: Sequence[int]) -> Any:
    """Pippenger over py_ecc G2 points; returns a py_ecc point with z = 1 (or Z2)."""
    _check(points, scalars, "msm_g2")
    affine = [from_py_ecc_g2(P) for P in points]
    return to_py_ecc_g2(G2.normalize_many([pippenger(G2, affine, scalars)])[0])


def naive_msm(points: Sequence[Any], scalars: Sequence[int]) -> Any:
    """The naive sum over py_ecc points (G1 or G2 from the coordinate type); the same
    internal arithmetic as Pippenger, so benchmarks compare algorithms, not libraries."""
    _check(points, scalars, "naive_msm")
    if not points:
        raise ValueError("naive_msm: empty input (cannot tell G1 from G2); use msm_g1/msm_g2")
    if is_g2_point(points[0]):
        affine = [from_py_ecc_g2(P) for P in points]
        return to_py_ecc_g2(G2.normalize_many([naive(G2, affine, scalars)])[0])
    affine = [from_py_ecc_g1(P) for P in points]
    return to_py_ecc_g1(G1.normalize_many([naive(G1, affine, scalars)])[0])
