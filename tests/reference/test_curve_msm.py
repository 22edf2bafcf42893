"""Raw-int group law, fixed-base tables and MSM, checked against py_ecc's own add/multiply."""

from __future__ import annotations

import random

import py_ecc.optimized_bls12_381 as bls
import pytest
from cuzk_sim.reference.curve import (
    G1,
    G2,
    InvalidPoint,
    check_g1,
    check_g2,
    from_py_ecc_g1,
    from_py_ecc_g2,
    to_py_ecc_g1,
    to_py_ecc_g2,
)
from cuzk_sim.reference.field import Q, R
from cuzk_sim.reference.fixed_base import FixedBaseTable
from cuzk_sim.reference.msm import (
    SCALAR_BITS,
    msm_g1,
    msm_g2,
    naive_msm,
    pippenger,
    signed_digits,
    window_bits,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from ref_strategies import R_MINUS_1, g1_points, g2_points, scalars

GROUPS = {
    "G1": (G1, from_py_ecc_g1, to_py_ecc_g1, bls.G1, bls.Z1),
    "G2": (G2, from_py_ecc_g2, to_py_ecc_g2, bls.G2, bls.Z2),
}


def oracle_msm(points, ks, zero):
    """sum k_i·P_i with py_ecc's multiply and add only."""
    acc = zero
    for P, k in zip(points, ks, strict=True):
        acc = bls.add(acc, bls.multiply(P, k))
    return acc


@pytest.mark.parametrize("name", ["G1", "G2"])
@given(a=scalars, b=scalars)
@settings(max_examples=10)
def test_group_law_matches_py_ecc(name: str, a: int, b: int) -> None:
    group, from_py, to_py, gen, zero = GROUPS[name]
    P = bls.multiply(gen, a) if a else zero
    Qp = bls.multiply(gen, b) if b else zero
    Pa, Qa = from_py(P), from_py(Qp)

    def out(jacobian):
        return to_py(group.normalize_many([jacobian])[0])

    assert bls.eq(out(group.add(group.to_jacobian(Pa), group.to_jacobian(Qa))), bls.add(P, Qp))
    assert bls.eq(out(group.add_affine(group.to_jacobian(Pa), Qa)), bls.add(P, Qp))
    assert bls.eq(out(group.double(group.to_jacobian(Pa))), bls.double(P))
    assert bls.eq(out(group.add_affine(group.to_jacobian(Pa), Pa)), bls.double(P))
    assert out(group.add_affine(group.to_jacobian(Pa), from_py(bls.neg(P)))) == zero
    assert bls.eq(out(group.multiply(Pa, b)), bls.multiply(P, b))


FIXED_TABLES = {
    "G1": FixedBaseTable.build(G1, G1.generator, window=4),
    "G2": FixedBaseTable.build(G2, G2.generator, window=4),
}


@pytest.mark.parametrize("name", ["G1", "G2"])
@given(k=scalars)
@settings(max_examples=10)
def test_fixed_base_table_matches_py_ecc(name: str, k: int) -> None:
    group, _, to_py, gen, zero = GROUPS[name]
    table = FIXED_TABLES[name]
    expected = bls.multiply(gen, k) if k % R else zero
    assert bls.eq(to_py(table.multiply_many([k])[0]), expected)


@given(st.lists(st.tuples(g1_points(), scalars), min_size=0, max_size=12))
@settings(max_examples=15)
def test_msm_g1_equals_naive_sum(pairs) -> None:
    points = [P for P, _ in pairs]
    ks = [k for _, k in pairs]
    assert bls.eq(msm_g1(points, ks), oracle_msm(points, ks, bls.Z1))


@given(st.lists(st.tuples(g2_points(), scalars), min_size=1, max_size=6))
@settings(max_examples=8)
def test_msm_g2_equals_naive_sum(pairs) -> None:
    points = [P for P, _ in pairs]
    ks = [k for _, k in pairs]
    assert bls.eq(msm_g2(points, ks), oracle_msm(points, ks, bls.Z2))
    assert bls.eq(naive_msm(points, ks), oracle_msm(points, ks, bls.Z2))


def test_msm_edge_cases() -> None:
    P = bls.multiply(bls.G1, 12345)
    # repeated points (bucket additions hit P + P), r - 1 (= -1), zeros, infinity
    points = [P, P, P, bls.Z1, bls.G1, bls.G1]
    ks = [5, 5, R_MINUS_1, 7, 0, R_MINUS_1]
    expected = bls.add(bls.multiply(P, 9), bls.neg(bls.G1))  # 5 + 5 - 1 = 9; -G1
    assert bls.eq(msm_g1(points, ks), expected)
    assert msm_g1([P, P], [1, R_MINUS_1]) == bls.Z1  # P - P
    assert msm_g1([], []) == bls.Z1
    assert msm_g1([P], [R + 3]) == msm_g1([P], [3])  # scalars are taken mod r


@pytest.mark.parametrize("c", [1, 2, 3, 5, 8])
def test_every_window_width_gives_the_same_sum(c: int) -> None:
    rng = random.Random(c)
    ks = [rng.randrange(R) for _ in range(9)]
    points = [G1.normalize_many([G1.multiply(G1.generator, rng.randrange(1, R))])[0] for _ in ks]
    assert G1.normalize_many([pippenger(G1, points, ks, c)]) == G1.normalize_many(
        [pippenger(G1, points, ks, 1)]
    )
    oracle = oracle_msm([to_py_ecc_g1(P) for P in points], ks, bls.Z1)
    assert bls.eq(to_py_ecc_g1(G1.normalize_many([pippenger(G1, points, ks, c)])[0]), oracle)


@given(scalars, st.integers(min_value=1, max_value=16))
def test_signed_digits_reconstruct_the_scalar(k: int, c: int) -> None:
    digits = signed_digits(k, c, SCALAR_BITS // c + 1)
    assert sum(d << (c * j) for j, d in enumerate(digits)) == k
    assert all(-(1 << (c - 1)) < d <= 1 << (c - 1) for d in digits)


def test_window_grows_with_size() -> None:
    widths = [window_bits(n) for n in (1, 16, 256, 1024, 65536)]
    assert widths == sorted(widths) and widths[0] == 1 and widths[-1] >= 10


def test_msm_input_errors() -> None:
    with pytest.raises(ValueError, match="2 points but 1 scalars"):
        msm_g1([bls.G1, bls.G1], [1])
    with pytest.raises(ValueError, match=r"scalars\[0\]"):
        msm_g1([bls.G1], [1.5])
    with pytest.raises(ValueError, match="empty"):
        naive_msm([], [])


def _off_subgroup_g1():
    """A point on E1 outside the order-r subgroup: x with x^3 + 4 a square (q = 3 mod 4)."""
    x = 1
    while True:
        rhs = (x**3 + 4) % Q
        y = pow(rhs, (Q + 1) // 4, Q)
        if y * y % Q == rhs:
            P = (bls.FQ(x), bls.FQ(y), bls.FQ.one())
            if not bls.is_inf(bls.multiply(P, R)):
                return P
        x += 1


def test_point_validation() -> None:
    check_g1(bls.G1, "g")  # valid points pass
    check_g2(bls.G2, "g")
    check_g1(bls.Z1, "zero")
    off_curve = (bls.FQ(1), bls.FQ(1), bls.FQ.one())
    with pytest.raises(InvalidPoint, match="proof.a: G1 point is not on the curve"):
        check_g1(off_curve, "proof.a")
    P = _off_subgroup_g1()
    assert bls.is_on_curve(P, bls.b)  # py_ecc agrees it is on the curve
    with pytest.raises(InvalidPoint, match="not in the order-r subgroup"):
        check_g1(P, "proof.c")
    off_twist = (bls.FQ2([1, 0]), bls.FQ2([1, 0]), bls.FQ2.one())
    with pytest.raises(InvalidPoint, match="not on the twist"):
        check_g2(off_twist, "proof.b")
    with pytest.raises(InvalidPoint, match="not a py_ecc G1 point"):
        check_g1("garbage", "proof.a")
