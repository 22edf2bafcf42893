"""setup / prove / verify: keys and proofs against the Groth16 formulas evaluated on
plain ints (then one py_ecc multiply), completeness and soundness through the pairing."""

from __future__ import annotations

import dataclasses
import random

import py_ecc.optimized_bls12_381 as bls
import pytest
from cuzk_sim.reference.circuits import cubic, random_r1cs
from cuzk_sim.reference.curve import InvalidPoint
from cuzk_sim.reference.domain import Domain
from cuzk_sim.reference.field import R
from cuzk_sim.reference.prove import STAGES, prove, prove_stages
from cuzk_sim.reference.r1cs import R1CS, UnsatisfiedConstraint
from cuzk_sim.reference.setup import ToxicWaste, setup
from cuzk_sim.reference.verify import verify
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from ref_strategies import nonzero_scalars, r1cs_with_witness

REDUCTIONS = ["bellman", "snarkjs"]


def lagrange_naive(points: list[int], j: int, x: int) -> int:
    """L_j(x) = prod_{k != j} (x - p_k) / (p_j - p_k)."""
    num, den = 1, 1
    for k, p in enumerate(points):
        if k != j:
            num = num * (x - p) % R
            den = den * (points[j] - p) % R
    return num * pow(den, -1, R) % R


def expected_scalars(
    r1cs: R1CS, witness: list[int], toxic: ToxicWaste, r: int, s: int, convention: str
):
    """The exponents of A, B, C and IC from the paper, with no code of the prover."""
    tau, alpha, beta, gamma, delta = (
        toxic.tau,
        toxic.alpha,
        toxic.beta,
        toxic.gamma,
        toxic.delta,
    )
    l = r1cs.num_public
    # the input rows x_i · 0 = 0 (i = 0..l) after the circuit's constraints
    rows_a = list(r1cs.A) + [((i, 1),) for i in range(l + 1)]
    rows_b = list(r1cs.B) + [() for _ in range(l + 1)]
    rows_c = list(r1cs.C) + [() for _ in range(l + 1)]
    n = 1
    while n < len(rows_a):
        n *= 2
    omega = Domain(n, convention).omega  # type: ignore[arg-type]
    points = [pow(omega, k, R) for k in range(n)]
    L = [lagrange_naive(points, k, tau) for k in range(n)]

    def columns(rows):
        out = [0] * r1cs.num_vars
        for k, row in enumerate(rows):
            for wire, coeff in row:
                out[wire] = (out[wire] + coeff * L[k]) % R
        return out

    u, v, w = columns(rows_a), columns(rows_b), columns(rows_c)
    a_tau = sum(x * y for x, y in zip(witness, u, strict=True)) % R
    b_tau = sum(x * y for x, y in zip(witness, v, strict=True)) % R
    c_tau = sum(x * y for x, y in zip(witness, w, strict=True)) % R
    hz = (a_tau * b_tau - c_tau) % R  # H(tau)·Z(tau)
    A = (alpha + a_tau + r * delta) % R
    B = (beta + b_tau + s * delta) % R
    private = sum(
        witness[i] * (beta * u[i] + alpha * v[i] + w[i]) for i in range(l + 1, r1cs.num_vars)
    )
    C = ((private + hz) * pow(delta, -1, R) + s * A + r * B - r * s * delta) % R
    ic = [(beta * u[i] + alpha * v[i] + w[i]) * pow(gamma, -1, R) % R for i in range(l + 1)]
    return A, B, C, ic


@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(
    rw=r1cs_with_witness(max_constraints=5), toxic=st.lists(nonzero_scalars, min_size=7, max_size=7)
)
@settings(max_examples=5)
def test_proof_matches_the_paper_formulas(reduction: str, rw, toxic) -> None:
    r1cs, witness = rw
    assume(pow(toxic[0], 1 << 32, R) != 1)  # tau outside every radix-2 domain
    tw = ToxicWaste(*toxic[:5])
    r, s = toxic[5:]
    pk = setup(r1cs, tw, reduction=reduction)
    proof = prove(pk, witness, r=r, s=s)
    A, B, C, ic = expected_scalars(r1cs, witness, tw, r, s, reduction)
    assert bls.eq(proof.a, bls.multiply(bls.G1, A))
    assert bls.eq(proof.b, bls.multiply(bls.G2, B))
    assert bls.eq(proof.c, bls.multiply(bls.G1, C))
    assert len(pk.vk.ic) == len(ic)
    for got, k in zip(pk.vk.ic, ic, strict=True):
        assert bls.eq(got, bls.multiply(bls.G1, k) if k else bls.Z1)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(rw=r1cs_with_witness(max_constraints=4), seed=st.integers(0, 2**32))
