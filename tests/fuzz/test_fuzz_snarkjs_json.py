"""Fuzz: snarkjs's JSON files (proof, public, verification key) as our readers and
`groth16 verify` see them — a value or one FormatError naming the file, never another
exception, never a hang. Cases are a valid file of the cubic circuit with one hostile
edit (a value replaced, a key dropped or added); the binary formats are fuzzed in
tests/interop/test_fuzz_formats.py.
"""

from __future__ import annotations

import functools
import json
import random
from typing import Any

import hypothesis.strategies as st
import pytest
from cuzk_sim.reference.circuits import cubic
from cuzk_sim.reference.formats import FormatError, read_proof, read_public, read_verification_key
from cuzk_sim.reference.formats.snarkjs_json import (
    proof_to_json,
    verification_key_to_json,
)
from cuzk_sim.reference.prove import prove
from cuzk_sim.reference.setup import setup
from fuzz_cases import edit_doc, fuzz_settings, one_case
from hypothesis import given

READERS = {"proof": read_proof, "public": read_public, "vk": read_verification_key}


@functools.cache
def cubic_docs() -> dict[str, Any]:
    """proof, public and vk JSON of x^3 + x + 5 = 35 (x = 3), from a seeded setup."""
    r1cs, w = cubic(3)
    pk = setup(r1cs, rng=random.Random(5))
    return {
        "proof": proof_to_json(prove(pk, w, r=3, s=4)),
        "public": [str(x) for x in w[1 : 1 + r1cs.num_public]],
        "vk": verification_key_to_json(pk.vk),
    }


@fuzz_settings()
@given(data=st.data(), kind=st.sampled_from(sorted(READERS)))
def test_a_mutated_snarkjs_json_reads_or_is_one_format_error(
    data: st.DataObject, kind: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    doc = edit_doc(cubic_docs()[kind], data)
    path = tmp_path_factory.mktemp("json") / f"{kind}.json"
    try:
        path.write_text(json.dumps(doc))
    except ValueError:  # an integer json cannot write
        return
    with one_case(f"read {kind}"):
        try:
            READERS[kind](path)
        except FormatError as e:
            assert str(e).startswith(str(path))
