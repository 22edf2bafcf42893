"""zcash/bellman encodings: published vectors, round trips, and every rejection rule."""

from __future__ import annotations

import contextlib
import random

import py_ecc.optimized_bls12_381 as bls
import pytest
from cuzk_sim.reference.circuits import cubic
from cuzk_sim.reference.field import Q, R
from cuzk_sim.reference.prove import prove
from cuzk_sim.reference.serialize import (
    EncodingError,
    fq2_sqrt,
    g1_from_bytes,
    g1_to_bytes,
    g2_from_bytes,
    g2_to_bytes,
    proof_from_bytes,
    proof_to_bytes,
    vk_from_bytes,
    vk_to_bytes,
)
from cuzk_sim.reference.setup import setup
from cuzk_sim.reference.verify import verify
from hypothesis import given, settings
from hypothesis import strategies as st
from ref_strategies import g1_points, g2_points

# Generator encodings as published in CIP-0381 (cardano-foundation/CIPs, "Plutus support
# for pairings over BLS12-381"), which specifies the zcash format; the same bytes appear
# in zkcrypto/bls12_381's tests and arkworks' compressed serialisation.
G1_GEN_COMPRESSED = bytes.fromhex(
    "97f1d3a73197d7942695638c4fa9ac0fc3688c4f9774b905a14e3a3f171bac586c55e83ff97a1aeffb3af00adb22c6bb"
)
G2_GEN_COMPRESSED = bytes.fromhex(
    "93e02b6052719f607dacd3a088274f65596bd0d09920b61ab5da61bbdc7f5049334cf11213945d57e5ac7d055d042b7e"
    "024aa2b2f08f0a91260805272dc51051c6e47ad4fa403b02b4510b647ae3d1770bac0326a805bbefd48056c8c121bdb8"
)
# protolambda/go-kzg bls/bls_test.go TestPointCompression: k·G1 compressed.
GO_KZG_SCALAR = 44689111813071777962210527909085028157792767057343609826799812096627770269092
GO_KZG_COMPRESSED = bytes(
    [134, 87, 163, 76, 148, 138, 55, 228, 171, 85, 80, 116, 242, 13, 169, 151, 167, 6, 219, 183]
    + [108, 254, 214, 99, 184, 231, 210, 201, 39, 69, 184, 188, 105, 194, 22, 32, 9, 57, 220, 81]
    + [82, 164, 97, 236, 201, 116, 2, 83]
)


def test_published_vectors() -> None:
    assert g1_to_bytes(bls.G1) == G1_GEN_COMPRESSED
    assert g2_to_bytes(bls.G2) == G2_GEN_COMPRESSED
    assert g1_to_bytes(bls.multiply(bls.G1, GO_KZG_SCALAR)) == GO_KZG_COMPRESSED
    assert bls.eq(g1_from_bytes(G1_GEN_COMPRESSED), bls.G1)
    assert bls.eq(g2_from_bytes(G2_GEN_COMPRESSED), bls.G2)
    assert bls.eq(g1_from_bytes(GO_KZG_COMPRESSED), bls.multiply(bls.G1, GO_KZG_SCALAR))


def test_generator_uncompressed_is_x_then_y_big_endian() -> None:
    x, y = bls.normalize(bls.G1)
    assert g1_to_bytes(bls.G1, compressed=False) == x.n.to_bytes(48, "big") + y.n.to_bytes(
        48, "big"
    )
    gx, gy = bls.normalize(bls.G2)
    c1_then_c0 = b"".join(c.to_bytes(48, "big") for c in (*gx.coeffs[::-1], *gy.coeffs[::-1]))
    assert g2_to_bytes(bls.G2, compressed=False) == c1_then_c0


def test_infinity_encodings() -> None:
    assert g1_to_bytes(bls.Z1) == bytes([0xC0]) + bytes(47)
    assert g1_to_bytes(bls.Z1, compressed=False) == bytes([0x40]) + bytes(95)
    assert g2_to_bytes(bls.Z2) == bytes([0xC0]) + bytes(95)
    assert g2_to_bytes(bls.Z2, compressed=False) == bytes([0x40]) + bytes(191)
    assert bls.is_inf(g1_from_bytes(bytes([0xC0]) + bytes(47)))
    assert bls.is_inf(g2_from_bytes(bytes([0x40]) + bytes(191)))


