"""Groth16 keys and proof as plain frozen data: each field names the paper symbol it holds.

Notation (Groth 2016): wires w_0 = 1, w_1..w_l public, w_{l+1}..w_m private; u_i, v_i, w_i
are the QAP polynomials of column i of A, B, C (after the input rows are appended); tau,
alpha, beta, gamma, delta the toxic waste; [x]_1 = x·G1, [x]_2 = x·G2; n the domain size.

Points are py_ecc `optimized_bls12_381` projective tuples. Everything this package
produces is normalised to z = 1 (infinity is py_ecc's Z1/Z2), so dataclass equality is
point equality; compare foreign, unnormalised points with `py_ecc...eq`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from .r1cs import Matrix

Reduction = Literal["bellman", "snarkjs"]
REDUCTIONS: tuple[str, ...] = ("bellman", "snarkjs")

G1Point = Any  # py_ecc (FQ, FQ, FQ)
G2Point = Any  # py_ecc (FQ2, FQ2, FQ2)


@dataclass(frozen=True)
class VerifyingKey:
    alpha_g1: G1Point  # [alpha]_1
    beta_g2: G2Point  # [beta]_2
    gamma_g2: G2Point  # [gamma]_2
    delta_g2: G2Point  # [delta]_2
    ic: tuple[G1Point, ...]  # [(beta u_i(tau) + alpha v_i(tau) + w_i(tau)) / gamma]_1, i = 0..l
    # Not used by verify; bellman's VerifyingKey carries them and its byte format needs them.
    beta_g1: G1Point | None = None  # [beta]_1
    delta_g1: G1Point | None = None  # [delta]_1

    @property
    def num_public(self) -> int:
        return len(self.ic) - 1


@dataclass(frozen=True)
class ProvingKey:
    """Everything a prover needs besides the witness."""

    vk: VerifyingKey
    alpha_g1: G1Point  # [alpha]_1
    beta_g1: G1Point  # [beta]_1
    beta_g2: G2Point  # [beta]_2
    delta_g1: G1Point  # [delta]_1
    delta_g2: G2Point  # [delta]_2
    a_query: tuple[G1Point, ...]  # [u_i(tau)]_1, i = 0..m
    b_g1_query: tuple[G1Point, ...]  # [v_i(tau)]_1, i = 0..m
    b_g2_query: tuple[G2Point, ...]  # [v_i(tau)]_2, i = 0..m
    # bellman: [tau^j Z(tau) / delta]_1, j = 0..n-2 (H has degree <= n-2)
    # snarkjs: [L'_{2j+1}(tau) / delta]_1, j = 0..n-1, L' the Lagrange basis of the 2n domain
    h_query: tuple[G1Point, ...]
    l_query: tuple[G1Point, ...]  # [(beta u_i(tau) + alpha v_i(tau) + w_i(tau)) / delta]_1, i > l
    domain_size: int  # n = 2^k >= constraints + l + 1
    reduction: Reduction
    num_public: int  # l
    num_vars: int  # m + 1 (wire 0 included)
    # Constraint matrices with the input rows (x_i·0 = 0, i = 0..l) appended, so that
    # a_k = <A_k, w>, b_k, c_k for k < n are exactly the values the QAP interpolates.
    A: Matrix
    B: Matrix
    C: Matrix | None  # None for a snarkjs zkey: the prover then takes c_k = a_k·b_k

    @property
    def num_constraints(self) -> int:
        """Rows of A, input rows included."""
        return len(self.A)


@dataclass(frozen=True)
class Proof:
    a: G1Point  # [A]_1 = [alpha + sum w_i u_i(tau) + r delta]_1
    b: G2Point  # [B]_2 = [beta + sum w_i v_i(tau) + s delta]_2
    c: G1Point  # [C]_1 = [sum_{i>l} w_i (...)/delta + H(tau)Z(tau)/delta + sA + rB - rs delta]_1
