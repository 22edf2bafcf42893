"""R1CS -> QAP: the h values the prover feeds to the h MSM, one function per reduction.

a_k, b_k, c_k = <A_k, w>, <B_k, w>, <C_k, w> are the evaluations on the domain H of the
polynomials A(x), B(x), C(x) of degree < n. For a satisfying witness A·B - C vanishes on
H, so A(x)B(x) - C(x) = H(x)Z(x) with Z(x) = x^n - 1 and deg H <= n - 2.

- bellman (bellman, bellperson, arkworks): evaluate A, B, C on the coset 7·H, where
  Z(7·omega^i) = 7^n - 1 is one nonzero constant; divide; interpolate back: the n - 1
  coefficients of H, paired with h_query = [tau^j Z(tau)/delta]_1.
- snarkjs: evaluate A·B - C on the odd coset omega_2n·H of the 2n domain, without dividing;
  paired with h_query = [L'_{2j+1}(tau)/delta]_1 (L' the 2n Lagrange basis) this gives
  sum_j (AB - C)(omega_2n^(2j+1)) L'_{2j+1}(tau) = A(tau)B(tau) - C(tau) = H(tau)Z(tau), since
  AB - C vanishes at the even points omega_2n^(2j) = omega^j.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .domain import Domain
from .field import GENERATOR_BELLMAN, R
from .r1cs import Matrix, evaluate_row
from .types import ProvingKey


def evaluate_matrices(
    A: Matrix, B: Matrix, C: Matrix | None, witness: Sequence[int], size: int
) -> tuple[list[int], list[int], list[int]]:
    """(a_k, b_k, c_k) for k < size, zero past the last row; c_k = a_k·b_k when C is None."""
    if len(A) > size:
        raise ValueError(f"{len(A)} constraint rows do not fit a domain of {size}")
    a = [evaluate_row(row, witness) for row in A] + [0] * (size - len(A))
    b = [evaluate_row(row, witness) for row in B] + [0] * (size - len(B))
    if C is None:
        c = [x * y % R for x, y in zip(a, b, strict=True)]
    else:
        c = [evaluate_row(row, witness) for row in C] + [0] * (size - len(C))
    return a, b, c


@dataclass(frozen=True)
class HSteps:
    """Every intermediate vector of `compute_h`, for step-by-step comparison (GPU NTT-H).

    a, b, c: evaluations on H; a_coeffs...: after iNTT; a_coset...: after the coset NTT
    (coset 7·H for bellman, omega_2n·H for snarkjs); h_coset: a·b - c on the coset, divided
    by Z there for bellman only; h: the MSM scalars (bellman: coset iNTT, n - 1 coefficients;
    snarkjs: h_coset itself)."""

    coset: int
    a: tuple[int, ...]
    b: tuple[int, ...]
    c: tuple[int, ...]
    a_coeffs: tuple[int, ...]
    b_coeffs: tuple[int, ...]
    c_coeffs: tuple[int, ...]
    a_coset: tuple[int, ...]
    b_coset: tuple[int, ...]
    c_coset: tuple[int, ...]
    h_coset: tuple[int, ...]
    h: tuple[int, ...]


def h_steps(domain: Domain, a: list[int], b: list[int], c: list[int], reduction: str) -> HSteps:
    """The reduction's h, keeping every intermediate (see the module docstring)."""
    if reduction not in ("bellman", "snarkjs"):
        raise ValueError(f"reduction must be 'bellman' or 'snarkjs', got {reduction!r}")
    g = GENERATOR_BELLMAN if reduction == "bellman" else domain.omega_2n
    coeffs = [domain.intt(v) for v in (a, b, c)]
    a_cos, b_cos, c_cos = (domain.coset_ntt(v, g) for v in coeffs)
    if reduction == "bellman":
        z_inv = pow(domain.vanishing_at(g), -1, R)  # Z(g·omega^i) = g^n - 1 for every i
        h_coset = [(x * y - z) * z_inv % R for x, y, z in zip(a_cos, b_cos, c_cos, strict=True)]
        h = domain.coset_intt(h_coset, g)[: domain.size - 1]  # h_{n-1} = 0 when satisfied
    else:
        h_coset = [(x * y - z) % R for x, y, z in zip(a_cos, b_cos, c_cos, strict=True)]
        h = h_coset
    return HSteps(
        g,
        *(tuple(v) for v in (a, b, c, *coeffs, a_cos, b_cos, c_cos, h_coset, h)),
    )


def h_bellman(domain: Domain, a: list[int], b: list[int], c: list[int]) -> list[int]:
    """Coefficients h_0..h_{n-2} of H = (AB - C)/Z, via the coset 7·H."""
    return list(h_steps(domain, a, b, c, "bellman").h)


def h_snarkjs(domain: Domain, a: list[int], b: list[int], c: list[int]) -> list[int]:
    """(AB - C)(omega_2n^(2j+1)) for j < n: A·B - C on the odd coset, not divided by Z."""
    return list(h_steps(domain, a, b, c, "snarkjs").h)


def compute_h_steps(pk: ProvingKey, witness: Sequence[int]) -> HSteps:
    """`compute_h` with its intermediates."""
    domain = Domain(pk.domain_size, pk.reduction)
    a, b, c = evaluate_matrices(pk.A, pk.B, pk.C, witness, pk.domain_size)
    return h_steps(domain, a, b, c, pk.reduction)


def compute_h(pk: ProvingKey, witness: Sequence[int]) -> list[int]:
    """The scalars of the h MSM for pk's reduction (stage `compute_h`)."""
    return list(compute_h_steps(pk, witness).h)
