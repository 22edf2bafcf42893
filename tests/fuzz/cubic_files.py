"""The cubic circuit's files (x^3 + x + 5 = 35 at x = 3), for tests of the groth16 CLI."""

from __future__ import annotations

import functools
import random
from pathlib import Path

from cuzk_sim.reference.circuits import cubic
from cuzk_sim.reference.formats import (
    write_proof,
    write_public,
    write_verification_key,
    write_wtns,
)
from cuzk_sim.reference.prove import prove
from cuzk_sim.reference.setup import setup
from cuzk_sim.reference.types import ProvingKey


@functools.cache
def cubic_key() -> tuple[ProvingKey, list[int]]:
    r1cs, w = cubic(3)
    return setup(r1cs, rng=random.Random(5)), w


def cubic_files(d: Path) -> dict[str, Path]:
    """vk.json, proof.json, public.json and witness.wtns in `d`."""
    pk, w = cubic_key()
    write_verification_key(d / "vk.json", pk.vk)
    write_proof(d / "proof.json", prove(pk, w, r=3, s=4))
    write_public(d / "public.json", w[1 : 1 + pk.num_public])
    write_wtns(d / "witness.wtns", w)
    return {
        n: d / f
        for n, f in (
            ("vk", "vk.json"),
            ("proof", "proof.json"),
            ("public", "public.json"),
            ("wtns", "witness.wtns"),
        )
    }
