"""Drive the pinned circom2 + snarkjs (tests/interop/package.json) from Python.

Used by the interop tests' conftest and by benchmarks/interop_*.py. Every step is a
subprocess with a time limit; every contribution is a beacon (deterministic, yet a real
contribution: an uncontributed setup has delta = 1 and is degenerate), so the same
circuit and input always give the same files.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
CIRCUITS = HERE / "circuits"
NODE_MODULES = HERE / "node_modules"
SNARKJS = NODE_MODULES / "snarkjs" / "build" / "cli.cjs"
CIRCOM2 = NODE_MODULES / "circom2" / "cli.js"
SNARKJS_VERSION = "0.7.6"
CURVE = "bls12-381"
BEACON = "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
BEACON_ITERATIONS = 10  # 2^10 hash rounds: cheap, still a real contribution
NPM_TIMEOUT_S = 300


class ToolchainUnavailable(RuntimeError):
    """node/npm/snarkjs cannot be used here (missing, offline, broken install)."""


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock file, so parallel sessions do not run `npm ci` twice at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _digest(path: Path) -> str:
    return hashlib.sha256(str(path).encode()).hexdigest()[:16]


def ensure_node_modules() -> None:
    """Install the pinned packages with `npm ci` when they are missing (once, locked)."""
    if shutil.which("node") is None:
        raise ToolchainUnavailable("node is not on PATH")
    # the lock lives outside the tree (npm ci empties node_modules; git must not see it)
    lock = Path(tempfile.gettempdir()) / f"cuzk-sim-npm-ci-{_digest(HERE)}.lock"
    with _locked(lock):
        if SNARKJS.exists() and CIRCOM2.exists():
            return
        npm = shutil.which("npm")
        if npm is None:
            raise ToolchainUnavailable("npm is not on PATH (needed for `npm ci` in tests/interop)")
        try:
            done = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=HERE,
                capture_output=True,
                text=True,
                timeout=NPM_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            raise ToolchainUnavailable(f"`npm ci` took more than {NPM_TIMEOUT_S} s") from None
        if done.returncode != 0 or not SNARKJS.exists():
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise ToolchainUnavailable(f"`npm ci` failed (offline?): {' | '.join(tail)}")


def run_node(script: Path, *args: str | Path, cwd: Path, timeout: float = 600) -> str:
    """Run a node CLI; a non-zero exit raises CalledProcessError with its output."""
    done = subprocess.run(
        ["node", str(script), *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise subprocess.CalledProcessError(done.returncode, done.args, done.stdout, done.stderr)
    return done.stdout


def snarkjs(*args: str | Path, cwd: Path, timeout: float = 600) -> str:
    return run_node(SNARKJS, *args, cwd=cwd, timeout=timeout)


def snarkjs_status(*args: str | Path, cwd: Path, timeout: float = 600) -> int:
    """The exit code of a snarkjs command (for verify / wtns check)."""
    done = subprocess.run(
        ["node", str(SNARKJS), *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return done.returncode


def powers_of_tau(power: int, cache_dir: Path) -> Path:
    """A prepared (phase 2) BLS12-381 powers-of-tau file with one beacon contribution.

    Cached under `cache_dir` by power and snarkjs version; written to a temporary name
    and renamed, so an interrupted run never leaves a half-written file behind.
    """
    cache_dir.mkdir(parents=True, exist_ok=True)
    final = cache_dir / f"pot{power}_{CURVE}_snarkjs{SNARKJS_VERSION}_final.ptau"
    with _locked(cache_dir / f".pot{power}.lock"):
        if final.exists():
            return final
        work = cache_dir / f"pot{power}.{os.getpid()}"
        work.mkdir(exist_ok=True)
        snarkjs("powersoftau", "new", CURVE, str(power), "pot0.ptau", cwd=work)
        snarkjs(
            "powersoftau", "beacon", "pot0.ptau", "pot1.ptau", BEACON, str(BEACON_ITERATIONS),
            "-n=cuzk-sim interop", cwd=work,
        )  # fmt: skip
        snarkjs("powersoftau", "prepare", "phase2", "pot1.ptau", "final.ptau", cwd=work)
        os.replace(work / "final.ptau", final)
        shutil.rmtree(work, ignore_errors=True)
    return final


@dataclass(frozen=True)
class CircuitFiles:
    """Everything snarkjs produced for one circuit and one input."""

    name: str
    directory: Path
    r1cs: Path
    wasm: Path
    zkey: Path  # after the beacon contribution
    vk_json: Path
    input_json: Path
    wtns: Path

    def path(self, name: str) -> Path:
        return self.directory / name


def build_circuit(name: str, ptau: Path, out: Path, circuits: Path = CIRCUITS) -> CircuitFiles:
    """circom2 compile (--prime bls12381) -> groth16 setup -> zkey beacon -> vk -> witness."""
    directory = out / name
    directory.mkdir(parents=True, exist_ok=True)
    source = circuits / f"{name}.circom"
    run_node(CIRCOM2, source, "--r1cs", "--wasm", "--prime", "bls12381", "-o", directory, cwd=HERE)
    r1cs = directory / f"{name}.r1cs"
    wasm = directory / f"{name}_js" / f"{name}.wasm"
    snarkjs("groth16", "setup", r1cs, ptau, "circuit_0000.zkey", cwd=directory)
    snarkjs(
        "zkey", "beacon", "circuit_0000.zkey", "circuit_final.zkey", BEACON,
        str(BEACON_ITERATIONS), "-n=cuzk-sim interop", cwd=directory,
    )  # fmt: skip
    snarkjs("zkey", "export", "verificationkey", "circuit_final.zkey", "verification_key.json",
            cwd=directory)  # fmt: skip
    input_json = directory / "input.json"
    shutil.copyfile(circuits / f"{name}.input.json", input_json)
    snarkjs("wtns", "calculate", wasm, input_json, "witness.wtns", cwd=directory)
    return circuit_files(name, out)


def circuit_files(name: str, out: Path) -> CircuitFiles:
    """The files build_circuit(name, ..., out) wrote, by name."""
    directory = out / name
    return CircuitFiles(
        name=name,
        directory=directory,
        r1cs=directory / f"{name}.r1cs",
        wasm=directory / f"{name}_js" / f"{name}.wasm",
        zkey=directory / "circuit_final.zkey",
        vk_json=directory / "verification_key.json",
        input_json=directory / "input.json",
        wtns=directory / "witness.wtns",
    )


def export_json(kind: str, source: Path, cwd: Path) -> object:
    """`snarkjs <kind> export json` (kind: r1cs, wtns, zkey) parsed."""
    target = cwd / f"{source.name}.{kind}.json"
    snarkjs(kind, "export", "json", source, target, cwd=cwd)
    return json.loads(target.read_text())
