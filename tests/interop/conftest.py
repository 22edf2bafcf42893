"""Session fixtures for the interop tests: the pinned node toolchain and snarkjs artifacts.

`python3 -m pytest` on a fresh machine must work: when node_modules is missing, the first
test that needs it runs `npm ci` here (locked, time-bounded); without node or npm, or
offline, those tests skip with the reason. The prepared powers of tau (the slow part:
about two minutes for 2^12 on two cores) is cached in pytest's cache directory, keyed by
power and snarkjs version; circuits, zkeys and witnesses are built once per session.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from snarkjs_toolchain import (  # noqa: E402
    CircuitFiles,
    ToolchainUnavailable,
    build_circuit,
    ensure_node_modules,
    powers_of_tau,
)

PTAU_POWER = 12  # big_domain needs 2^12; every other circuit fits too
CIRCUIT_NAMES = ("no_public", "multi_public", "long_lc", "big_domain")


@pytest.fixture(scope="session")
def toolchain() -> None:
    """Skip (with the reason) unless node + the pinned snarkjs/circom2 are usable."""
    try:
        ensure_node_modules()
    except ToolchainUnavailable as e:
        pytest.skip(f"interop toolchain unavailable: {e}")


@pytest.fixture(scope="session")
def ptau(toolchain: None, request: pytest.FixtureRequest, tmp_path_factory) -> Path:  # noqa: ANN001
    cache = getattr(request.config, "cache", None)
    where = cache.mkdir("cuzk-interop-ptau") if cache else tmp_path_factory.mktemp("ptau")
    return powers_of_tau(PTAU_POWER, Path(where))


@pytest.fixture(scope="session")
def circuit(ptau: Path, tmp_path_factory) -> Callable[[str], CircuitFiles]:  # noqa: ANN001
    """circuit(name) -> its compiled, set-up files, built once per session."""
    out = tmp_path_factory.mktemp("circuits")
    built: dict[str, CircuitFiles] = {}

    def get(name: str) -> CircuitFiles:
        if name not in built:
            built[name] = build_circuit(name, ptau, out)
        return built[name]

    return get
