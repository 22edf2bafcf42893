"""Fuzz every input surface (tests/fuzz/surfaces.py): hypothesis draws the seeds of
seeded mutations of valid inputs, so a failure prints a seed that replays the same case
(`surfaces.case(surface, seed)`) here and in benchmarks/fuzz_campaign.py.

Each case must be accepted or refused with one line, within the 10 s CPU of
fuzz_cases.one_case, and an oracle case (a bad class the issue-30 attack found silently
accepted, planted in a valid input) must be refused. The `thorough` hypothesis profile
(CUZK_HYPOTHESIS_PROFILE=thorough) runs 1,500 seeds per surface; the campaign runs tens
of thousands in watched child processes (signals, memory)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import cuzk_sim.reference.formats  # noqa: F401 - py_ecc sets the recursion limit on import
import hypothesis.strategies as st
import pytest
from fuzz_cases import fuzz_settings, one_case
from hypothesis import given
from surfaces import SURFACES, case, check


@pytest.mark.parametrize("surface", list(SURFACES))
@fuzz_settings()
@given(seed=st.integers(0, 2**32 - 1))
def test_every_surface_accepts_or_refuses_in_one_line(surface: str, seed: int) -> None:
    c = case(surface, seed)
    with tempfile.TemporaryDirectory() as d, one_case(f"{surface} seed {seed}"):
        check(c, Path(d))


@pytest.mark.parametrize("surface", list(SURFACES))
def test_the_oracle_classes_are_drawn(surface: str) -> None:
    """The seeded cases plant the known-bad classes (else the oracle checks nothing)."""
    planted = {case(surface, seed).oracle for seed in range(200)} - {None}
    expected = {
        "scenario": {"bool-as-count", "string-as-bool", "float-as-count"},
        "set": {"bool-as-count", "string-as-bool", "huge-literal", "deep-nesting"},
        "sweep": {"huge-range", "bool-as-count", "string-as-bool", "search-groups"},
        "validation": {
            "too-many-caps", "cap-out-of-range", "string-as-bool", "bool-as-count", "nul-in-path"
        },
        "plan": {"deep-json"},
        "baseline": {"deep-json"},
        "snarkjs": {"deep-json"},
        "log": {"backwards-time", "open-sections", "damaged-gzip"},
    }.get(surface, set())  # fmt: skip
    assert planted == expected
