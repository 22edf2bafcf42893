"""Groth16 key generation from explicit toxic waste (or a seeded RNG).

Deterministic core: `setup(r1cs, ToxicWaste(...))`; `rng` only draws the toxic waste.
Polynomials are evaluated at tau through the Lagrange basis of the domain:
u_i(tau) = sum_k A[k][i] L_k(tau), likewise v_i (B) and w_i (C).
"""

from __future__ import annotations

import functools
import random
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from .curve import G1, G2, to_py_ecc_g1, to_py_ecc_g2
from .domain import Domain
from .field import R, inv
from .fixed_base import FixedBaseTable
from .r1cs import R1CS, Matrix
from .types import REDUCTIONS, ProvingKey, Reduction, VerifyingKey


@dataclass(frozen=True)
class ToxicWaste:
    tau: int
    alpha: int
    beta: int
    gamma: int
    delta: int

    def __post_init__(self) -> None:
        for name in ("tau", "alpha", "beta", "gamma", "delta"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or not 0 < v < R:
                raise ValueError(f"ToxicWaste.{name} must be an int in [1, r), got {v!r}")

    @classmethod
    def random(cls, rng: random.Random | None = None) -> ToxicWaste:
        def draw() -> int:
            return rng.randrange(1, R) if rng is not None else secrets.randbelow(R - 1) + 1

        return cls(tau=draw(), alpha=draw(), beta=draw(), gamma=draw(), delta=draw())


@functools.cache
def generator_tables() -> tuple[FixedBaseTable, FixedBaseTable]:
    """Fixed-base tables of the G1 and G2 generators, built once per process."""
    return FixedBaseTable.build(G1, G1.generator), FixedBaseTable.build(G2, G2.generator)


def column_evaluations(matrix: Matrix, lagrange: Sequence[int], num_vars: int) -> list[int]:
    """p_i(tau) = sum_k M[k][i] L_k(tau) for every wire i."""
    out = [0] * num_vars
    for row, l_k in zip(matrix, lagrange, strict=False):
        for wire, coeff in row:
            out[wire] += coeff * l_k
    return [v % R for v in out]


def setup(
    r1cs: R1CS,
    toxic: ToxicWaste | None = None,
    rng: random.Random | None = None,
    reduction: Reduction = "bellman",
) -> ProvingKey:
    """Proving key (with its verifying key) for `r1cs` under `reduction`."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"setup: reduction must be one of {REDUCTIONS}, got {reduction!r}")
    if toxic is None:
        toxic = ToxicWaste.random(rng)
    tau, alpha, beta, gamma, delta = toxic.tau, toxic.alpha, toxic.beta, toxic.gamma, toxic.delta
    A, B, C = r1cs.with_input_constraints()
    domain = Domain.for_constraints(len(A), reduction)
    n = domain.size
    z_tau = domain.vanishing_at(tau)
    if z_tau == 0:
        raise ValueError("ToxicWaste.tau lies in the evaluation domain (Z(tau) = 0)")

    lagrange = domain.lagrange_at(tau)
    m1 = r1cs.num_vars
    u = column_evaluations(A, lagrange, m1)
    v = column_evaluations(B, lagrange, m1)
    w = column_evaluations(C, lagrange, m1)
    l_pub = r1cs.num_public
    gamma_inv, delta_inv = inv(gamma), inv(delta)
    # beta u_i + alpha v_i + w_i: the combined column that IC (/gamma) and L (/delta) commit to
    combined = [(beta * u[i] + alpha * v[i] + w[i]) % R for i in range(m1)]
    ic_scalars = [x * gamma_inv % R for x in combined[: l_pub + 1]]
    l_scalars = [x * delta_inv % R for x in combined[l_pub + 1 :]]
    if reduction == "bellman":
        # tau^j Z(tau) / delta, j = 0..n-2
        h_scalars, power = [], z_tau * delta_inv % R
        for _ in range(n - 1):
            h_scalars.append(power)
            power = power * tau % R
    else:
        # L'_{2j+1}(tau) / delta: odd Lagrange points of the 2n domain (snarkjs zkey_new)
        lagrange_2n = Domain(2 * n, "snarkjs").lagrange_at(tau)
        h_scalars = [x * delta_inv % R for x in lagrange_2n[1::2]]

    g1, g2 = generator_tables()

    def points_g1(scalars: Sequence[int]) -> tuple:
        return tuple(to_py_ecc_g1(P) for P in g1.multiply_many(scalars))

    def points_g2(scalars: Sequence[int]) -> tuple:
        return tuple(to_py_ecc_g2(P) for P in g2.multiply_many(scalars))

    alpha_g1, beta_g1, delta_g1 = points_g1([alpha, beta, delta])
    beta_g2, gamma_g2, delta_g2 = points_g2([beta, gamma, delta])
    vk = VerifyingKey(
        alpha_g1, beta_g2, gamma_g2, delta_g2, points_g1(ic_scalars), beta_g1, delta_g1
    )
    return ProvingKey(
        vk=vk,
        alpha_g1=alpha_g1,
        beta_g1=beta_g1,
        beta_g2=beta_g2,
        delta_g1=delta_g1,
        delta_g2=delta_g2,
        a_query=points_g1(u),
        b_g1_query=points_g1(v),
        b_g2_query=points_g2(v),
        h_query=points_g1(h_scalars),
        l_query=points_g1(l_scalars),
        domain_size=n,
        reduction=reduction,
        num_public=l_pub,
        num_vars=m1,
        A=A,
        B=B,
        C=C,
    )
