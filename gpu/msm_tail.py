"""The last step of a GPU MSM on the host: sum_j 2^(j c) S_j over the window sums S_j.

On the GPU this Horner is one thread's serial chain of (windows - 1) c doublings (240 at
2^20 points: ~3 ms for G1, ~10 ms for G2 on an H200 with the old product, the SMs idle
meanwhile); in Python ints it takes 1.2 ms / 3.0 ms on a 2-core CI-class machine (the
doubling written out: dbl_fq, dbl_fq2) and leaves the GPU free. Points are Jacobian Montgomery
limbs as the kernels store them (x | y | z, Fq: 12 u32 words, Fq2: c0 | c1); Z = 0 is
infinity. Formulas as kernels/curve.cuh (Bernstein-Lange EFD, a = 0): dbl-2009-l,
add-2007-bl.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from cuzk_sim.reference.field import Q

from .encoding import FQ_MONT, FQ_MONT_INV, ints_to_limbs, limbs_to_ints


@dataclass(frozen=True)
class _Field:
    """Fq (elements: int) or Fq2 = Fq[u]/(u^2 + 1) (elements: (c0, c1)), all mod Q."""

    mul: Callable[[Any, Any], Any]
    add: Callable[[Any, Any], Any]
    sub: Callable[[Any, Any], Any]
    small: Callable[[int, Any], Any]  # k x
    is_zero: Callable[[Any], bool]


def _fq2_mul(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    t0, t1 = a[0] * b[0], a[1] * b[1]
    return (t0 - t1) % Q, ((a[0] + a[1]) * (b[0] + b[1]) - t0 - t1) % Q


FQ = _Field(
    mul=lambda a, b: a * b % Q,
    add=lambda a, b: (a + b) % Q,
    sub=lambda a, b: (a - b) % Q,
    small=lambda k, a: k * a % Q,
    is_zero=lambda a: a == 0,
)
FQ2 = _Field(
    mul=_fq2_mul,
    add=lambda a, b: ((a[0] + b[0]) % Q, (a[1] + b[1]) % Q),
    sub=lambda a, b: ((a[0] - b[0]) % Q, (a[1] - b[1]) % Q),
    small=lambda k, a: (k * a[0] % Q, k * a[1] % Q),
    is_zero=lambda a: a == (0, 0),
)

Point = tuple[Any, Any, Any]  # Jacobian (X, Y, Z), Z = 0: infinity


def dbl(f: _Field, p: Point) -> Point:
    """dbl-2009-l: A = X^2, B = Y^2, C = B^2, D = 2((X + B)^2 - A - C), E = 3A, F = E^2,
    X3 = F - 2D, Y3 = E (D - X3) - 8C, Z3 = 2 Y Z"""
    x, y, z = p
    if f.is_zero(z):
        return p
    a, b = f.mul(x, x), f.mul(y, y)
    c = f.mul(b, b)
    t = f.add(x, b)
    d = f.small(2, f.sub(f.sub(f.mul(t, t), a), c))
    e = f.small(3, a)
    x3 = f.sub(f.mul(e, e), f.small(2, d))
    y3 = f.sub(f.mul(e, f.sub(d, x3)), f.small(8, c))
    return x3, y3, f.small(2, f.mul(y, z))


def add(f: _Field, p: Point, q: Point) -> Point:
    """add-2007-bl: U1 = X1 Z2^2, U2 = X2 Z1^2, S1 = Y1 Z2^3, S2 = Y2 Z1^3, H = U2 - U1,
    I = (2H)^2, J = H I, r = 2 (S2 - S1), V = U1 I, X3 = r^2 - J - 2V,
    Y3 = r (V - X3) - 2 S1 J, Z3 = ((Z1 + Z2)^2 - Z1^2 - Z2^2) H"""
    if f.is_zero(q[2]):
        return p
    if f.is_zero(p[2]):
        return q
    z1z1, z2z2 = f.mul(p[2], p[2]), f.mul(q[2], q[2])
    u1, u2 = f.mul(p[0], z2z2), f.mul(q[0], z1z1)
    s1 = f.mul(f.mul(p[1], q[2]), z2z2)
    s2 = f.mul(f.mul(q[1], p[2]), z1z1)
    h, r = f.sub(u2, u1), f.sub(s2, s1)
    if f.is_zero(h):
        return dbl(f, p) if f.is_zero(r) else (f.small(0, h), f.small(0, h), f.small(0, h))
    r = f.small(2, r)
    h2 = f.small(2, h)
    i = f.mul(h2, h2)
    j = f.mul(h, i)
    v = f.mul(u1, i)
    x3 = f.sub(f.sub(f.mul(r, r), j), f.small(2, v))
    y3 = f.sub(f.mul(r, f.sub(v, x3)), f.small(2, f.mul(s1, j)))
    t = f.add(p[2], q[2])
    z3 = f.mul(f.sub(f.sub(f.mul(t, t), z1z1), z2z2), h)
    return x3, y3, z3


def _points_from_words(group: str, words: np.ndarray) -> list[Point]:
    """Jacobian points (standard-form ints) from Jacobian Montgomery limbs."""
    k = 1 if group == "g1" else 2
    v = [c * FQ_MONT_INV % Q for c in limbs_to_ints(words.reshape(-1, 12))]
    out = []
    for i in range(0, len(v), 3 * k):
        c = v[i : i + 3 * k]
        if k == 1:
            out.append((c[0], c[1], c[2]))
        else:
            out.append(((c[0], c[1]), (c[2], c[3]), (c[4], c[5])))
    return out


def _words_from_point(group: str, p: Point) -> np.ndarray:
    coords = list(p) if group == "g1" else [c for pair in p for c in pair]
    return ints_to_limbs([c * FQ_MONT % Q for c in coords], 12).reshape(-1)


def dbl_fq(p: Point) -> Point:
    """dbl over Fq written out (the Horner's hot loop: half the time of the generic one)."""
    x, y, z = p
    if z == 0:
        return p
    a, b = x * x % Q, y * y % Q
    c = b * b % Q
    t = x + b
    d = 2 * (t * t - a - c) % Q
    e = 3 * a
    x3 = (e * e - 2 * d) % Q
    return x3, (e * (d - x3) - 8 * c) % Q, 2 * y * z % Q


def dbl_fq2(p: Point) -> Point:
    """dbl over Fq2 written out; squares as (a0 + a1)(a0 - a1) + 2 a0 a1 u."""
    (x0, x1), (y0, y1), (z0, z1) = p
    if z0 == 0 and z1 == 0:
        return p
    a0, a1 = (x0 + x1) * (x0 - x1) % Q, 2 * x0 * x1 % Q
    b0, b1 = (y0 + y1) * (y0 - y1) % Q, 2 * y0 * y1 % Q
    c0, c1 = (b0 + b1) * (b0 - b1) % Q, 2 * b0 * b1 % Q
    t0, t1 = x0 + b0, x1 + b1
    d0 = 2 * ((t0 + t1) * (t0 - t1) - a0 - c0) % Q
    d1 = 2 * (2 * t0 * t1 - a1 - c1) % Q
    e0, e1 = 3 * a0, 3 * a1
    x30 = ((e0 + e1) * (e0 - e1) - 2 * d0) % Q
    x31 = (2 * e0 * e1 - 2 * d1) % Q
    u0, u1 = d0 - x30, d1 - x31  # E (D - X3) - 8C
    y30 = (e0 * u0 - e1 * u1 - 8 * c0) % Q
    y31 = (e0 * u1 + e1 * u0 - 8 * c1) % Q
    z30 = 2 * (y0 * z0 - y1 * z1) % Q
    z31 = 2 * (y0 * z1 + y1 * z0) % Q
    return (x30, x31), (y30, y31), (z30, z31)


def horner(group: str, window_sums: np.ndarray, c: int) -> np.ndarray:
    """sum_j 2^(j c) S_j as Jacobian Montgomery limbs, from the window sums S_j (Jacobian
    Montgomery limbs, window 0 first), as kernels/msm_signed.cu's combine computes it."""
    f, double = (FQ, dbl_fq) if group == "g1" else (FQ2, dbl_fq2)
    sums = _points_from_words(group, window_sums)
    acc = sums[-1]
    for s in reversed(sums[:-1]):
        for _ in range(c):
            acc = double(acc)
        acc = add(f, acc, s)
    return _words_from_point(group, acc)