@settings(max_examples=3)
def test_completeness(reduction: str, rw, seed: int) -> None:
    r1cs, witness = rw
    rng = random.Random(seed)
    pk = setup(r1cs, rng=rng, reduction=reduction)
    proof = prove(pk, witness, rng=rng)
    assert verify(pk.vk, r1cs.public_inputs(witness), proof)


@pytest.fixture(scope="module", params=REDUCTIONS)
def keyed_proof(request):
    r1cs, witness = random_r1cs(random.Random(11), 6, 2, 4)
    pk = setup(r1cs, rng=random.Random(12), reduction=request.param)
    return pk, witness, prove(pk, witness, r=3, s=5)


def test_soundness_wrong_public_input(keyed_proof) -> None:
    pk, witness, proof = keyed_proof
    public = witness[1:3]
    assert verify(pk.vk, public, proof)
    assert not verify(pk.vk, [(public[0] + 1) % R, public[1]], proof)
    assert not verify(pk.vk, [public[0], (public[1] + 1) % R], proof)


@pytest.mark.parametrize("element", ["a", "b", "c"])
def test_soundness_replaced_element(keyed_proof, element: str) -> None:
    pk, witness, proof = keyed_proof
    other = {"a": bls.G1, "b": bls.G2, "c": bls.G1}[element]
    forged = dataclasses.replace(proof, **{element: other})
    assert not verify(pk.vk, witness[1:3], forged)
    doubled = dataclasses.replace(proof, **{element: bls.double(getattr(proof, element))})
    assert not verify(pk.vk, witness[1:3], doubled)


def test_prove_is_deterministic_given_r_and_s(keyed_proof) -> None:
    pk, witness, proof = keyed_proof
    assert prove(pk, witness, r=3, s=5) == proof
    other = prove(pk, witness, r=4, s=5)
    assert other != proof and verify(pk.vk, witness[1:3], other)
    assert prove(pk, witness, rng=random.Random(1)) == prove(pk, witness, rng=random.Random(1))


def test_stages_name_the_shared_stages(keyed_proof) -> None:
    pk, witness, proof = keyed_proof
    stages = prove_stages(pk, witness, r=3, s=5)
    assert stages.proof == proof
    assert tuple(stages.seconds) == STAGES
    # msm_a is sum w_i a_query_i, recomputed with py_ecc
    expected = bls.Z1
    for P, k in zip(pk.a_query, witness, strict=True):
        expected = bls.add(expected, bls.multiply(P, k))
    assert bls.eq(stages.msm_a, expected)


def test_key_without_c_gives_the_same_proof(keyed_proof) -> None:
    pk, witness, proof = keyed_proof
    assert prove(dataclasses.replace(pk, C=None), witness, r=3, s=5) == proof


def test_unsatisfied_witness_gives_no_proof() -> None:
    r1cs, witness = random_r1cs(random.Random(3), 4, 1, 3)
    pk = setup(r1cs, rng=random.Random(4))
    bad = list(witness)
    bad[-1] = (bad[-1] + 1) % R
    with pytest.raises(UnsatisfiedConstraint) as err:
        r1cs.check(bad)
    with pytest.raises(UnsatisfiedConstraint, match=f"constraint {err.value.index} "):
        prove(pk, bad, r=1, s=1)


@pytest.mark.parametrize(
    ("witness_edit", "message"),
    [
        (lambda w: w[:-1], "witness has 5 values"),
        (lambda w: [2, *w[1:]], r"witness\[0\] is the constant wire"),
        (lambda w: [*w[:-1], R], r"witness\[5\] must be an int in \[0, r\)"),
    ],
)
def test_malformed_witness(witness_edit, message: str) -> None:
    r1cs, witness = random_r1cs(random.Random(3), 4, 1, 4)
    pk = setup(r1cs, rng=random.Random(4))
    with pytest.raises(ValueError, match=message):
        prove(pk, witness_edit(witness), r=1, s=1)


