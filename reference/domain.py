"""Radix-2 evaluation domain over Fr: the subgroup H = <omega> of size n = 2^k and its NTTs.

Two conventions pick omega (both as g^((r-1)/n), differing only in g):
- `bellman` (bellman, bellperson, arkworks): g = 7, the multiplicative generator of Fr*;
  the coset used to divide by Z is 7·H.
- `snarkjs` (ffjavascript): g = 5, the smallest quadratic non-residue; the coset used is
  the odd half of the 2n-th roots, omega_2n·H.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from .field import GENERATOR_BELLMAN, NONRESIDUE_SNARKJS, R, S, batch_inverse, root_of_unity

Convention = Literal["bellman", "snarkjs"]
CONVENTION_ROOT: dict[str, int] = {"bellman": GENERATOR_BELLMAN, "snarkjs": NONRESIDUE_SNARKJS}


def _bit_reverse(values: list[int]) -> None:
    n = len(values)
    j = 0
    for i in range(1, n):
        bit = n >> 1
        while j & bit:
            j ^= bit
            bit >>= 1
        j |= bit
        if i < j:
            values[i], values[j] = values[j], values[i]


def _ntt_in_place(values: list[int], omega: int) -> None:
    """Cooley-Tukey, decimation in time: y_i = sum_j x_j omega^(ij)."""
    n = len(values)
    _bit_reverse(values)
    half = 1
    while half < n:
        w_step = pow(omega, n // (2 * half), R)
        twiddles = [1] * half
        for k in range(1, half):
            twiddles[k] = twiddles[k - 1] * w_step % R
        for start in range(0, n, 2 * half):
            for k in range(half):
                u = values[start + k]
                v = values[start + k + half] * twiddles[k] % R
                values[start + k] = (u + v) % R
                values[start + k + half] = (u - v) % R
        half *= 2


@dataclass(frozen=True)
class Domain:
    """H = {omega^i : 0 <= i < size}; Z(x) = x^size - 1 vanishes exactly on H."""

    size: int
    convention: Convention = "bellman"
    omega: int = field(init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.size, int) or self.size < 1 or self.size & (self.size - 1):
            raise ValueError(f"Domain.size must be a power of two >= 1, got {self.size!r}")
        if self.size > 1 << (S - 1):
            raise ValueError(f"Domain.size must be <= 2^{S - 1} (the 2n coset needs 2^{S})")
        if self.convention not in CONVENTION_ROOT:
            raise ValueError(
                f"Domain.convention must be one of {sorted(CONVENTION_ROOT)}, "
                f"got {self.convention!r}"
            )
        g = CONVENTION_ROOT[self.convention]
        object.__setattr__(self, "omega", root_of_unity(self.size, g))

    @classmethod
    def for_constraints(cls, count: int, convention: Convention = "bellman") -> Domain:
        """Smallest domain with at least `count` points (count = constraints + inputs)."""
        return cls(1 << max(0, count - 1).bit_length(), convention)

    @property
    def log_size(self) -> int:
        return self.size.bit_length() - 1

    @property
    def omega_inv(self) -> int:
        return pow(self.omega, -1, R)

    @property
    def size_inv(self) -> int:
        return pow(self.size, -1, R)

    @property
    def omega_2n(self) -> int:
        """A primitive 2n-th root with omega_2n^2 = omega (same convention)."""
        return root_of_unity(2 * self.size, CONVENTION_ROOT[self.convention])

    @property
    def default_coset(self) -> int:
        """The coset shift g of this convention's reduction: 7 (bellman), omega_2n (snarkjs)."""
        return GENERATOR_BELLMAN if self.convention == "bellman" else self.omega_2n

    def elements(self) -> list[int]:
        out = [1] * self.size
        for i in range(1, self.size):
            out[i] = out[i - 1] * self.omega % R
        return out

    def _padded(self, values: Sequence[int], what: str) -> list[int]:
        if len(values) > self.size:
            raise ValueError(f"{what}: {len(values)} values do not fit a domain of {self.size}")
        return [v % R for v in values] + [0] * (self.size - len(values))

    def ntt(self, coeffs: Sequence[int]) -> list[int]:
        """Coefficients -> evaluations on H: y_i = f(omega^i)."""
        values = self._padded(coeffs, "ntt")
        _ntt_in_place(values, self.omega)
        return values

    def intt(self, evals: Sequence[int]) -> list[int]:
        """Evaluations on H -> coefficients: f_j = n^-1 sum_i y_i omega^(-ij)."""
        values = self._padded(evals, "intt")
        _ntt_in_place(values, self.omega_inv)
        n_inv = self.size_inv
        return [v * n_inv % R for v in values]

    def coset_ntt(self, coeffs: Sequence[int], g: int | None = None) -> list[int]:
        """Coefficients -> evaluations on g·H: scale f_j by g^j, then ntt."""
        g = self.default_coset if g is None else g % R
        values = self._padded(coeffs, "coset_ntt")
        power = 1
        for j in range(self.size):
            values[j] = values[j] * power % R
            power = power * g % R
        _ntt_in_place(values, self.omega)
        return values

    def coset_intt(self, evals: Sequence[int], g: int | None = None) -> list[int]:
        """Evaluations on g·H -> coefficients: intt, then scale f_j by g^-j."""
        g = self.default_coset if g is None else g % R
        coeffs = self.intt(evals)
        g_inv = pow(g, -1, R)
        power = 1
        for j in range(self.size):
            coeffs[j] = coeffs[j] * power % R
            power = power * g_inv % R
        return coeffs

    def vanishing_at(self, x: int) -> int:
        """Z(x) = x^n - 1."""
        return (pow(x, self.size, R) - 1) % R

    def lagrange_at(self, tau: int) -> list[int]:
        """L_j(tau) for every j: L_j(x) = omega^j (x^n - 1) / (n (x - omega^j)).
        For tau in H, L_j(tau) is 1 at tau = omega^j and 0 elsewhere."""
        tau %= R
        omegas = self.elements()
        z_tau = self.vanishing_at(tau)
        if z_tau == 0:
            return [1 if w == tau else 0 for w in omegas]
        denominators = batch_inverse([self.size * (tau - w) % R for w in omegas])
        return [w * z_tau % R * d % R for w, d in zip(omegas, denominators, strict=True)]
