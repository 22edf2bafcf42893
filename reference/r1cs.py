"""Rank-1 constraint systems: <A_k, w> · <B_k, w> = <C_k, w> for every constraint k.

Wire 0 is the constant 1, wires 1..num_public are the public inputs, the rest private.
Rows are sparse: a tuple of (wire, coeff) pairs with coeff an int in [0, r).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .field import R

Row = tuple[tuple[int, int], ...]
Matrix = tuple[Row, ...]


class UnsatisfiedConstraint(ValueError):
    """A witness that violates constraint `index`: <A,w>·<B,w> != <C,w>."""

    def __init__(self, index: int, a: int, b: int, c: int, name: str | None = None) -> None:
        self.index, self.a, self.b, self.c, self.name = index, a, b, c, name
        label = f" ({name})" if name else ""
        super().__init__(
            f"constraint {index}{label} is not satisfied: <A,w>·<B,w> = {a}·{b} = "
            f"{a * b % R} != <C,w> = {c}"
        )


def evaluate_row(row: Row, witness: Sequence[int]) -> int:
    """<row, w> = sum coeff·w[wire] mod r."""
    acc = 0
    for wire, coeff in row:
        acc += coeff * witness[wire]
    return acc % R


def _check_matrix(matrix: object, name: str, num_vars: int) -> Matrix:
    if not isinstance(matrix, (tuple, list)):
        raise ValueError(f"R1CS.{name} must be a tuple of rows, got {type(matrix).__name__}")
    rows = []
    for k, row in enumerate(matrix):
        terms = []
        for term in row:
            if not (isinstance(term, (tuple, list)) and len(term) == 2):
                raise ValueError(f"R1CS.{name}[{k}]: terms must be (wire, coeff), got {term!r}")
            wire, coeff = term
            if not isinstance(wire, int) or not 0 <= wire < num_vars:
                raise ValueError(f"R1CS.{name}[{k}]: wire {wire!r} not in [0, {num_vars})")
            if not isinstance(coeff, int) or not 0 <= coeff < R:
                raise ValueError(f"R1CS.{name}[{k}]: coefficient {coeff!r} not in [0, r)")
            terms.append((wire, coeff))
        rows.append(tuple(terms))
    return tuple(rows)


@dataclass(frozen=True)
class R1CS:
    """num_public: public inputs (not counting wire 0); num_vars: all wires incl. wire 0."""

    num_public: int
    num_vars: int
    A: Matrix
    B: Matrix
    C: Matrix
    names: tuple[str, ...] | None = None  # optional constraint names for error messages

    def __post_init__(self) -> None:
        if not isinstance(self.num_public, int) or self.num_public < 0:
            raise ValueError(f"R1CS.num_public must be an int >= 0, got {self.num_public!r}")
        if not isinstance(self.num_vars, int) or self.num_vars < 1 + self.num_public:
            raise ValueError(
                f"R1CS.num_vars must be >= 1 + num_public = {1 + self.num_public}, "
                f"got {self.num_vars!r}"
            )
        for name in ("A", "B", "C"):
            object.__setattr__(self, name, _check_matrix(getattr(self, name), name, self.num_vars))
        if not len(self.A) == len(self.B) == len(self.C):
            raise ValueError(
                f"R1CS: A, B, C must have the same number of rows, "
                f"got {len(self.A)}, {len(self.B)}, {len(self.C)}"
            )
        if self.names is not None and len(self.names) != len(self.A):
            raise ValueError(f"R1CS.names: {len(self.names)} names for {len(self.A)} rows")

    @property
    def num_constraints(self) -> int:
        return len(self.A)

    @property
    def num_private(self) -> int:
        return self.num_vars - 1 - self.num_public

    def check_witness_shape(self, witness: Sequence[int]) -> None:
        """Length num_vars, wire 0 = 1, every value an int in [0, r)."""
        if len(witness) != self.num_vars:
            raise ValueError(f"witness has {len(witness)} values, the R1CS has {self.num_vars}")
        for i, v in enumerate(witness):
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < R:
                raise ValueError(f"witness[{i}] must be an int in [0, r), got {v!r}")
        if witness[0] != 1:
            raise ValueError(f"witness[0] is the constant wire and must be 1, got {witness[0]}")

    def check(self, witness: Sequence[int]) -> None:
        """Raise UnsatisfiedConstraint for the first constraint the witness violates."""
        self.check_witness_shape(witness)
        for k, (a_row, b_row, c_row) in enumerate(zip(self.A, self.B, self.C, strict=True)):
            a, b, c = (evaluate_row(row, witness) for row in (a_row, b_row, c_row))
            if a * b % R != c:
                raise UnsatisfiedConstraint(k, a, b, c, self.names[k] if self.names else None)

    def is_satisfied(self, witness: Sequence[int]) -> bool:
        try:
            self.check(witness)
        except UnsatisfiedConstraint:
            return False
        return True

    def public_inputs(self, witness: Sequence[int]) -> list[int]:
        return list(witness[1 : 1 + self.num_public])

    def with_input_constraints(self) -> tuple[Matrix, Matrix, Matrix]:
        """A, B, C with one row `x_i · 0 = 0` appended per public wire i (wire 0 included).

        bellman (`generate_parameters`/`create_proof`), arkworks (`r1cs_to_qap`) and snarkjs
        (`zkey_new`) all append these rows: they make u_0..u_l linearly independent, so
        the IC points (and hence the public inputs) cannot be forged. The domain must
        therefore hold num_constraints + num_public + 1 points.
        """
        extra = tuple(((i, 1),) for i in range(self.num_public + 1))
        empty = tuple(() for _ in range(self.num_public + 1))
        return self.A + extra, self.B + empty, self.C + empty
