"""zcash / bellman point encodings for BLS12-381, the proof (192 bytes) and verifying key.

A coordinate is 48 bytes big-endian; an Fq2 element c0 + c1·i is written c1 then c0. The
three top bits of byte 0 are flags: 0x80 compressed, 0x40 infinity, 0x20 sort (set, in
compressed form only, when y is the lexicographically largest of y and -y). G1: 48 bytes
compressed / 96 uncompressed; G2: 96 / 192. Decoding rejects wrong lengths, inconsistent
flags, non-zero bits after an infinity flag, coordinates >= q, x with no point on the
curve, points off the curve and points outside the order-r subgroup (EncodingError).
"""

from __future__ import annotations

import struct
from typing import Any

from .curve import (
    B2,
    G1,
    G2,
    Fq2,
    f2_add,
    f2_mul,
    f2_sqr,
    f2_sub,
    from_py_ecc_g1,
    from_py_ecc_g2,
    g1_is_on_curve,
    g2_is_on_curve,
    to_py_ecc_g1,
    to_py_ecc_g2,
)
from .field import Q
from .types import Proof, VerifyingKey

FLAG_COMPRESSED = 0x80
FLAG_INFINITY = 0x40
FLAG_SORT = 0x20
FLAG_MASK = 0xE0
FQ_BYTES = 48
PROOF_BYTES = 2 * FQ_BYTES + 2 * FQ_BYTES  # A (48) | B (96) | C (48) = 192


class EncodingError(ValueError):
    """Bytes that are not a valid encoding of a point, proof or key."""


# ---------------------------------------------------------------- square roots