def test_malformed_verify_input(keyed_proof) -> None:
    pk, witness, proof = keyed_proof
    with pytest.raises(ValueError, match=r"public_inputs\[0\] must be an int in \[0, r\)"):
        verify(pk.vk, [R, witness[2]], proof)
    with pytest.raises(ValueError, match="1 public inputs, the verifying key expects 2"):
        verify(pk.vk, witness[1:2], proof)
    off_curve = (bls.FQ(1), bls.FQ(1), bls.FQ.one())
    with pytest.raises(InvalidPoint, match="proof.a"):
        verify(pk.vk, witness[1:3], dataclasses.replace(proof, a=off_curve))


def test_setup_rejects_bad_toxic_waste() -> None:
    r1cs, _ = cubic()
    with pytest.raises(ValueError, match=r"ToxicWaste.gamma must be an int in \[1, r\)"):
        ToxicWaste(2, 3, 4, 0, 5)
    n = Domain.for_constraints(r1cs.num_constraints + 2).size
    tau_in_domain = Domain(n).omega
    with pytest.raises(ValueError, match="tau lies in the evaluation domain"):
        setup(r1cs, ToxicWaste(tau_in_domain, 2, 3, 4, 5))
    with pytest.raises(ValueError, match="reduction must be one of"):
        setup(r1cs, ToxicWaste(9, 2, 3, 4, 5), reduction="plonk")  # type: ignore[arg-type]


def test_setup_is_deterministic() -> None:
    r1cs, _ = cubic()
    assert setup(r1cs, rng=random.Random(1)) == setup(r1cs, rng=random.Random(1))
    assert setup(r1cs, ToxicWaste(9, 2, 3, 4, 5)) == setup(r1cs, ToxicWaste(9, 2, 3, 4, 5))


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ("a_query", r"ProvingKey.a_query has \d+ entries, expected"),
        ("b_g2_query", r"ProvingKey.b_g2_query has \d+ entries"),
        ("l_query", r"ProvingKey.l_query has \d+ entries"),
        ("h_query", r"ProvingKey.h_query has \d+ entries"),
    ],
)
def test_badly_shaped_key_is_named(keyed_proof, field: str, message: str) -> None:
    pk, witness, _ = keyed_proof
    short = dataclasses.replace(pk, **{field: getattr(pk, field)[:-1]})
    with pytest.raises(ValueError, match=message):
        prove(short, witness, r=1, s=1)


def test_bad_key_parameters_are_named(keyed_proof) -> None:
    pk, witness, _ = keyed_proof
    with pytest.raises(ValueError, match="domain_size must be a power of two"):
        prove(dataclasses.replace(pk, domain_size=12), witness, r=1, s=1)
    with pytest.raises(ValueError, match="reduction must be"):
        prove(dataclasses.replace(pk, reduction="plonk"), witness, r=1, s=1)
    with pytest.raises(ValueError, match=r"prove: r must be an int in \[0, r\)"):
        prove(pk, witness, r=R, s=1)


def test_one_assembly_for_both_provers_from_projective_msm_sums() -> None:
    """The GPU prover assembles with the reference's `assemble`; fed projective MSM sums
    (z != 1, as the GPU prover's chunk sums are) it gives the paper's A, B, C computed
    here with py_ecc's own arithmetic."""
    import types

    import cuzk_sim.gpu.prover as gpu_prover
    from cuzk_sim.reference.prove import assemble

    assert gpu_prover.assemble is assemble
    g1, g2, mul, add = bls.G1, bls.G2, bls.multiply, bls.add
    key = types.SimpleNamespace(
        alpha_g1=mul(g1, 3),
        beta_g1=mul(g1, 5),
        beta_g2=mul(g2, 5),
        delta_g1=mul(g1, 7),
        delta_g2=mul(g2, 7),
    )
    # sums as MSMs leave them: a sum of points, not normalised (z != 1)
    msm = {
        name: add(mul(g1, k), mul(g1, k + 1))
        for k, name in ((11, "msm_h"), (13, "msm_a"), (17, "msm_b_g1"), (19, "msm_l"))
    }
    msm["msm_b_g2"] = add(mul(g2, 17), mul(g2, 18))
    assert msm["msm_a"][2] != bls.FQ.one()
    r, s = 23, 29
    proof = assemble(key, msm, r, s)
    # discrete logs by hand: alpha 3, beta 5, delta 7; msm_a 27, msm_b 35, msm_h 23, msm_l 39
    a, b = 3 + 27 + r * 7, 5 + 35 + s * 7
    c = 39 + 23 + s * a + r * b - r * s * 7
    assert bls.eq(proof.a, mul(g1, a)) and bls.eq(proof.b, mul(g2, b))
    assert bls.eq(proof.c, mul(g1, c % R))
