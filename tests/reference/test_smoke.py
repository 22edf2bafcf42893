"""End to end: the classic cubic circuit proves and verifies under both reductions."""

from __future__ import annotations

import random

import pytest
from cuzk_sim.reference.circuits import cubic
from cuzk_sim.reference.prove import prove
from cuzk_sim.reference.r1cs import UnsatisfiedConstraint
from cuzk_sim.reference.setup import setup
from cuzk_sim.reference.verify import verify


@pytest.mark.parametrize("reduction", ["bellman", "snarkjs"])
def test_cubic_proves_and_verifies(reduction: str) -> None:
    r1cs, witness = cubic(3)
    assert witness[1] == 35  # 3^3 + 3 + 5, by hand
    pk = setup(r1cs, rng=random.Random(1), reduction=reduction)
    proof = prove(pk, witness, rng=random.Random(2))
    assert verify(pk.vk, [35], proof)
    assert not verify(pk.vk, [36], proof)


def test_unsatisfied_witness_raises_and_names_the_constraint() -> None:
    r1cs, witness = cubic(3)
    pk = setup(r1cs, rng=random.Random(1))
    bad = list(witness)
    bad[1] = 36  # y no longer equals x^3 + x + 5: the last constraint (index 2) fails
    with pytest.raises(UnsatisfiedConstraint, match="constraint 2"):
        prove(pk, bad, r=1, s=1)
    with pytest.raises(UnsatisfiedConstraint, match=r"constraint 2 \(x\^3\+x\+5=y\)"):
        r1cs.check(bad)
