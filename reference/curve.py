"""The BLS12-381 group law on raw ints, fast enough for a thousand-constraint Groth16.

py_ecc's FQ/FQ2 objects cost a method call per field operation; here G1 coordinates are
plain ints mod Q and G2 coordinates are pairs (c0, c1) meaning c0 + c1·i with i^2 = -1.
Points are Jacobian (X, Y, Z) ~ affine (X/Z^2, Y/Z^3); the point at infinity is `None`.
Formulas are from the Explicit-Formulas Database for a = 0 curves (dbl-2009-l,
add-2007-bl, madd-2007-bl). py_ecc points enter and leave only through `from_py_ecc_*` and
`to_py_ecc_*`; tests check this module against py_ecc's own `add`/`multiply`.

E1: y^2 = x^3 + 4 over Fq.  E2 (the M-type twist): y^2 = x^3 + 4(1 + i) over Fq2.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import py_ecc.optimized_bls12_381 as bls

from .field import Q, R, batch_inverse

Fq2 = tuple[int, int]
G1Affine = tuple[int, int] | None
G1Jacobian = tuple[int, int, int] | None
G2Affine = tuple[Fq2, Fq2] | None
G2Jacobian = tuple[Fq2, Fq2, Fq2] | None

B1 = 4
B2: Fq2 = (4, 4)

# ---------------------------------------------------------------- Fq2 = Fq[i] / (i^2 + 1)


def f2_add(a: Fq2, b: Fq2) -> Fq2:
    return ((a[0] + b[0]) % Q, (a[1] + b[1]) % Q)


def f2_sub(a: Fq2, b: Fq2) -> Fq2:
    return ((a[0] - b[0]) % Q, (a[1] - b[1]) % Q)


def f2_mul(a: Fq2, b: Fq2) -> Fq2:
    # (a0 + a1 i)(b0 + b1 i) = (a0 b0 - a1 b1) + ((a0 + a1)(b0 + b1) - a0 b0 - a1 b1) i
    t0, t1 = a[0] * b[0], a[1] * b[1]
    return ((t0 - t1) % Q, ((a[0] + a[1]) * (b[0] + b[1]) - t0 - t1) % Q)


def f2_sqr(a: Fq2) -> Fq2:
    # (a0 + a1 i)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 i
    return ((a[0] + a[1]) * (a[0] - a[1]) % Q, 2 * a[0] * a[1] % Q)


def f2_scale(a: Fq2, k: int) -> Fq2:
    return (a[0] * k % Q, a[1] * k % Q)


def f2_neg(a: Fq2) -> Fq2:
    return (-a[0] % Q, -a[1] % Q)


def f2_inv(a: Fq2) -> Fq2:
    # 1/(a0 + a1 i) = (a0 - a1 i) / (a0^2 + a1^2)
    norm_inv = pow((a[0] * a[0] + a[1] * a[1]) % Q, -1, Q)
    return (a[0] * norm_inv % Q, -a[1] * norm_inv % Q)


F2_ZERO: Fq2 = (0, 0)
F2_ONE: Fq2 = (1, 0)

# ---------------------------------------------------------------- G1 over Fq


def g1_double(P: G1Jacobian) -> G1Jacobian:
    if P is None:
        return None
    X1, Y1, Z1 = P
    if Y1 == 0:
        return None
    # dbl-2009-l: A = X^2, B = Y^2, C = B^2, D = 2((X+B)^2 - A - C), E = 3A, F = E^2
    A = X1 * X1 % Q
    B = Y1 * Y1 % Q
    C = B * B % Q
    D = 2 * ((X1 + B) * (X1 + B) - A - C) % Q
    E = 3 * A
    F = E * E % Q
    X3 = (F - 2 * D) % Q
    Y3 = (E * (D - X3) - 8 * C) % Q
    Z3 = 2 * Y1 * Z1 % Q
    return (X3, Y3, Z3)


def g1_add(P: G1Jacobian, Qp: G1Jacobian) -> G1Jacobian:
    if P is None:
        return Qp
    if Qp is None:
        return P
    X1, Y1, Z1 = P
    X2, Y2, Z2 = Qp
    # add-2007-bl
    Z1Z1 = Z1 * Z1 % Q
    Z2Z2 = Z2 * Z2 % Q
    U1 = X1 * Z2Z2 % Q
    U2 = X2 * Z1Z1 % Q
    S1 = Y1 * Z2 * Z2Z2 % Q
    S2 = Y2 * Z1 * Z1Z1 % Q
    H = (U2 - U1) % Q
    r = 2 * (S2 - S1) % Q
    if H == 0:
        return g1_double(P) if r == 0 else None
    I = 4 * H * H % Q
    J = H * I % Q
    V = U1 * I % Q
    X3 = (r * r - J - 2 * V) % Q
    Y3 = (r * (V - X3) - 2 * S1 * J) % Q
    Z3 = ((Z1 + Z2) * (Z1 + Z2) - Z1Z1 - Z2Z2) * H % Q
    return (X3, Y3, Z3)


def g1_add_affine(P: G1Jacobian, Qa: G1Affine) -> G1Jacobian:
    """P + Qa with Qa affine (Z2 = 1): the cheap mixed addition used in MSM buckets."""
    if Qa is None:
        return P
    if P is None:
        return (Qa[0], Qa[1], 1)
    X1, Y1, Z1 = P
    X2, Y2 = Qa
    # madd-2007-bl
    Z1Z1 = Z1 * Z1 % Q
    U2 = X2 * Z1Z1 % Q
    S2 = Y2 * Z1 * Z1Z1 % Q
    H = (U2 - X1) % Q
    r = 2 * (S2 - Y1) % Q
    if H == 0:
        return g1_double(P) if r == 0 else None
    HH = H * H % Q
    I = 4 * HH
    J = H * I % Q
    V = X1 * I % Q
    X3 = (r * r - J - 2 * V) % Q
    Y3 = (r * (V - X3) - 2 * Y1 * J) % Q
    Z3 = ((Z1 + H) * (Z1 + H) - Z1Z1 - HH) % Q
    return (X3, Y3, Z3)


def g1_neg(P: G1Jacobian) -> G1Jacobian:
    return None if P is None else (P[0], -P[1] % Q, P[2])


def g1_normalize_many(points: Sequence[G1Jacobian]) -> list[G1Affine]:
    """Jacobian -> affine for many points with one inversion: x = X/Z^2, y = Y/Z^3."""
    live = [i for i, P in enumerate(points) if P is not None]
    z_inv = batch_inverse([points[i][2] for i in live], Q)  # type: ignore[index]
    out: list[G1Affine] = [None] * len(points)
    for i, zi in zip(live, z_inv, strict=True):
        X, Y, _ = points[i]  # type: ignore[misc]
        zi2 = zi * zi % Q
        out[i] = (X * zi2 % Q, Y * zi2 * zi % Q)
    return out


def g1_is_on_curve(P: G1Affine) -> bool:
    return P is None or (P[1] * P[1] - P[0] * P[0] * P[0] - B1) % Q == 0


# ---------------------------------------------------------------- G2 over Fq2


def g2_double(P: G2Jacobian) -> G2Jacobian:
    if P is None:
        return None
    X1, Y1, Z1 = P
    if Y1 == F2_ZERO:
        return None
    A = f2_sqr(X1)
    B = f2_sqr(Y1)
    C = f2_sqr(B)
    D = f2_scale(f2_sub(f2_sub(f2_sqr(f2_add(X1, B)), A), C), 2)
    E = f2_scale(A, 3)
    F = f2_sqr(E)
    X3 = f2_sub(F, f2_scale(D, 2))
    Y3 = f2_sub(f2_mul(E, f2_sub(D, X3)), f2_scale(C, 8))
    Z3 = f2_scale(f2_mul(Y1, Z1), 2)
    return (X3, Y3, Z3)


def g2_add(P: G2Jacobian, Qp: G2Jacobian) -> G2Jacobian:
    if P is None:
        return Qp
    if Qp is None:
        return P
    X1, Y1, Z1 = P
    X2, Y2, Z2 = Qp
    Z1Z1 = f2_sqr(Z1)
    Z2Z2 = f2_sqr(Z2)
    U1 = f2_mul(X1, Z2Z2)
    U2 = f2_mul(X2, Z1Z1)
    S1 = f2_mul(f2_mul(Y1, Z2), Z2Z2)
    S2 = f2_mul(f2_mul(Y2, Z1), Z1Z1)
    H = f2_sub(U2, U1)
    r = f2_scale(f2_sub(S2, S1), 2)
    if H == F2_ZERO:
        return g2_double(P) if r == F2_ZERO else None
    I = f2_sqr(f2_scale(H, 2))
    J = f2_mul(H, I)
    V = f2_mul(U1, I)
    X3 = f2_sub(f2_sub(f2_sqr(r), J), f2_scale(V, 2))
    Y3 = f2_sub(f2_mul(r, f2_sub(V, X3)), f2_scale(f2_mul(S1, J), 2))
    Z3 = f2_mul(f2_sub(f2_sub(f2_sqr(f2_add(Z1, Z2)), Z1Z1), Z2Z2), H)
    return (X3, Y3, Z3)


def g2_add_affine(P: G2Jacobian, Qa: G2Affine) -> G2Jacobian:
    if Qa is None:
        return P
    if P is None:
        return (Qa[0], Qa[1], F2_ONE)
    X1, Y1, Z1 = P
    X2, Y2 = Qa
    Z1Z1 = f2_sqr(Z1)
    U2 = f2_mul(X2, Z1Z1)
    S2 = f2_mul(f2_mul(Y2, Z1), Z1Z1)
    H = f2_sub(U2, X1)
    r = f2_scale(f2_sub(S2, Y1), 2)
    if H == F2_ZERO:
        return g2_double(P) if r == F2_ZERO else None
    HH = f2_sqr(H)
    I = f2_scale(HH, 4)
    J = f2_mul(H, I)
    V = f2_mul(X1, I)
    X3 = f2_sub(f2_sub(f2_sqr(r), J), f2_scale(V, 2))
    Y3 = f2_sub(f2_mul(r, f2_sub(V, X3)), f2_scale(f2_mul(Y1, J), 2))
    Z3 = f2_sub(f2_sub(f2_sqr(f2_add(Z1, H)), Z1Z1), HH)
    return (X3, Y3, Z3)


def g2_neg(P: G2Jacobian) -> G2Jacobian:
    return None if P is None else (P[0], f2_neg(P[1]), P[2])


def g2_normalize_many(points: Sequence[G2Jacobian]) -> list[G2Affine]:
    """Jacobian -> affine; 1/Z = conj(Z)/N(Z), the norms inverted together in Fq."""
    live = [i for i, P in enumerate(points) if P is not None]
    norms = [(points[i][2][0] ** 2 + points[i][2][1] ** 2) % Q for i in live]  # type: ignore[index]
    norm_inv = batch_inverse(norms, Q)
    out: list[G2Affine] = [None] * len(points)
    for i, ni in zip(live, norm_inv, strict=True):
        X, Y, Z = points[i]  # type: ignore[misc]
        zi = (Z[0] * ni % Q, -Z[1] * ni % Q)
        zi2 = f2_sqr(zi)
        out[i] = (f2_mul(X, zi2), f2_mul(Y, f2_mul(zi2, zi)))
    return out


def g2_is_on_curve(P: G2Affine) -> bool:
    if P is None:
        return True
    x, y = P
    return f2_sub(f2_sqr(y), f2_add(f2_mul(f2_sqr(x), x), B2)) == F2_ZERO


# ---------------------------------------------------------------- one interface, two groups


@dataclass(frozen=True)
class Group:
    """The operations an algorithm generic over G1/G2 (MSM, fixed-base tables) needs."""

    name: str
    add: Callable[[Any, Any], Any]
    add_affine: Callable[[Any, Any], Any]
    double: Callable[[Any], Any]
    neg: Callable[[Any], Any]
    affine_neg: Callable[[Any], Any]
    normalize_many: Callable[[Sequence[Any]], list[Any]]
    is_on_curve: Callable[[Any], bool]
    generator: Any  # affine

    def to_jacobian(self, P: Any) -> Any:
        if P is None:
            return None
        return (P[0], P[1], 1 if self.name == "G1" else F2_ONE)

    def multiply(self, P: Any, k: int) -> Any:
        """k·P (affine in, Jacobian out) by double-and-add, most significant bit first."""
        acc = None
        for bit in bin(k)[2:] if k > 0 else "":
            acc = self.double(acc)
            if bit == "1":
                acc = self.add_affine(acc, P)
        return acc

    def in_subgroup(self, P: Any) -> bool:
        """r·P = O: P lies in the prime-order subgroup (not only on the curve)."""
        return self.multiply(P, R) is None


def _affine_from_py_ecc_g1(P: Any) -> G1Affine:
    x, y, z = (c.n for c in P)
    if z == 0:
        return None
    if z == 1:
        return (x, y)
    zi = pow(z, -1, Q)
    return (x * zi % Q, y * zi % Q)


def _affine_from_py_ecc_g2(P: Any) -> G2Affine:
    x, y, z = (tuple(c.coeffs) for c in P)
    if z == F2_ZERO:
        return None
    if z == F2_ONE:
        return (x, y)  # type: ignore[return-value]
    zi = f2_inv(z)  # type: ignore[arg-type]
    return (f2_mul(x, zi), f2_mul(y, zi))  # type: ignore[arg-type]


G1_GEN: G1Affine = _affine_from_py_ecc_g1(bls.G1)
G2_GEN: G2Affine = _affine_from_py_ecc_g2(bls.G2)


def g1_affine_neg(P: G1Affine) -> G1Affine:
    return None if P is None else (P[0], -P[1] % Q)


def g2_affine_neg(P: G2Affine) -> G2Affine:
    return None if P is None else (P[0], f2_neg(P[1]))


G1 = Group(
    "G1",
    g1_add,
    g1_add_affine,
    g1_double,
    g1_neg,
    g1_affine_neg,
    g1_normalize_many,
    g1_is_on_curve,
    G1_GEN,
)
G2 = Group(
    "G2",
    g2_add,
    g2_add_affine,
    g2_double,
    g2_neg,
    g2_affine_neg,
    g2_normalize_many,
    g2_is_on_curve,
    G2_GEN,
)

assert g1_is_on_curve(G1_GEN) and g2_is_on_curve(G2_GEN)

# ---------------------------------------------------------------- the py_ecc boundary


def from_py_ecc_g1(P: Any) -> G1Affine:
    """A py_ecc optimized_bls12_381 G1 point (homogeneous projective FQ) -> affine ints."""
    return _affine_from_py_ecc_g1(P)


def from_py_ecc_g2(P: Any) -> G2Affine:
    return _affine_from_py_ecc_g2(P)


def to_py_ecc_g1(P: G1Affine) -> Any:
    """Affine ints -> py_ecc point with z = 1 (or py_ecc's Z1 for infinity)."""
    if P is None:
        return bls.Z1
    return (bls.FQ(P[0]), bls.FQ(P[1]), bls.FQ.one())


def to_py_ecc_g2(P: G2Affine) -> Any:
    if P is None:
        return bls.Z2
    return (bls.FQ2(list(P[0])), bls.FQ2(list(P[1])), bls.FQ2.one())


def is_g2_point(P: Any) -> bool:
    """True for a py_ecc G2 point (FQ2 coordinates), False for G1 (FQ)."""
    return hasattr(P[0], "coeffs")


class InvalidPoint(ValueError):
    """A point that is not on the curve or not in the prime-order subgroup."""


def check_g1(P: Any, what: str) -> G1Affine:
    """Validate a py_ecc G1 point (on E1, in the order-r subgroup); return it affine."""
    try:
        affine = from_py_ecc_g1(P)
    except (AttributeError, TypeError, ValueError, ZeroDivisionError):
        raise InvalidPoint(f"{what}: not a py_ecc G1 point: {P!r}") from None
    if not g1_is_on_curve(affine):
        raise InvalidPoint(f"{what}: G1 point is not on the curve y^2 = x^3 + 4")
    if not G1.in_subgroup(affine):
        raise InvalidPoint(f"{what}: G1 point is not in the order-r subgroup")
    return affine


def check_g2(P: Any, what: str) -> G2Affine:
    """Validate a py_ecc G2 point (on the twist E2, in the order-r subgroup)."""
    try:
        affine = from_py_ecc_g2(P)
    except (AttributeError, TypeError, ValueError, ZeroDivisionError):
        raise InvalidPoint(f"{what}: not a py_ecc G2 point: {P!r}") from None
    if not g2_is_on_curve(affine):
        raise InvalidPoint(f"{what}: G2 point is not on the twist y^2 = x^3 + 4(1 + i)")
    if not G2.in_subgroup(affine):
        raise InvalidPoint(f"{what}: G2 point is not in the order-r subgroup")
    return affine
