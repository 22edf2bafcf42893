"""Fr helpers and the evaluation domain: constants against published values, NTTs
against naive polynomial evaluation."""

from __future__ import annotations

import py_ecc.optimized_bls12_381 as bls
import pytest
from cuzk_sim.reference.domain import Domain
from cuzk_sim.reference.field import (
    Q,
    R,
    batch_inverse,
    from_mont,
    inv,
    root_of_unity,
    to_mont,
)
from hypothesis import given
from hypothesis import strategies as st
from ref_strategies import nonzero_scalars, scalars


def horner(coeffs: list[int], x: int) -> int:
    acc = 0
    for c in reversed(coeffs):
        acc = (acc * x + c) % R
    return acc


def test_moduli_match_py_ecc() -> None:
    assert bls.curve_order == R
    assert bls.field_modulus == Q


def test_bellman_root_of_unity_matches_zkcrypto_bls12_381() -> None:
    # zkcrypto/bls12_381 src/scalar.rs ROOT_OF_UNITY = 7^t, little-endian Montgomery limbs.
    limbs = [0xB9B58D8C5F0E466A, 0x5B1B4C801819D7EC, 0x0AF53AE352A31E64, 0x5BF3ADDA19E9B27B]
    montgomery = sum(limb << (64 * i) for i, limb in enumerate(limbs))
    assert root_of_unity(1 << 32, 7) == from_mont(montgomery)


def test_snarkjs_generator_is_the_smallest_non_residue() -> None:
    # ffjavascript picks nqr = the smallest quadratic non-residue (Euler's criterion).
    euler = [pow(a, (R - 1) // 2, R) for a in (2, 3, 4, 5)]
    assert euler == [1, 1, 1, R - 1]


@pytest.mark.parametrize("convention", ["bellman", "snarkjs"])
@pytest.mark.parametrize("log_n", [0, 1, 3, 6])
def test_omega_is_a_primitive_root(convention: str, log_n: int) -> None:
    d = Domain(1 << log_n, convention)  # type: ignore[arg-type]
    assert pow(d.omega, d.size, R) == 1
    if d.size > 1:
        assert pow(d.omega, d.size // 2, R) == R - 1
    assert pow(d.omega_2n, 2, R) == d.omega


def test_conventions_differ() -> None:
    assert Domain(8, "bellman").omega != Domain(8, "snarkjs").omega


@given(nonzero_scalars)
def test_inverse_and_montgomery(a: int) -> None:
    assert a * inv(a) % R == 1
    assert to_mont(a) == a * pow(2, 256, R) % R
    assert from_mont(to_mont(a)) == a


@given(st.lists(nonzero_scalars, min_size=0, max_size=20))
def test_batch_inverse(values: list[int]) -> None:
    assert batch_inverse(values) == [pow(v, -1, R) for v in values]


def test_inverse_of_zero_is_an_error() -> None:
    with pytest.raises(ZeroDivisionError):
        inv(0)
    with pytest.raises(ZeroDivisionError, match="element 1"):
        batch_inverse([1, 0])


@st.composite
def domain_and_values(draw: st.DrawFn):
    log_n = draw(st.integers(min_value=0, max_value=5))
    convention = draw(st.sampled_from(["bellman", "snarkjs"]))
    values = draw(st.lists(scalars, min_size=1 << log_n, max_size=1 << log_n))
    return Domain(1 << log_n, convention), values


@given(domain_and_values())
def test_ntt_is_polynomial_evaluation(dv: tuple[Domain, list[int]]) -> None:
    d, coeffs = dv
    assert d.ntt(coeffs) == [horner(coeffs, pow(d.omega, i, R)) for i in range(d.size)]
    assert d.intt(d.ntt(coeffs)) == coeffs


@given(domain_and_values(), st.one_of(st.none(), nonzero_scalars))
def test_coset_ntt_is_evaluation_on_the_coset(dv: tuple[Domain, list[int]], g: int | None) -> None:
    d, coeffs = dv
    shift = (7 if d.convention == "bellman" else d.omega_2n) if g is None else g
    expected = [horner(coeffs, shift * pow(d.omega, i, R) % R) for i in range(d.size)]
    assert d.coset_ntt(coeffs, g) == expected
    assert d.coset_intt(d.coset_ntt(coeffs, g), g) == coeffs


@given(domain_and_values(), scalars)
def test_lagrange_basis_interpolates(dv: tuple[Domain, list[int]], tau: int) -> None:
    d, coeffs = dv
    evals = [horner(coeffs, pow(d.omega, i, R)) for i in range(d.size)]
    basis = d.lagrange_at(tau)
    assert sum(e * b for e, b in zip(evals, basis, strict=True)) % R == horner(coeffs, tau)


def test_lagrange_at_a_domain_point() -> None:
    d = Domain(4)
    assert d.lagrange_at(d.omega) == [0, 1, 0, 0]


@pytest.mark.parametrize("size", [0, 3, 6, -4, 2**40])
def test_bad_domain_sizes_are_rejected(size: int) -> None:
    with pytest.raises(ValueError, match="Domain.size"):
        Domain(size)


def test_bad_convention_and_oversized_input() -> None:
    with pytest.raises(ValueError, match="convention"):
        Domain(4, "arkworks")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="do not fit"):
        Domain(4).ntt([1, 2, 3, 4, 5])


@pytest.mark.parametrize(("count", "size"), [(1, 1), (2, 2), (3, 4), (4, 4), (5, 8), (1025, 2048)])
def test_domain_for_constraints(count: int, size: int) -> None:
    assert Domain.for_constraints(count).size == size