@given(g1_points())
@settings(max_examples=15)
def test_g1_round_trip(P) -> None:
    for compressed in (True, False):
        data = g1_to_bytes(P, compressed)
        assert len(data) == (48 if compressed else 96)
        assert bls.eq(g1_from_bytes(data), P)


@given(g2_points())
@settings(max_examples=10)
def test_g2_round_trip(P) -> None:
    for compressed in (True, False):
        data = g2_to_bytes(P, compressed)
        assert len(data) == (96 if compressed else 192)
        assert bls.eq(g2_from_bytes(data), P)


def test_sort_flag_picks_the_larger_y() -> None:
    P = bls.multiply(bls.G1, 5)
    flags = {g1_to_bytes(P)[0] & 0x20, g1_to_bytes(bls.neg(P))[0] & 0x20}
    assert flags == {0, 0x20}  # P and -P differ only in the sort flag
    _, y = bls.normalize(P)
    assert bool(g1_to_bytes(P)[0] & 0x20) == (y.n > (Q - 1) // 2)


def flip(data: bytes, byte0_xor: int) -> bytes:
    return bytes([data[0] ^ byte0_xor]) + data[1:]


def test_bad_flags_are_rejected() -> None:
    P = bls.multiply(bls.G1, 7)
    compressed, uncompressed = g1_to_bytes(P), g1_to_bytes(P, False)
    with pytest.raises(EncodingError, match="compression flag is 0 but the encoding has 48"):
        g1_from_bytes(flip(compressed, 0x80))
    with pytest.raises(EncodingError, match="compression flag is 1 but the encoding has 96"):
        g1_from_bytes(flip(uncompressed, 0x80))
    with pytest.raises(EncodingError, match="sort flag set in an uncompressed"):
        g1_from_bytes(flip(uncompressed, 0x20))
    with pytest.raises(EncodingError, match="infinity flag set but other bits"):
        g1_from_bytes(flip(compressed, 0x40))
    with pytest.raises(EncodingError, match="infinity flag set but other bits"):
        g1_from_bytes(bytes([0xE0]) + bytes(47))  # infinity with the sort flag
    with pytest.raises(EncodingError, match="infinity flag set but other bits"):
        g2_from_bytes(bytes([0xC0]) + bytes(94) + b"\x01")
    with pytest.raises(EncodingError, match="expected 48 or 96 bytes, got 47"):
        g1_from_bytes(compressed[:-1])
    with pytest.raises(EncodingError, match="expected bytes"):
        g1_from_bytes("00" * 48)  # type: ignore[arg-type]


def test_non_canonical_coordinates_are_rejected() -> None:
    x, y = (c.n for c in bls.normalize(bls.G1))
    # (0, 2) is on the curve; x = 0 + q has the same residue but is not canonical and
    # still leaves the three flag bits free
    big_x = Q.to_bytes(48, "big")
    assert big_x[0] & 0xE0 == 0
    with pytest.raises(EncodingError, match="not canonical"):
        g1_from_bytes(bytes([big_x[0] | 0x80]) + big_x[1:])
    with pytest.raises(EncodingError, match="not canonical"):
        g1_from_bytes(big_x + (2).to_bytes(48, "big"))
    with pytest.raises(EncodingError, match="not canonical"):
        g1_from_bytes(x.to_bytes(48, "big") + (y + Q).to_bytes(48, "big"))
    with pytest.raises(EncodingError, match="not canonical"):
        g2_from_bytes(bytes([0x9F]) + bytes([0xFF]) * 95)  # x.c1 >= q


def test_points_off_the_curve_are_rejected() -> None:
    x, y = (c.n for c in bls.normalize(bls.G1))
    with pytest.raises(EncodingError, match="not on the curve"):
        g1_from_bytes(x.to_bytes(48, "big") + ((y + 1) % Q).to_bytes(48, "big"))
    # x = 1: 1 + 4 = 5 is not a square mod q (Euler's criterion), so no point has x = 1
    assert pow(5, (Q - 1) // 2, Q) == Q - 1
    with pytest.raises(EncodingError, match="not the x-coordinate of a point"):
        g1_from_bytes(bytes([0x80]) + (1).to_bytes(47, "big"))
    g2 = bytearray(g2_to_bytes(bls.G2, False))
    g2[-1] ^= 1  # y.c0 changed
    with pytest.raises(EncodingError, match="not on the twist"):
        g2_from_bytes(bytes(g2))


def test_points_outside_the_subgroup_are_rejected() -> None:
    # G1: the smallest x with x^3 + 4 a square; the cofactor is huge, so r·P != O
    x = 0
    while pow((x**3 + 4) % Q, (Q - 1) // 2, Q) != 1:
        x += 1
    y = pow((x**3 + 4) % Q, (Q + 1) // 4, Q)
    P = (bls.FQ(x), bls.FQ(y), bls.FQ.one())
    assert bls.is_on_curve(P, bls.b) and not bls.is_inf(bls.multiply(P, R))
    with pytest.raises(EncodingError, match="not in the order-r subgroup"):
        g1_from_bytes(x.to_bytes(48, "big") + y.to_bytes(48, "big"))
    with pytest.raises(EncodingError, match="not in the order-r subgroup"):
        g1_from_bytes(bytes([0x80 | (0x20 if y > (Q - 1) // 2 else 0)]) + x.to_bytes(48, "big")[1:])
    # G2: a point on the twist outside the subgroup, checked with py_ecc's arithmetic
    for x0 in range(1, 50):
        xs = bls.FQ2([x0, 1])
        rhs = xs**3 + bls.b2
        root = fq2_sqrt(tuple(rhs.coeffs))
        if root is not None:
            break
    ys = bls.FQ2(list(root))
    assert ys * ys == rhs  # the root is genuine (py_ecc arithmetic)
    P2 = (xs, ys, bls.FQ2.one())
    assert bls.is_on_curve(P2, bls.b2) and not bls.is_inf(bls.multiply(P2, R))
    data = b"".join(c.to_bytes(48, "big") for c in (x0 and 1, x0, root[1], root[0]))
    with pytest.raises(EncodingError, match="not in the order-r subgroup"):
        g2_from_bytes(data)


def test_proof_and_vk_bytes_round_trip() -> None:
    r1cs, witness = cubic(3)
    pk = setup(r1cs, rng=random.Random(5))
    proof = prove(pk, witness, r=11, s=13)
    data = proof_to_bytes(proof)
    assert len(data) == 192
    assert data[:48] == g1_to_bytes(proof.a) and data[144:] == g1_to_bytes(proof.c)
    assert proof_from_bytes(data) == proof
    with pytest.raises(EncodingError, match="expected 192 bytes, got 191"):
        proof_from_bytes(data[:-1])
    vk_bytes = vk_to_bytes(pk.vk)
    assert len(vk_bytes) == 3 * 96 + 3 * 192 + 4 + 96 * len(pk.vk.ic)
    vk = vk_from_bytes(vk_bytes)
    assert vk == pk.vk
    assert verify(vk, [35], proof_from_bytes(data))
    with pytest.raises(EncodingError, match="IC points need"):
        vk_from_bytes(vk_bytes + b"\x00")
    broken = bytearray(data)
    broken[0] ^= 0x20  # flip A's sort flag: -A, a different but valid point
    assert not verify(pk.vk, [35], proof_from_bytes(bytes(broken)))


VK_HEAD = 3 * 96 + 3 * 192 + 4
SIZES = [0, 47, 48, 96, 192, VK_HEAD + 96]
sized_bytes = st.sampled_from(SIZES).flatmap(lambda n: st.binary(min_size=n, max_size=n))


@given(sized_bytes, st.sampled_from([0x00, 0x80, 0xA0, 0xC0, 0x40]))
@settings(max_examples=60)
def test_arbitrary_bytes_decode_or_raise_encoding_error(data: bytes, flags: int) -> None:
    """Any byte string of a plausible size: a valid point / proof / key, or EncodingError,
    never another exception."""
    tagged = bytes([(data[0] & 0x1F) | flags]) + data[1:] if data else data
    for decode in (g1_from_bytes, g2_from_bytes, proof_from_bytes, vk_from_bytes):
        for candidate in (data, tagged):
            with contextlib.suppress(EncodingError):
                decode(candidate)
