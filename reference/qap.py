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


def h_bellman(domain: Domain, a: list[int], b: list[int], c: list[int]) -> list[int]:
    """Coefficients h_0..h_{n-2} of H = (AB - C)/Z, via the coset 7·H."""
    g = GENERATOR_BELLMAN
    a_coset = domain.coset_ntt(domain.intt(a), g)
    b_coset = domain.coset_ntt(domain.intt(b), g)
    c_coset = domain.coset_ntt(domain.intt(c), g)
    z_inv = pow(domain.vanishing_at(g), -1, R)  # Z(g·omega^i) = g^n - 1 for every i
    h_coset = [(x * y - z) * z_inv % R for x, y, z in zip(a_coset, b_coset, c_coset, strict=True)]
    h = domain.coset_intt(h_coset, g)
    return h[: domain.size - 1]  # h_{n-1} = 0 for a satisfying witness


def h_snarkjs(domain: Domain, a: list[int], b: list[int], c: list[int]) -> list[int]:
    """(AB - C)(omega_2n^(2j+1)) for j < n: A·B - C on the odd coset, not divided by Z."""
    g = domain.omega_2n
    a_odd = domain.coset_ntt(domain.intt(a), g)
    b_odd = domain.coset_ntt(domain.intt(b), g)
    c_odd = domain.coset_ntt(domain.intt(c), g)
    return [(x * y - z) % R for x, y, z in zip(a_odd, b_odd, c_odd, strict=True)]


def compute_h(pk: ProvingKey, witness: Sequence[int]) -> list[int]:
    """The scalars of the h MSM for pk's reduction (stage `compute_h`)."""
    domain = Domain(pk.domain_size, pk.reduction)
    a, b, c = evaluate_matrices(pk.A, pk.B, pk.C, witness, pk.domain_size)
    if pk.reduction == "bellman":
        return h_bellman(domain, a, b, c)
    if pk.reduction == "snarkjs":
        return h_snarkjs(domain, a, b, c)
    raise ValueError(f"ProvingKey.reduction must be 'bellman' or 'snarkjs', got {pk.reduction!r}")