def fq_sqrt(a: int) -> int | None:
    """A square root in Fq (q = 3 mod 4: a^((q+1)/4)), or None if a is a non-residue."""
    y = pow(a, (Q + 1) // 4, Q)
    return y if y * y % Q == a % Q else None


def f2_pow(a: Fq2, e: int) -> Fq2:
    acc: Fq2 = (1, 0)
    for bit in bin(e)[2:]:
        acc = f2_sqr(acc)
        if bit == "1":
            acc = f2_mul(acc, a)
    return acc


def fq2_sqrt(a: Fq2) -> Fq2 | None:
    """A square root in Fq2, or None. Algorithm 9 of Adj & Rodriguez-Henriquez,
    "Square root computation over even extension fields" (eprint 2012/685), q = 3 mod 4."""
    if a == (0, 0):
        return (0, 0)
    a1 = f2_pow(a, (Q - 3) // 4)
    alpha = f2_mul(f2_sqr(a1), a)  # a^((q-1)/2)
    x0 = f2_mul(a1, a)  # a^((q+1)/4)
    if alpha == (Q - 1, 0):
        x = f2_mul((0, 1), x0)  # i·x0
    else:
        b = f2_pow(((1 + alpha[0]) % Q, alpha[1]), (Q - 1) // 2)
        x = f2_mul(b, x0)
    return x if f2_sub(f2_sqr(x), a) == (0, 0) else None


def fq_is_largest(y: int) -> bool:
    """y > (q-1)/2, i.e. y > -y as integers in [0, q)."""
    return y > (Q - 1) // 2


def fq2_is_largest(y: Fq2) -> bool:
    """Lexicographic on (c1, c0): c1 decides unless it is 0."""
    return fq_is_largest(y[1]) or (y[1] == 0 and fq_is_largest(y[0]))


# ---------------------------------------------------------------- G1


def _fq_bytes(x: int) -> bytes:
    return x.to_bytes(FQ_BYTES, "big")


def _read_fq(data: bytes, what: str) -> int:
    x = int.from_bytes(data, "big")
    if x >= Q:
        raise EncodingError(f"{what}: coordinate is not canonical (>= q)")
    return x


def _encode(coords: bytes, compressed: bool, infinity: bool, largest: bool) -> bytes:
    flags = (FLAG_COMPRESSED if compressed else 0) | (FLAG_INFINITY if infinity else 0)
    if compressed and largest and not infinity:
        flags |= FLAG_SORT
    out = bytearray(coords)
    out[0] |= flags
    return bytes(out)


def _split_flags(data: bytes, size: int, what: str) -> tuple[bool, bool, bool, bytes]:
    """Check length and flag consistency; return (compressed, infinity, sort, payload)."""
    if not isinstance(data, (bytes, bytearray)):
        raise EncodingError(f"{what}: expected bytes, got {type(data).__name__}")
    if len(data) not in (size, 2 * size):
        raise EncodingError(f"{what}: expected {size} or {2 * size} bytes, got {len(data)}")
    compressed = bool(data[0] & FLAG_COMPRESSED)
    infinity = bool(data[0] & FLAG_INFINITY)
    sort = bool(data[0] & FLAG_SORT)
    if compressed != (len(data) == size):
        raise EncodingError(
            f"{what}: compression flag is {int(compressed)} but the encoding has {len(data)} bytes"
        )
    payload = bytes([data[0] & ~FLAG_MASK & 0xFF]) + bytes(data[1:])
    if infinity:
        if sort or any(payload):
            raise EncodingError(f"{what}: infinity flag set but other bits are not zero")
    elif not compressed and sort:
        raise EncodingError(f"{what}: sort flag set in an uncompressed encoding")
    return compressed, infinity, sort, payload


def g1_to_bytes(P: Any, compressed: bool = True) -> bytes:
    affine = from_py_ecc_g1(P)
    if affine is None:
        return _encode(bytes(FQ_BYTES * (1 if compressed else 2)), compressed, True, False)
    x, y = affine
    coords = _fq_bytes(x) if compressed else _fq_bytes(x) + _fq_bytes(y)
    return _encode(coords, compressed, False, fq_is_largest(y))


def g1_from_bytes(data: bytes, what: str = "G1 point") -> Any:
    """Decode 48 (compressed) or 96 bytes; checks flags, canonical x, curve, subgroup."""
    compressed, infinity, sort, payload = _split_flags(data, FQ_BYTES, what)
    if infinity:
        return to_py_ecc_g1(None)
    x = _read_fq(payload[:FQ_BYTES], what)
    if compressed:
        y = fq_sqrt((x * x * x + 4) % Q)
        if y is None:
            raise EncodingError(f"{what}: x is not the x-coordinate of a point on the curve")
        if fq_is_largest(y) != sort:
            y = (Q - y) % Q
    else:
        y = _read_fq(payload[FQ_BYTES:], what)
        if not g1_is_on_curve((x, y)):
            raise EncodingError(f"{what}: point is not on the curve y^2 = x^3 + 4")
    if not G1.in_subgroup((x, y)):
        raise EncodingError(f"{what}: point is not in the order-r subgroup")
    return to_py_ecc_g1((x, y))


# ---------------------------------------------------------------- G2


def _fq2_bytes(a: Fq2) -> bytes:
    return _fq_bytes(a[1]) + _fq_bytes(a[0])


def _read_fq2(data: bytes, what: str) -> Fq2:
    c1 = _read_fq(data[:FQ_BYTES], what)
    c0 = _read_fq(data[FQ_BYTES:], what)
    return (c0, c1)


def g2_to_bytes(P: Any, compressed: bool = True) -> bytes:
    affine = from_py_ecc_g2(P)
    if affine is None:
        return _encode(bytes(2 * FQ_BYTES * (1 if compressed else 2)), compressed, True, False)
    x, y = affine
    coords = _fq2_bytes(x) if compressed else _fq2_bytes(x) + _fq2_bytes(y)
    return _encode(coords, compressed, False, fq2_is_largest(y))


def g2_from_bytes(data: bytes, what: str = "G2 point") -> Any:
    """Decode 96 (compressed) or 192 bytes; checks flags, canonical x, twist, subgroup."""
    compressed, infinity, sort, payload = _split_flags(data, 2 * FQ_BYTES, what)
    if infinity:
        return to_py_ecc_g2(None)
    x = _read_fq2(payload[: 2 * FQ_BYTES], what)
    if compressed:
        y = fq2_sqrt(f2_add(f2_mul(f2_sqr(x), x), B2))  # y^2 = x^3 + 4(1 + i)
        if y is None:
            raise EncodingError(f"{what}: x is not the x-coordinate of a point on the twist")
        if fq2_is_largest(y) != sort:
            y = ((Q - y[0]) % Q, (Q - y[1]) % Q)
    else:
        y = _read_fq2(payload[2 * FQ_BYTES :], what)
        if not g2_is_on_curve((x, y)):
            raise EncodingError(f"{what}: point is not on the twist y^2 = x^3 + 4(1 + i)")
    if not G2.in_subgroup((x, y)):
        raise EncodingError(f"{what}: point is not in the order-r subgroup")
    return to_py_ecc_g2((x, y))


# ---------------------------------------------------------------- proof and verifying key


def proof_to_bytes(proof: Proof) -> bytes:
    """bellman `Proof::write`: A (G1) | B (G2) | C (G1), compressed: 192 bytes."""
    return g1_to_bytes(proof.a) + g2_to_bytes(proof.b) + g1_to_bytes(proof.c)


def proof_from_bytes(data: bytes) -> Proof:
    if not isinstance(data, (bytes, bytearray)) or len(data) != PROOF_BYTES:
        size = len(data) if isinstance(data, (bytes, bytearray)) else type(data).__name__
        raise EncodingError(f"proof: expected {PROOF_BYTES} bytes, got {size}")
    return Proof(
        a=g1_from_bytes(data[:48], "proof.a"),
        b=g2_from_bytes(data[48:144], "proof.b"),
        c=g1_from_bytes(data[144:], "proof.c"),
    )


def vk_to_bytes(vk: VerifyingKey) -> bytes:
    """bellman `VerifyingKey::write`: alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1,
    delta_g2 uncompressed, then u32 big-endian count and the IC points uncompressed."""
    if vk.beta_g1 is None or vk.delta_g1 is None:
        raise ValueError("vk_to_bytes: the bellman format needs vk.beta_g1 and vk.delta_g1")
    parts = [
        g1_to_bytes(vk.alpha_g1, False),
        g1_to_bytes(vk.beta_g1, False),
        g2_to_bytes(vk.beta_g2, False),
        g2_to_bytes(vk.gamma_g2, False),
        g1_to_bytes(vk.delta_g1, False),
        g2_to_bytes(vk.delta_g2, False),
        struct.pack(">I", len(vk.ic)),
        *(g1_to_bytes(P, False) for P in vk.ic),
    ]
    return b"".join(parts)


def vk_from_bytes(data: bytes) -> VerifyingKey:
    g1, g2 = 2 * FQ_BYTES, 4 * FQ_BYTES
    head = 3 * g1 + 3 * g2 + 4
    if not isinstance(data, (bytes, bytearray)) or len(data) < head:
        raise EncodingError(f"verifying key: expected at least {head} bytes")
    fields: list[Any] = []
    offset = 0
    for name, size in (
        ("alpha_g1", g1),
        ("beta_g1", g1),
        ("beta_g2", g2),
        ("gamma_g2", g2),
        ("delta_g1", g1),
        ("delta_g2", g2),
    ):
        chunk = data[offset : offset + size]
        decode = g1_from_bytes if size == g1 else g2_from_bytes
        fields.append(decode(chunk, f"vk.{name}"))
        offset += size
    (count,) = struct.unpack(">I", data[offset : offset + 4])
    offset += 4
    if len(data) != offset + count * g1:
        raise EncodingError(
            f"verifying key: {count} IC points need {offset + count * g1} bytes, got {len(data)}"
        )
    ic = tuple(
        g1_from_bytes(data[offset + i * g1 : offset + (i + 1) * g1], f"vk.ic[{i}]")
        for i in range(count)
    )
    alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2 = fields
    return VerifyingKey(alpha_g1, beta_g2, gamma_g2, delta_g2, ic, beta_g1, delta_g1)
