"""A proof's assembly split so that its scalar multiplications run beside the GPU work.

The assembly (reference/prove.py `assemble`) multiplies six points by r, s or r s: with
full-size blinding scalars that is ~23 ms of Python ints on a CI-class CPU, in series
after the GPU in a one-partition prove. By linearity

    A  = alpha + a + r delta_1
    B2 = beta_2 + b_2 + s delta_2
    C  = L + H + s A + r B_1 - r s delta_1          (B_1 = beta_1 + b_1 + s delta_1)
       = L + H + (s alpha + r beta_1 + r s delta_1) + s a + r b_1

so the products of key points (`blinding`: r delta_1, s delta_2, s alpha + r beta_1 + r s
delta_1) can start with the partition, and the two products of MSM results (s a, r b_1)
as soon as the MSMs of A and B_1 are done, beside the MSMs after them (gpu/prover.py
`partition(..., scale=)`); what is left after the GPU is a few additions
(`assemble_blinded`). The proof is the reference's, point for point (tests).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cuzk_sim.reference.curve import (
    G1,
    G2,
    from_py_ecc_g1,
    from_py_ecc_g2,
    to_py_ecc_g1,
    to_py_ecc_g2,
)
from cuzk_sim.reference.field import R
from cuzk_sim.reference.types import Proof

# the MSM results multiplied by a blinding scalar in the tail process: stage -> "r" or "s"
SCALED = {"msm_a": "s", "msm_b_g1": "r"}


@dataclass(frozen=True)
class Blinding:
    """The key-only products of one proof's assembly, affine (None: infinity)."""

    r_delta1: Any
    s_delta2: Any
    c_key: Any  # s alpha + r beta_1 + r s delta_1


def blinding(ends: tuple, r: int, s: int) -> Blinding:
    """ends: (alpha_1, beta_1, beta_2, delta_1, delta_2) as py_ecc points."""
    alpha, beta1, delta1 = (from_py_ecc_g1(ends[i]) for i in (0, 1, 3))
    delta2 = from_py_ecc_g2(ends[4])
    c_key = G1.add(G1.multiply(alpha, s), G1.multiply(beta1, r))
    c_key = G1.add(c_key, G1.multiply(delta1, r * s % R))
    r_delta1, c_key = G1.normalize_many([G1.multiply(delta1, r), c_key])
    (s_delta2,) = G2.normalize_many([G2.multiply(delta2, s)])
    return Blinding(r_delta1, s_delta2, c_key)


def scale_g1(point: Any, k: int) -> Any:
    """k P for a py_ecc G1 point, as a py_ecc point (what a tail task returns)."""
    (out,) = G1.normalize_many([G1.multiply(from_py_ecc_g1(point), k)])
    return to_py_ecc_g1(out)


def scales(r: int, s: int) -> dict[str, int]:
    """The scalar each SCALED stage's result is multiplied by."""
    return {stage: {"r": r, "s": s}[which] for stage, which in SCALED.items()}


def assemble_blinded(
    ends: tuple, msm: Mapping[str, Any], scaled: Mapping[str, Any], b: Blinding
) -> Proof:
    """The proof from the five MSM sums (py_ecc points), s a and r b_1 (`scaled`, py_ecc
    points) and the key-only products: additions only."""
    alpha, beta2 = from_py_ecc_g1(ends[0]), from_py_ecc_g2(ends[2])
    h, a, l = (G1.to_jacobian(from_py_ecc_g1(msm[k])) for k in ("msm_h", "msm_a", "msm_l"))
    b2 = G2.to_jacobian(from_py_ecc_g2(msm["msm_b_g2"]))
    A = G1.add_affine(G1.add_affine(a, alpha), b.r_delta1)
    B2 = G2.add_affine(G2.add_affine(b2, beta2), b.s_delta2)
    C = G1.add_affine(G1.add(l, h), b.c_key)
    for stage in SCALED:
        C = G1.add_affine(C, from_py_ecc_g1(scaled[stage]))
    A_out, C_out = G1.normalize_many([A, C])
    (B_out,) = G2.normalize_many([B2])
    return Proof(to_py_ecc_g1(A_out), to_py_ecc_g2(B_out), to_py_ecc_g1(C_out))
