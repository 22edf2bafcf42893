"""Multi-scalar multiplication sum_i k_i·P_i: Pippenger's bucket method and the naive sum.

Pippenger with window c: write every k_i in base 2^c with signed digits in
(-2^(c-1), 2^(c-1)]; for each window j drop P_i (or -P_i) into bucket |d| of its digit d;
the window's sum is sum_d d·B_d, computed with running sums (B_top, B_top + B_top-1, ...)
in 2^c additions; windows are combined by c doublings each, most significant first.
Cost ~ (256/c)·(n + 2^c) additions instead of ~ n·(255 doublings + 128 additions) for
the naive sum.
"""

from __future__ import annotations

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
    """Window c minimising windows·(n + 2^c): n bucket additions plus two additions for
    each of the 2^(c-1) signed-digit buckets per window; about log2(n) - 2 for large n."""
    if n < 4:
        return 1
    return min(range(1, 17), key=lambda c: (SCALAR_BITS // c + 1) * (n + (1 << c)))


def signed_digits(k: int, c: int, windows: int) -> list[int]:
    """k = sum_j d_j 2^(c·j) with d_j in (-2^(c-1), 2^(c-1)]: a digit above half becomes
    d - 2^c with a carry into the next window, so buckets are needed for |d| only."""
    half, full, mask = 1 << (c - 1), 1 << c, (1 << c) - 1
    digits = []
    for _ in range(windows):
        d = k & mask
        k >>= c
        if d > half:
            d -= full
            k += 1
        digits.append(d)
    if k:
        raise AssertionError("signed_digits: scalar wider than the windows")
    return digits


def pippenger(group: Group, points: Sequence[Any], scalars: Sequence[int], c: int | None = None):
    """sum k_i·P_i over affine internal points (None = infinity); Jacobian result."""
    n = len(points)
    if c is None:
        c = window_bits(n)
    windows = SCALAR_BITS // c + 1
    live = [(P, k % R) for P, k in zip(points, scalars, strict=True) if P is not None and k % R]
    # -P is free in affine form: (x, -y); the bucket of digit -d receives -P
    entries = [(P, group.affine_neg(P), signed_digits(k, c, windows)) for P, k in live]
    add, add_affine, double = group.add, group.add_affine, group.double
    num_buckets = 1 << (c - 1)  # digits in (-2^(c-1), 2^(c-1)]; for c = 1 plain bits
    result = None
    for j in range(windows - 1, -1, -1):
        for _ in range(c):
            result = double(result)
        buckets: list[Any] = [None] * (num_buckets + 1)
        for P, minus_P, digits in entries:
            d = digits[j]
            if d > 0:
                buckets[d] = add_affine(buckets[d], P)
            elif d < 0:
                buckets[-d] = add_affine(buckets[-d], minus_P)
        # sum_d d·B_d = sum_d (B_top + ... + B_d): a running sum, added up.
        running = None
        window_sum = None
        for d in range(num_buckets, 0, -1):
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
        affine_g2 = [from_py_ecc_g2(P) for P in points]
        return to_py_ecc_g2(G2.normalize_many([naive(G2, affine_g2, scalars)])[0])
    affine_g1 = [from_py_ecc_g1(P) for P in points]
    return to_py_ecc_g1(G1.normalize_many([naive(G1, affine_g1, scalars)])[0])
