"""The random circuit and proving key the GPU proof tests share (one definition: the four
GPU test files that prove random circuits each had their own copy)."""

from __future__ import annotations

import random


def random_circuit(seed: int, reduction: str, constraints: int | None = None):
    """(proving key, witness, rng) of a random R1CS drawn from `seed`: 1..12 constraints
    (or `constraints`), 0..3 public inputs, 1..8 private variables; the rng goes on to draw
    the test's r and s."""
    from cuzk_sim.reference.circuits import random_r1cs
    from cuzk_sim.reference.setup import setup

    rng = random.Random(seed)
    n = constraints or rng.randint(1, 12)
    r1cs, w = random_r1cs(rng, n, rng.randint(0, 3), rng.randint(1, 8))
    return setup(r1cs, rng=rng, reduction=reduction), w, rng
