"""Shared sweep fixtures: one small sweep over the Phase 9 three-part fix, run once."""

from __future__ import annotations

from pathlib import Path

import pytest
from sweep_fixtures import write_spec


@pytest.fixture(scope="session")
def small_spec_path(tmp_path_factory) -> Path:
    return write_spec(tmp_path_factory.mktemp("spec"))


@pytest.fixture(scope="session")
def small_outcome(small_spec_path):
    """The small sweep run in this process (jobs=1), no output folder."""
    from cuzk_sim import api

    return api.sweep(small_spec_path, jobs=1, plots=False)
