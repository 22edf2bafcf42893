"""Fixed-base scalar multiplication: many k·P for one P (setup's k·G1, k·G2).

Precompute rows[j][d] = d·2^(c·j)·P (affine) once; then k·P = sum_j rows[j][digit_j(k)],
about 255/c mixed additions per scalar instead of ~380 group operations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .curve import Group
from .field import R

SCALAR_BITS = R.bit_length()


@dataclass(frozen=True)
class FixedBaseTable:
    group: Group
    window: int
    rows: tuple[tuple[Any, ...], ...]  # rows[j][d] = d·2^(window·j)·P, affine

    @classmethod
    def build(cls, group: Group, P: Any, window: int = 8) -> FixedBaseTable:
        size = 1 << window
        flat: list[Any] = []
        base = group.to_jacobian(P)  # 2^(window·j)·P
        for _ in range(math.ceil(SCALAR_BITS / window)):
            multiple = None
            for _ in range(size):
                flat.append(multiple)
                multiple = group.add(multiple, base)
            base = multiple  # size·base = 2^(window·(j+1))·P
        affine = group.normalize_many(flat)
        rows = tuple(tuple(affine[i : i + size]) for i in range(0, len(affine), size))
        return cls(group, window, rows)

    def multiply(self, k: int) -> Any:
        """k·P, Jacobian."""
        k %= R
        mask = (1 << self.window) - 1
        acc = None
        for row in self.rows:
            d = k & mask
            if d:
                acc = self.group.add_affine(acc, row[d])
            k >>= self.window
        return acc

    def multiply_many(self, scalars: Sequence[int]) -> list[Any]:
        """[k·P for k in scalars], affine (one batched inversion)."""
        return self.group.normalize_many([self.multiply(k) for k in scalars])
