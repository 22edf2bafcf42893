"""The R1CS type and the test circuits: witnesses checked by hand-computed values."""

from __future__ import annotations

import random

import pytest
from cuzk_sim.reference.circuits import LC, Builder, cubic, random_r1cs, range_check, squaring_chain
from cuzk_sim.reference.field import R
from cuzk_sim.reference.r1cs import R1CS, UnsatisfiedConstraint
from hypothesis import given, settings
from hypothesis import strategies as st
from ref_strategies import r1cs_with_witness


def test_cubic_by_hand() -> None:
    r1cs, witness = cubic(3)
    # wires: 1, y (public), x, x^2, x^3
    assert witness == [1, 35, 3, 9, 27]
    assert (r1cs.num_public, r1cs.num_vars, r1cs.num_constraints) == (1, 5, 3)
    r1cs.check(witness)


@pytest.mark.parametrize(("value", "k"), [(0, 1), (1, 1), (5, 3), (255, 8), (2**20 - 1, 20)])
def test_range_check_accepts_values_below_2_to_the_k(value: int, k: int) -> None:
    r1cs, witness = range_check(value, k)
    assert r1cs.num_constraints == k + 1 and witness[1] == value
    r1cs.check(witness)


def test_range_check_rejects_values_at_or_above_2_to_the_k() -> None:
    r1cs, witness = range_check(8, 3)
    with pytest.raises(UnsatisfiedConstraint, match=r"constraint 3 \(sum of bits = value\)"):
        r1cs.check(witness)
    # a non-boolean "bit" breaks its own constraint
    r1cs, witness = range_check(1, 2)
    bad = list(witness)
    bad[2] = 2
    with pytest.raises(UnsatisfiedConstraint, match=r"constraint 0 \(bit0 is boolean\)") as err:
        r1cs.check(bad)
    assert (err.value.index, err.value.a, err.value.b, err.value.c) == (0, 2, 2, 2)


@pytest.mark.parametrize("n", [1, 2, 7, 64])
def test_squaring_chain(n: int) -> None:
    r1cs, witness = squaring_chain(n, 3)
    assert r1cs.num_constraints == n
    assert witness[1] == pow(3, 2**n, R)
    r1cs.check(witness)


@given(r1cs_with_witness(max_constraints=20))
@settings(max_examples=20)
def test_random_r1cs_is_satisfied(rw) -> None:
    r1cs, witness = rw
    r1cs.check(witness)
    assert len(witness) == r1cs.num_vars and witness[0] == 1


def test_random_r1cs_is_seeded() -> None:
    assert random_r1cs(random.Random(1), 5, 2, 3) == random_r1cs(random.Random(1), 5, 2, 3)
    assert random_r1cs(random.Random(1), 5, 2, 3) != random_r1cs(random.Random(2), 5, 2, 3)


@given(st.integers(0, R - 1), st.integers(0, R - 1), st.integers(0, 2**64))
@settings(max_examples=20)
def test_builder_linear_combinations(x: int, y: int, k: int) -> None:
    b = Builder()
    xv, yv = b.public(x), b.private(y)
    assert b.value(xv + yv) == (x + y) % R
    assert b.value(xv - yv) == (x - y) % R
    assert b.value(3 * xv + 5) == (3 * x + 5) % R
    assert b.value(k - yv) == (k - y) % R
    assert (xv - xv).terms == ()
    z = b.mul(xv + 1, yv)
    b.assert_equal(z, xv * y + yv)  # (x + 1)·y = x·y + y, as a linear identity with y known
    r1cs, witness = b.build()
    r1cs.check(witness)
    assert witness[:2] == [1, x] and witness[2] == y  # public wires first


def test_builder_orders_public_before_private() -> None:
    b = Builder()
    p = b.private(4)
    q = b.public(16)
    b.enforce(p, p, q, "p^2 = q")
    r1cs, witness = b.build()
    assert witness == [1, 16, 4]
    assert r1cs.A == (((2, 1),),) and r1cs.C == (((1, 1),),)
    assert isinstance(LC.constant(0), LC) and LC.constant(0).terms == ()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_public": -1}, "num_public"),
        ({"num_vars": 1}, r"num_vars must be >= 1 \+ num_public"),
        ({"A": (((9, 1),),)}, r"R1CS.A\[0\]: wire 9 not in \[0, 3\)"),
        ({"B": (((1, R),),)}, r"R1CS.B\[0\]: coefficient .* not in \[0, r\)"),
        ({"C": ((1,),)}, r"R1CS.C\[0\]: terms must be \(wire, coeff\)"),
        ({"C": ()}, "same number of rows"),
        ({"names": ("a", "b")}, "2 names for 1 rows"),
    ],
)
def test_r1cs_validation(kwargs: dict, message: str) -> None:
    args = {"num_public": 1, "num_vars": 3, "A": (((2, 1),),), "B": (((2, 1),),)}
    args |= {"C": (((1, 1),),)}
    args |= kwargs
    with pytest.raises(ValueError, match=message):
        R1CS(**args)


def test_witness_shape_errors() -> None:
    r1cs, witness = cubic(3)
    with pytest.raises(ValueError, match="witness has 4 values, the R1CS has 5"):
        r1cs.check(witness[:-1])
    with pytest.raises(ValueError, match=r"witness\[0\] is the constant wire"):
        r1cs.check([0, *witness[1:]])
    with pytest.raises(ValueError, match=r"witness\[2\] must be an int in \[0, r\)"):
        r1cs.check([1, 35, -3, 9, 27])


def test_bad_circuit_parameters() -> None:
    with pytest.raises(ValueError, match="k must be >= 1"):
        range_check(0, 0)
    with pytest.raises(ValueError, match="n must be >= 1"):
        squaring_chain(0)
    with pytest.raises(ValueError, match="random_r1cs"):
        random_r1cs(random.Random(0), 0, 0, 1)
