"""The Groth16 prover, stage by stage (the stage names the GPU prover and its plan share).

compute_h   h scalars from the witness (qap.compute_h, per reduction)
msm_h       sum_j h_j [h_query_j]_1
msm_a       sum_i w_i [u_i(tau)]_1
msm_b_g1    sum_i w_i [v_i(tau)]_1
msm_b_g2    sum_i w_i [v_i(tau)]_2
msm_l       sum_{i>l} w_i [l_query_i]_1
assemble    A = alpha + msm_a + r delta;  B = beta + msm_b_g2 + s delta (G2; B1 in G1);
            C = msm_l + msm_h + s A + r B1 - r s delta
"""

from __future__ import annotations

import random
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .curve import G1, G2, from_py_ecc_g1, from_py_ecc_g2, to_py_ecc_g1, to_py_ecc_g2
from .field import R
from .msm import pippenger
from .qap import compute_h, evaluate_matrices
from .r1cs import UnsatisfiedConstraint
from .types import Proof, ProvingKey

STAGES = ("compute_h", "msm_h", "msm_a", "msm_b_g1", "msm_b_g2", "msm_l", "assemble")


@dataclass(frozen=True)
class ProofStages:
    """Every intermediate of one proof, for stage-by-stage comparison with another prover.
    MSM results are py_ecc points normalised to z = 1."""

    h: tuple[int, ...]
    msm_h: Any
    msm_a: Any
    msm_b_g1: Any
    msm_b_g2: Any
    msm_l: Any
    proof: Proof
    r: int
    s: int
    seconds: dict[str, float] = field(default_factory=dict, compare=False)


def check_key_shape(pk: ProvingKey) -> None:
    """The lengths a prover relies on, so that a badly mapped key (e.g. from a zkey) fails
    with the field's name instead of deep inside an MSM."""
    n, m1, l = pk.domain_size, pk.num_vars, pk.num_public
    if pk.reduction not in ("bellman", "snarkjs"):
        raise ValueError(
            f"ProvingKey.reduction must be 'bellman' or 'snarkjs', got {pk.reduction!r}"
        )
    if not isinstance(n, int) or n < 1 or n & (n - 1):
        raise ValueError(f"ProvingKey.domain_size must be a power of two, got {n!r}")
    if not 0 <= l < m1:
        raise ValueError(f"ProvingKey: num_public = {l} must be < num_vars = {m1}")
    expected = {
        "a_query": m1,
        "b_g1_query": m1,
        "b_g2_query": m1,
        "l_query": m1 - l - 1,
        "h_query": n - 1 if pk.reduction == "bellman" else n,
        "vk.ic": l + 1,
        "B": len(pk.A),
    }
    actual = {
        "a_query": len(pk.a_query),
        "b_g1_query": len(pk.b_g1_query),
        "b_g2_query": len(pk.b_g2_query),
        "l_query": len(pk.l_query),
        "h_query": len(pk.h_query),
        "vk.ic": len(pk.vk.ic),
        "B": len(pk.B),
    }
    if pk.C is not None:
        expected["C"], actual["C"] = len(pk.A), len(pk.C)
    for name, want in expected.items():
        if actual[name] != want:
            raise ValueError(
                f"ProvingKey.{name} has {actual[name]} entries, expected {want} "
                f"(num_vars {m1}, num_public {l}, domain {n}, {pk.reduction} reduction)"
            )
    if len(pk.A) > n:
        raise ValueError(f"ProvingKey: {len(pk.A)} constraint rows do not fit domain_size {n}")


def check_witness(pk: ProvingKey, witness: Sequence[int]) -> None:
    """Shape (length, wire 0 = 1, values in [0, r)) and, when pk has C, satisfaction."""
    if len(witness) != pk.num_vars:
        raise ValueError(f"witness has {len(witness)} values, the proving key has {pk.num_vars}")
    for i, x in enumerate(witness):
        if not isinstance(x, int) or isinstance(x, bool) or not 0 <= x < R:
            raise ValueError(f"witness[{i}] must be an int in [0, r), got {x!r}")
    if witness[0] != 1:
        raise ValueError(f"witness[0] is the constant wire and must be 1, got {witness[0]}")
    if pk.C is None:
        return  # a snarkjs zkey has no C: satisfaction cannot be checked from the key
    a, b, c = evaluate_matrices(pk.A, pk.B, pk.C, witness, len(pk.A))
    for k, (ak, bk, ck) in enumerate(zip(a, b, c, strict=True)):
        if ak * bk % R != ck:
            raise UnsatisfiedConstraint(k, ak, bk, ck)


