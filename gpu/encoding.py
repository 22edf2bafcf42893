"""Host-side encodings: Python ints and py_ecc points <-> little-endian u32 limb arrays.

Scalars (Fr) travel in standard form, 8 limbs; coordinates (Fq) in Montgomery form
x * 2^384 mod p, 12 limbs, as the curve kernels expect. Affine infinity is (0, 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import py_ecc.optimized_bls12_381 as bls
from cuzk_sim.reference.field import Q, R

FR_LIMBS = 8
FQ_LIMBS = 12
FQ_MONT = pow(2, 32 * FQ_LIMBS, Q)
FQ_MONT_INV = pow(FQ_MONT, -1, Q)
FR_MONT = pow(2, 32 * FR_LIMBS, R)
FR_MONT_INV = pow(FR_MONT, -1, R)


def ints_to_limbs(values: Sequence[int], limbs: int) -> np.ndarray:
    """(len(values), limbs) uint32, little-endian; values must fit in 32 * limbs bits."""
    width = 4 * limbs
    raw = b"".join(v.to_bytes(width, "little") for v in values)
    return np.frombuffer(raw, dtype="<u4").reshape(len(values), limbs).astype(np.uint32)


def limbs_to_ints(array: np.ndarray) -> list[int]:
    rows = np.ascontiguousarray(array, dtype="<u4").reshape(array.shape[0], -1)
    return [int.from_bytes(row.tobytes(), "little") for row in rows]


def scalars_to_limbs(values: Sequence[int], what: str = "scalars") -> np.ndarray:
    for i, v in enumerate(values):
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < R:
            raise ValueError(f"{what}[{i}] must be an int in [0, r), got {v!r}")
    return ints_to_limbs(values, FR_LIMBS)


def fr_to_mont_limbs(values: Sequence[int]) -> np.ndarray:
    return ints_to_limbs([v * FR_MONT % R for v in values], FR_LIMBS)


def _affine(P: Any) -> tuple[Any, Any] | None:
    if bls.is_inf(P):
        return None
    x, y, z = P
    if z == z.one():
        return x, y
    return bls.normalize(P)


def g1_to_limbs(points: Sequence[Any]) -> np.ndarray:
    """(n, 24) uint32: x | y in Montgomery form; infinity -> zeros."""
    coords: list[int] = []
    for P in points:
        a = _affine(P)
        coords += [0, 0] if a is None else [int(a[0].n) * FQ_MONT % Q, int(a[1].n) * FQ_MONT % Q]
    return ints_to_limbs(coords, FQ_LIMBS).reshape(len(points), 2 * FQ_LIMBS)


def g2_to_limbs(points: Sequence[Any]) -> np.ndarray:
    """(n, 48) uint32: x.c0 | x.c1 | y.c0 | y.c1 in Montgomery form; infinity -> zeros."""
    coords: list[int] = []
    for P in points:
        a = _affine(P)
        if a is None:
            coords += [0, 0, 0, 0]
        else:
            coords += [int(c) * FQ_MONT % Q for c in (*a[0].coeffs, *a[1].coeffs)]
    return ints_to_limbs(coords, FQ_LIMBS).reshape(len(points), 4 * FQ_LIMBS)


def g1_from_limbs(row: np.ndarray) -> Any:
    """One affine Montgomery G1 point -> py_ecc projective (z = 1), zeros -> infinity."""
    x, y = (v * FQ_MONT_INV % Q for v in limbs_to_ints(row.reshape(2, FQ_LIMBS)))
    if x == 0 and y == 0:
        return bls.Z1
    return (bls.FQ(x), bls.FQ(y), bls.FQ.one())


def g2_from_limbs(row: np.ndarray) -> Any:
    x0, x1, y0, y1 = (v * FQ_MONT_INV % Q for v in limbs_to_ints(row.reshape(4, FQ_LIMBS)))
    if x0 == x1 == y0 == y1 == 0:
        return bls.Z2
    return (bls.FQ2([x0, x1]), bls.FQ2([y0, y1]), bls.FQ2.one())
