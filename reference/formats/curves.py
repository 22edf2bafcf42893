"""Which curve a circom/snarkjs file is for, and snarkjs's point encoding.

snarkjs stores a point as its affine coordinates, each base-field element as 48
little-endian bytes in Montgomery form (x·2^384 mod q); an Fq2 element is c0 then c1;
the point at infinity is all zeros. Only BLS12-381 is supported; a file for bn128 (or
any other field) gets a clear UnsupportedCurve naming the curve.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..curve import G1, G2, g1_is_on_curve, g2_is_on_curve, to_py_ecc_g1, to_py_ecc_g2
from ..field import Q, R
from .binfile import SectionReader
from .errors import UnsupportedCurve

N8_Q = 48  # bytes per base-field element
N8_R = 32  # bytes per scalar
G1_BYTES = 2 * N8_Q
G2_BYTES = 4 * N8_Q
Q_MONT_INV = pow(pow(2, 8 * N8_Q, Q), -1, Q)  # (2^384)^-1 mod q

# Primes of the curves circom/snarkjs know, so a foreign file is named, not just refused.
KNOWN_SCALAR_FIELDS = {
    R: "bls12381",
    0x30644E72E131A029B85045B68181585D2833E84879B9709143E1F593F0000001: "bn128",
}
KNOWN_BASE_FIELDS = {
    Q: "bls12381",
    0x30644E72E131A029B85045B68181585D97816A916871CA8D3C208C16D87CFD47: "bn128",
}


def check_prime(
    path: str, where: str, prime: int, known: dict[int, str], expected: int, field: str
) -> None:
    """The header prime must be BLS12-381's; name the curve when it is another known one."""
    if prime == expected:
        return
    name = known.get(prime)
    if name is not None:
        raise UnsupportedCurve(path, where, f"curve {name} not supported (only bls12381)")
    raise UnsupportedCurve(path, where, f"{field} {prime} is not a prime of a supported curve")


def _fq(reader: SectionReader, field: str) -> int:
    offset = reader.pos
    raw = reader.uint(N8_Q, field)
    if raw >= Q:
        raise reader.error(f"{field}: coordinate {raw} >= q is not a field element", offset)
    return raw * Q_MONT_INV % Q


def read_g1(reader: SectionReader, field: str, subgroup: bool = False) -> Any:
    """One G1 point as a py_ecc point; off-curve (or, when asked, off-subgroup) is an error."""
    offset = reader.pos
    x, y = _fq(reader, field), _fq(reader, field)
    P = None if x == 0 and y == 0 else (x, y)
    _check(reader, offset, field, P, g1_is_on_curve, G1.in_subgroup if subgroup else None)
    return to_py_ecc_g1(P)


def read_g2(reader: SectionReader, field: str, subgroup: bool = False) -> Any:
    offset = reader.pos
    x = (_fq(reader, field), _fq(reader, field))
    y = (_fq(reader, field), _fq(reader, field))
    P = None if x == (0, 0) and y == (0, 0) else (x, y)
    _check(reader, offset, field, P, g2_is_on_curve, G2.in_subgroup if subgroup else None)
    return to_py_ecc_g2(P)


def _check(
    reader: SectionReader,
    offset: int,
    field: str,
    P: Any,
    on_curve: Callable[[Any], bool],
    in_subgroup: Callable[[Any], bool] | None,
) -> None:
    if P is None:
        return
    if not on_curve(P):
        raise reader.error(f"{field}: point is not on the curve", offset)
    if in_subgroup is not None and not in_subgroup(P):
        raise reader.error(f"{field}: point is not in the order-r subgroup", offset)