def draw_scalar(value: int | None, rng: random.Random | None, name: str) -> int:
    """The blinding scalar `name` (r or s): the given value, checked, else drawn from rng,
    else from the OS. Shared with the GPU prover so both treat r, s alike."""
    if value is not None:
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < R:
            raise ValueError(f"prove: {name} must be an int in [0, r), got {value!r}")
        return value
    return rng.randrange(R) if rng is not None else secrets.randbelow(R)


def prove_stages(
    pk: ProvingKey,
    witness: Sequence[int],
    r: int | None = None,
    s: int | None = None,
    rng: random.Random | None = None,
) -> ProofStages:
    """The proof and all its intermediates; deterministic given r and s."""
    check_key_shape(pk)
    check_witness(pk, witness)
    r = draw_scalar(r, rng, "r")
    s = draw_scalar(s, rng, "s")
    seconds: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(stage: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        seconds[stage] = now - clock
        clock = now

    h = compute_h(pk, witness)
    lap("compute_h")
    g1 = [from_py_ecc_g1(P) for P in pk.h_query]
    h_acc = pippenger(G1, g1, h)
    lap("msm_h")
    a_acc = pippenger(G1, [from_py_ecc_g1(P) for P in pk.a_query], witness)
    lap("msm_a")
    b1_acc = pippenger(G1, [from_py_ecc_g1(P) for P in pk.b_g1_query], witness)
    lap("msm_b_g1")
    b2_acc = pippenger(G2, [from_py_ecc_g2(P) for P in pk.b_g2_query], witness)
    lap("msm_b_g2")
    private = witness[pk.num_public + 1 :]
    l_acc = pippenger(G1, [from_py_ecc_g1(P) for P in pk.l_query], private)
    lap("msm_l")

    h_pt, a_pt, b1_pt, l_pt = G1.normalize_many([h_acc, a_acc, b1_acc, l_acc])
    (b2_pt,) = G2.normalize_many([b2_acc])
    msm = {
        "msm_h": to_py_ecc_g1(h_pt),
        "msm_a": to_py_ecc_g1(a_pt),
        "msm_b_g1": to_py_ecc_g1(b1_pt),
        "msm_b_g2": to_py_ecc_g2(b2_pt),
        "msm_l": to_py_ecc_g1(l_pt),
    }
    proof = assemble(pk, msm, r, s)
    lap("assemble")
    return ProofStages(
        h=tuple(h),
        **msm,
        proof=proof,
        r=r,
        s=s,
        seconds=seconds,
    )


def assemble(key: Any, msm: Mapping[str, Any], r: int, s: int) -> Proof:
    """The proof from the five MSM results; the one assembly of both provers (the GPU
    prover calls it too). `key` has alpha_g1, beta_g1, beta_g2, delta_g1, delta_g2 (a
    ProvingKey, or the GPU prover's HostKey) and `msm` maps msm_h, msm_a, msm_b_g1,
    msm_b_g2, msm_l to their sums; all py_ecc points, any z."""
    alpha, beta1, delta1 = (from_py_ecc_g1(P) for P in (key.alpha_g1, key.beta_g1, key.delta_g1))
    beta2, delta2 = from_py_ecc_g2(key.beta_g2), from_py_ecc_g2(key.delta_g2)
    h, a, b1, l = (G1.to_jacobian(from_py_ecc_g1(msm[k])) for k in G1_SUMS)
    b2 = G2.to_jacobian(from_py_ecc_g2(msm["msm_b_g2"]))
    # A = alpha + sum w_i u_i + r delta
    A = G1.add(G1.add_affine(a, alpha), G1.multiply(delta1, r))
    # B = beta + sum w_i v_i + s delta, in G2 and in G1
    B2 = G2.add(G2.add_affine(b2, beta2), G2.multiply(delta2, s))
    B1 = G1.add(G1.add_affine(b1, beta1), G1.multiply(delta1, s))
    # C = L + H + s A + r B1 - r s delta
    A_affine, B1_affine = G1.normalize_many([A, B1])
    C = G1.add(l, h)
    C = G1.add(C, G1.multiply(A_affine, s))
    C = G1.add(C, G1.multiply(B1_affine, r))
    C = G1.add(C, G1.neg(G1.multiply(delta1, r * s % R)))
    A_out, C_out = G1.normalize_many([A, C])
    (B_out,) = G2.normalize_many([B2])
    return Proof(to_py_ecc_g1(A_out), to_py_ecc_g2(B_out), to_py_ecc_g1(C_out))


G1_SUMS = ("msm_h", "msm_a", "msm_b_g1", "msm_l")


def prove(
    pk: ProvingKey,
    witness: Sequence[int],
    r: int | None = None,
    s: int | None = None,
    rng: random.Random | None = None,
) -> Proof:
    """A Groth16 proof for `witness` under `pk`. Given r and s it is deterministic, so two
    provers compare byte for byte; otherwise r, s come from `rng` (or the OS)."""
    return prove_stages(pk, witness, r, s, rng).proof
