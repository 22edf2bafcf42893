"""The Groth16 verifier: e(A, B) = e(alpha, beta) · e(IC(x), gamma) · e(C, delta).

Checked as one product e(-A, B) · e(alpha, beta) · e(IC, gamma) · e(C, delta) = 1: four
Miller loops and ONE final exponentiation. A wrong proof gives False; malformed input
(a public input >= r, a wrong count, a point off the curve or outside the subgroup) raises
ValueError (InvalidPoint for points).
"""

from __future__ import annotations

from collections.abc import Sequence

import py_ecc.optimized_bls12_381 as bls

from .curve import G1, check_g1, check_g2, to_py_ecc_g1
from .field import R
from .msm import pippenger
from .types import Proof, VerifyingKey


def check_public_inputs(vk: VerifyingKey, public_inputs: Sequence[int]) -> None:
    if len(public_inputs) != vk.num_public:
        raise ValueError(
            f"verify: {len(public_inputs)} public inputs, the verifying key expects {vk.num_public}"
        )
    for i, x in enumerate(public_inputs):
        if not isinstance(x, int) or isinstance(x, bool) or not 0 <= x < R:
            raise ValueError(f"verify: public_inputs[{i}] must be an int in [0, r), got {x!r}")


def verify(vk: VerifyingKey, public_inputs: Sequence[int], proof: Proof) -> bool:
    check_public_inputs(vk, public_inputs)
    a = check_g1(proof.a, "proof.a")
    check_g2(proof.b, "proof.b")
    check_g1(proof.c, "proof.c")
    ic = [check_g1(P, f"vk.ic[{i}]") for i, P in enumerate(vk.ic)]
    check_g1(vk.alpha_g1, "vk.alpha_g1")
    for name in ("beta_g2", "gamma_g2", "delta_g2"):
        check_g2(getattr(vk, name), f"vk.{name}")
    # IC(x) = ic_0 + sum_i x_i ic_i
    ic_x = to_py_ecc_g1(G1.normalize_many([pippenger(G1, ic, [1, *public_inputs])])[0])
    minus_a = to_py_ecc_g1(None if a is None else (a[0], -a[1] % bls.field_modulus))
    miller = (
        bls.pairing(proof.b, minus_a, final_exponentiate=False)
        * bls.pairing(vk.beta_g2, vk.alpha_g1, final_exponentiate=False)
        * bls.pairing(vk.gamma_g2, ic_x, final_exponentiate=False)
        * bls.pairing(vk.delta_g2, proof.c, final_exponentiate=False)
    )
    return bls.final_exponentiate(miller) == bls.FQ12.one()
