"""Test circuits: a small R1CS builder and the circuits the tests and benchmarks use.

Every circuit function returns (R1CS, witness) with witness = [1, public..., private...].
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .field import R
from .r1cs import R1CS, Row


@dataclass(frozen=True)
class LC:
    """A linear combination sum coeff·wire over builder variables (0 is the constant 1)."""

    terms: tuple[tuple[int, int], ...]

    @staticmethod
    def of(terms: dict[int, int]) -> LC:
        return LC(tuple(sorted((v, c % R) for v, c in terms.items() if c % R)))

    def _dict(self) -> dict[int, int]:
        return dict(self.terms)

    def __add__(self, other: LC | int) -> LC:
        other = other if isinstance(other, LC) else LC.constant(other)
        out = self._dict()
        for v, c in other.terms:
            out[v] = out.get(v, 0) + c
        return LC.of(out)

    __radd__ = __add__

    def __neg__(self) -> LC:
        return LC.of({v: -c for v, c in self.terms})

    def __sub__(self, other: LC | int) -> LC:
        return self + (-(other if isinstance(other, LC) else LC.constant(other)))

    def __rsub__(self, other: int) -> LC:
        return LC.constant(other) - self

    def __mul__(self, k: int) -> LC:
        if not isinstance(k, int):
            return NotImplemented
        return LC.of({v: c * k for v, c in self.terms})

    __rmul__ = __mul__

    @staticmethod
    def constant(k: int) -> LC:
        return LC.of({0: k})


ONE = LC.constant(1)


class Builder:
    """Allocates variables and constraints; `build()` numbers wires [1, public, private]."""

    def __init__(self) -> None:
        self._values: list[int] = [1]  # builder variable -> value
        self._public: list[int] = []
        self._private: list[int] = []
        self._constraints: list[tuple[LC, LC, LC, str]] = []

    def _var(self, value: int, public: bool) -> LC:
        v = len(self._values)
        self._values.append(value % R)
        (self._public if public else self._private).append(v)
        return LC(((v, 1),))

    def public(self, value: int) -> LC:
        return self._var(value, True)

    def private(self, value: int) -> LC:
        return self._var(value, False)

    def value(self, lc: LC) -> int:
        return sum(c * self._values[v] for v, c in lc.terms) % R

    def enforce(self, a: LC, b: LC, c: LC, name: str = "") -> None:
        """<a>·<b> = <c>."""
        self._constraints.append((a, b, c, name or f"c{len(self._constraints)}"))

    def mul(self, x: LC, y: LC, name: str = "") -> LC:
        """A new private z = x·y with the constraint x·y = z."""
        z = self.private(self.value(x) * self.value(y))
        self.enforce(x, y, z, name or "mul")
        return z

    def assert_equal(self, x: LC, y: LC, name: str = "") -> None:
        """(x - y)·1 = 0."""
        self.enforce(x - y, ONE, LC(()), name or "assert_equal")

    def build(self) -> tuple[R1CS, list[int]]:
        order = [0, *self._public, *self._private]
        wire = {v: i for i, v in enumerate(order)}

        def row(lc: LC) -> tuple[tuple[int, int], ...]:
            return tuple((wire[v], c) for v, c in lc.terms)

        r1cs = R1CS(
            num_public=len(self._public),
            num_vars=len(order),
            A=tuple(row(a) for a, _, _, _ in self._constraints),
            B=tuple(row(b) for _, b, _, _ in self._constraints),
            C=tuple(row(c) for _, _, c, _ in self._constraints),
            names=tuple(name for *_, name in self._constraints),
        )
        return r1cs, [self._values[v] for v in order]


def cubic(x: int = 3) -> tuple[R1CS, list[int]]:
    """x^3 + x + 5 = y, y public (the classic example: x = 3 gives y = 35)."""
    b = Builder()
    y = b.public((x**3 + x + 5) % R)
    xv = b.private(x)
    x2 = b.mul(xv, xv, "x*x")
    x3 = b.mul(x2, xv, "x^2*x")
    b.assert_equal(x3 + xv + 5, y, "x^3+x+5=y")
    return b.build()


def range_check(value: int, k: int) -> tuple[R1CS, list[int]]:
    """value (public) < 2^k: k private bits b_i with b_i·b_i = b_i and sum 2^i b_i = value.
    For value >= 2^k the witness (the low k bits) violates the last constraint."""
    if k < 1:
        raise ValueError(f"range_check: k must be >= 1, got {k}")
    b = Builder()
    v = b.public(value)
    total = LC(())
    for i in range(k):
        bit = b.private((value >> i) & 1)
        b.enforce(bit, bit, bit, f"bit{i} is boolean")
        total = total + bit * (1 << i)
    b.assert_equal(total, v, "sum of bits = value")
    return b.build()


def squaring_chain(n: int, x0: int = 2) -> tuple[R1CS, list[int]]:
    """n constraints x_{i+1} = x_i^2 (scales linearly); x0 private, x_n public."""
    if n < 1:
        raise ValueError(f"squaring_chain: n must be >= 1, got {n}")
    b = Builder()
    out = b.public(pow(x0, 1 << n, R))
    x = b.private(x0)
    for i in range(n - 1):
        x = b.mul(x, x, f"x{i + 1} = x{i}^2")
    b.enforce(x, x, out, f"x{n} = x{n - 1}^2")
    return b.build()


def random_r1cs(
    rng: random.Random, num_constraints: int, num_public: int, num_private: int, density: int = 3
) -> tuple[R1CS, list[int]]:
    """A random satisfiable R1CS and its witness: random sparse rows of A and B (up to
    `density` terms); C gets random terms plus one term solved so that <A,w><B,w> = <C,w>."""
    if num_constraints < 1 or num_public < 0 or num_private < 1:
        raise ValueError("random_r1cs: need >= 1 constraint, >= 0 public, >= 1 private wires")
    num_vars = 1 + num_public + num_private
    witness = [1] + [rng.randrange(R) for _ in range(num_vars - 1)]

    def sparse_row() -> dict[int, int]:
        return {
            rng.randrange(num_vars): rng.randrange(1, R) for _ in range(rng.randint(1, density))
        }

    A: list[Row] = []
    B: list[Row] = []
    C: list[Row] = []
    for _ in range(num_constraints):
        a, b = sparse_row(), sparse_row()
        c = sparse_row()
        target = sum(k * witness[v] for v, k in a.items()) * sum(
            k * witness[v] for v, k in b.items()
        )
        solve = rng.choice([v for v in range(num_vars) if witness[v]])
        c.pop(solve, None)
        rest = sum(k * witness[v] for v, k in c.items())
        c[solve] = (target - rest) * pow(witness[solve], -1, R) % R
        for rows, d in ((A, a), (B, b), (C, c)):
            rows.append(tuple(sorted((v, k) for v, k in d.items() if k)))
    r1cs = R1CS(num_public, num_vars, tuple(A), tuple(B), tuple(C))
    return r1cs, witness
