"""Session fixtures for the interop tests: the pinned node toolchain and snarkjs artifacts.

`python3 -m pytest` on a fresh machine must work: when node_modules is missing, the first
test that needs it runs `npm ci` here (locked, time-bounded); without node or npm, or
offline, those tests skip with the reason. The prepared powers of tau is cached in
pytest's cache directory, keyed by power and snarkjs version: 2^8 (seconds) serves every
circuit but big_domain, whose 2^12 (about two minutes on two cores) is made only when a
big_domain case runs, and those are in the `slowtier` (deselected by the README test
command, run by .ci/run as its own step). Circuits, zkeys and witnesses are built once per
session, from a build shared by the xdist workers and later runs (pytest's cache directory,
keyed by the circuit's sources and the powers of tau).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from snarkjs_toolchain import (  # noqa: E402
    CIRCUITS,
    CircuitFiles,
    ToolchainUnavailable,
    build_circuit,
    circuit_files,
    ensure_node_modules,
    powers_of_tau,
)

SMALL_PTAU_POWER = 8  # every circuit but big_domain, and docs/interop.md's recipe
PTAU_POWER = {"big_domain": 12}  # 3000 constraints: domain 2^12
CIRCUIT_NAMES = ("no_public", "multi_public", "long_lc", "big_domain")


@pytest.fixture(scope="session")
def toolchain() -> None:
    """Skip (with the reason) unless node + the pinned snarkjs/circom2 are usable."""
    try:
        ensure_node_modules()
    except ToolchainUnavailable as e:
        pytest.skip(f"interop toolchain unavailable: {e}")


@pytest.fixture(scope="session")
def ptau_of(
    toolchain: None,
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[int], Path]:
    """ptau_of(power) -> the prepared powers of tau, made once per machine (cached)."""
    cache = getattr(request.config, "cache", None)
    where = cache.mkdir("cuzk-interop-ptau") if cache else tmp_path_factory.mktemp("ptau")
    return lambda power: powers_of_tau(power, Path(where))


@pytest.fixture(scope="session")
def ptau(ptau_of: Callable[[int], Path]) -> Path:
    return ptau_of(SMALL_PTAU_POWER)


def _built_once(name: str, ptau: Path, shared: Path) -> Path:
    """The circuit's snarkjs files, built once per machine into `shared` (keyed by the
    circuit's sources, input and powers of tau; the beacon makes every build identical),
    so xdist workers and later runs copy them instead of running circom and setup again."""
    digest = hashlib.sha256(ptau.name.encode())
    for source in sorted(CIRCUITS.rglob("*")):
        if source.is_file() and not source.name.startswith("bench_"):
            digest.update(source.name.encode() + b"\0" + source.read_bytes())
    done = shared / f"{name}-{digest.hexdigest()[:16]}"
    shared.mkdir(parents=True, exist_ok=True)
    with open(shared / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            work = shared / f"{name}.{os.getpid()}"
            shutil.rmtree(work, ignore_errors=True)
            build_circuit(name, ptau, work)
            os.replace(work / name, done)
            shutil.rmtree(work, ignore_errors=True)
    return done


@pytest.fixture(scope="session")
def circuit(
    ptau_of: Callable[[int], Path],
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str], CircuitFiles]:
    """circuit(name) -> its compiled, set-up files: a copy of its shared build for this
    session (tests write snarkjs exports beside them)."""
    cache = getattr(request.config, "cache", None)
    shared = Path(cache.mkdir("cuzk-interop-circuits")) if cache else None
    out = tmp_path_factory.mktemp("circuits")
    built: dict[str, CircuitFiles] = {}

    def get(name: str) -> CircuitFiles:
        if name not in built:
            ptau = ptau_of(PTAU_POWER.get(name, SMALL_PTAU_POWER))
            if shared is None:
                built[name] = build_circuit(name, ptau, out)
            else:
                shutil.copytree(_built_once(name, ptau, shared), out / name)
                built[name] = circuit_files(name, out)
        return built[name]

    return get
