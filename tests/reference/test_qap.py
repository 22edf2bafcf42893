"""QAP reductions against plain polynomial arithmetic: A·B - C = H·Z for a satisfying
witness, and not divisible by Z for a broken one."""

from __future__ import annotations

import dataclasses
import random

from cuzk_sim.reference.circuits import cubic, random_r1cs
from cuzk_sim.reference.domain import Domain
from cuzk_sim.reference.field import R
from cuzk_sim.reference.qap import compute_h, evaluate_matrices, h_bellman, h_snarkjs, h_steps
from cuzk_sim.reference.r1cs import R1CS, evaluate_row
from cuzk_sim.reference.setup import setup
from hypothesis import given, settings
from ref_strategies import r1cs_with_witness


def interpolate(values: list[int], omega: int) -> list[int]:
    """Coefficients from evaluations at omega^i by the inverse DFT formula, O(n^2)."""
    n = len(values)
    n_inv = pow(n, -1, R)
    omega_inv = pow(omega, -1, R)
    return [
        n_inv * sum(v * pow(omega_inv, i * j, R) for i, v in enumerate(values)) % R
        for j in range(n)
    ]


def poly_mul(a: list[int], b: list[int]) -> list[int]:
    out = [0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] = (out[i + j] + x * y) % R
    return out


def poly_sub(a: list[int], b: list[int]) -> list[int]:
    size = max(len(a), len(b))
    a, b = a + [0] * (size - len(a)), b + [0] * (size - len(b))
    return [(x - y) % R for x, y in zip(a, b, strict=True)]


def divide_by_z(p: list[int], n: int) -> tuple[list[int], list[int]]:
    """p = q·(x^n - 1) + rem, by long division."""
    p = list(p)
    q = [0] * max(1, len(p) - n)
    for k in range(len(p) - 1, n - 1, -1):
        c = p[k]
        if c:
            q[k - n] = c
            p[k] = 0
            p[k - n] = (p[k - n] + c) % R  # subtract c·x^(k-n)·(x^n - 1)
    return q, p[:n]


def horner(coeffs: list[int], x: int) -> int:
    acc = 0
    for c in reversed(coeffs):
        acc = (acc * x + c) % R
    return acc


def qap_polynomials(r1cs: R1CS, witness: list[int], convention: str):
    A, B, C = r1cs.with_input_constraints()
    d = Domain.for_constraints(len(A), convention)  # type: ignore[arg-type]
    a, b, c = evaluate_matrices(A, B, C, witness, d.size)
    polys = [interpolate(v, d.omega) for v in (a, b, c)]
    return d, (a, b, c), poly_sub(poly_mul(polys[0], polys[1]), polys[2])


@given(r1cs_with_witness(max_constraints=10))
@settings(max_examples=10)
def test_bellman_h_times_z_is_ab_minus_c(rw) -> None:
    r1cs, witness = rw
    d, (a, b, c), p = qap_polynomials(r1cs, witness, "bellman")
    quotient, remainder = divide_by_z(p, d.size)
    assert not any(remainder)  # divisible by Z
    h = h_bellman(d, a, b, c)
    assert len(h) == d.size - 1
    assert h == (quotient + [0] * d.size)[: d.size - 1]


@given(r1cs_with_witness(max_constraints=10))
@settings(max_examples=10)
def test_snarkjs_h_is_ab_minus_c_on_the_odd_coset(rw) -> None:
    r1cs, witness = rw
    d, (a, b, c), p = qap_polynomials(r1cs, witness, "snarkjs")
    assert not any(divide_by_z(p, d.size)[1])
    w2n = d.omega_2n
    expected = [horner(p, pow(w2n, 2 * j + 1, R)) for j in range(d.size)]
    assert h_snarkjs(d, a, b, c) == expected


def test_broken_witness_is_not_divisible_by_z() -> None:
    r1cs, witness = random_r1cs(random.Random(7), 5, 1, 3)
    broken = list(witness)
    broken[-1] = (broken[-1] + 1) % R
    assert not r1cs.is_satisfied(broken)
    d, (a, b, c), p = qap_polynomials(r1cs, broken, "bellman")
    quotient, remainder = divide_by_z(p, d.size)
    assert any(remainder)
    # the bellman h of a broken witness does not reproduce A·B - C
    h = h_bellman(d, a, b, c)
    assert poly_sub(poly_mul(h, [R - 1] + [0] * (d.size - 1) + [1]), p) != [0] * len(p)


def test_missing_c_uses_a_times_b() -> None:
    r1cs, witness = cubic(4)
    for reduction in ("bellman", "snarkjs"):
        pk = setup(r1cs, rng=random.Random(1), reduction=reduction)
        assert compute_h(dataclasses.replace(pk, C=None), witness) == compute_h(pk, witness)
        # the key's matrices carry one appended row per public wire: x_i in A, 0 in B, C
        assert len(pk.A) == r1cs.num_constraints + r1cs.num_public + 1
        assert [evaluate_row(row, witness) for row in pk.A[-2:]] == [1, witness[1]]
        assert pk.B[-2:] == ((), ()) and pk.C[-2:] == ((), ())


@given(r1cs_with_witness(max_constraints=6))
@settings(max_examples=6)
def test_h_steps_intermediates(rw) -> None:
    r1cs, witness = rw
    for convention in ("bellman", "snarkjs"):
        d, (a, b, c), p = qap_polynomials(r1cs, witness, convention)
        steps = h_steps(d, a, b, c, convention)
        g = 7 if convention == "bellman" else d.omega_2n
        assert steps.coset == g
        assert list(steps.a_coeffs) == interpolate(a, d.omega)
        coset_points = [g * pow(d.omega, i, R) % R for i in range(d.size)]
        assert list(steps.b_coset) == [horner(list(steps.b_coeffs), x) for x in coset_points]
        z_on_coset = (pow(g, d.size, R) - 1) % R
        divisor = pow(z_on_coset, -1, R) if convention == "bellman" else 1
        assert list(steps.h_coset) == [horner(p, x) * divisor % R for x in coset_points]
