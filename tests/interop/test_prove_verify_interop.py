"""Prove and verify across implementations: ours and snarkjs 0.7.6 must agree both ways.

For every circuit (no public inputs, several public inputs, a 64-term linear combination,
a 2^12 domain): our proof of circom's witness under snarkjs's zkey passes
`snarkjs groth16 verify`; snarkjs's proof passes our `cuzk-sim groth16 verify`; a tampered
public input or proof is rejected by both. Exit codes are snarkjs's: 0 means valid.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import py_ecc.optimized_bls12_381 as bls
import pytest
from cuzk_sim.reference.formats import (
    read_proof,
    read_public,
    read_verification_key,
    read_wtns,
)
from cuzk_sim.reference.verify import verify
from snarkjs_toolchain import CircuitFiles, export_json, snarkjs, snarkjs_status
from typer.testing import CliRunner

from cuzk_sim.cli import app

pytestmark = pytest.mark.interop

# big_domain (2^12: its own powers of tau, setup and proofs) is in the slow tier
BIG_DOMAIN = pytest.param("big_domain", marks=pytest.mark.slowtier)
CIRCUITS = ("no_public", "multi_public", "long_lc", BIG_DOMAIN)
R = bls.curve_order


@dataclass(frozen=True)
class Proofs:
    files: CircuitFiles
    ours: Path  # proof.json written by `cuzk-sim groth16 prove`
    ours_public: Path
    theirs: Path  # proof.json written by `snarkjs groth16 prove`
    theirs_public: Path


def cli(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def proofs(circuit: Callable[[str], CircuitFiles]) -> Callable[[str], Proofs]:
    made: dict[str, Proofs] = {}

    def get(name: str) -> Proofs:
        if name not in made:
            files = circuit(name)
            d = files.directory
            code, out = cli("groth16", "prove", "--seed", "7", files.zkey, files.wtns,
                            d / "ours.json", d / "ours_public.json")  # fmt: skip
            assert code == 0, out
            snarkjs("groth16", "prove", files.zkey, files.wtns, "theirs.json",
                    "theirs_public.json", cwd=d)  # fmt: skip
            made[name] = Proofs(
                files, d / "ours.json", d / "ours_public.json", d / "theirs.json",
                d / "theirs_public.json",
            )  # fmt: skip
        return made[name]

    return get


def cuda_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # ImportError, or a CUDA install without a device or driver
        return False


def snarkjs_verifies(p: Proofs, public: Path, proof: Path) -> bool:
    status = snarkjs_status(
        "groth16", "verify", p.files.vk_json, public, proof, cwd=p.files.directory
    )
    return status == 0


@pytest.mark.parametrize("name", CIRCUITS)
def test_snarkjs_accepts_our_proof(name: str, proofs: Callable[[str], Proofs]) -> None:
    p = proofs(name)
    assert snarkjs_verifies(p, p.ours_public, p.ours)
    # the public inputs we publish are the ones snarkjs publishes for the same witness
    assert json.loads(p.ours_public.read_text()) == json.loads(p.theirs_public.read_text())


@pytest.mark.parametrize("name", CIRCUITS)
def test_we_accept_snarkjs_proof(name: str, proofs: Callable[[str], Proofs]) -> None:
    p = proofs(name)
    code, out = cli("groth16", "verify", p.files.vk_json, p.theirs_public, p.theirs)
    assert (code, out.strip()) == (0, "OK!")
    vk = read_verification_key(p.files.vk_json)
    assert verify(vk, read_public(p.theirs_public), read_proof(p.theirs))


@pytest.mark.parametrize("name", ["multi_public", "long_lc", BIG_DOMAIN])
def test_tampered_public_input_rejected_by_both(
    name: str, proofs: Callable[[str], Proofs], tmp_path: Path
) -> None:
    p = proofs(name)
    public = json.loads(p.theirs_public.read_text())
    public[-1] = str((int(public[-1]) + 1) % R)
    tampered = tmp_path / "public.json"
    tampered.write_text(json.dumps(public))
    for proof in (p.ours, p.theirs):
        assert not snarkjs_verifies(p, tampered, proof)
        code, out = cli("groth16", "verify", p.files.vk_json, tampered, proof)
        assert (code, out.strip()) == (1, "Invalid proof")


@pytest.mark.parametrize("name", ["no_public", "multi_public"])
def test_tampered_proof_rejected_by_both(
    name: str, proofs: Callable[[str], Proofs], tmp_path: Path
) -> None:
    """A valid point in the wrong place (C := A) and a point negated (A := -A)."""
    p = proofs(name)
    original = json.loads(p.ours.read_text())
    c_is_a = dict(original, pi_c=original["pi_a"])
    x, y, z = original["pi_a"]
    minus_a = dict(original, pi_a=[x, str(bls.field_modulus - int(y)), z])
    for i, doc in enumerate((c_is_a, minus_a)):
        tampered = tmp_path / f"proof{i}.json"
        tampered.write_text(json.dumps(doc))
        assert not snarkjs_verifies(p, p.ours_public, tampered)
        code, out = cli("groth16", "verify", p.files.vk_json, p.ours_public, tampered)
        assert (code, out.strip()) == (1, "Invalid proof")


def test_our_proof_is_deterministic_given_the_seed(
    proofs: Callable[[str], Proofs], tmp_path: Path
) -> None:
    p = proofs("no_public")
    code, out = cli("groth16", "prove", "--seed", "7", p.files.zkey, p.files.wtns,
                    tmp_path / "again.json", tmp_path / "again_public.json")  # fmt: skip
    assert code == 0, out
    assert (tmp_path / "again.json").read_text() == p.ours.read_text()


def test_unsatisfied_witness_gives_a_proof_snarkjs_rejects(
    circuit: Callable[[str], CircuitFiles], tmp_path: Path
) -> None:
    """A snarkjs zkey has no C matrix, so (like snarkjs) we cannot refuse to prove; the
    proof must still be invalid, and `groth16 check` against the .r1cs says why."""
    from cuzk_sim.reference.formats import write_wtns

    files = circuit("multi_public")
    w = read_wtns(files.wtns)
    bad = tmp_path / "bad.wtns"
    write_wtns(bad, [*w[:-1], (w[-1] + 1) % R])  # the private square no longer matches
    # snarkjs's own export says which constraint mentions the last wire
    exported = export_json("r1cs", files.r1cs, files.directory)["constraints"]
    last = str(len(w) - 1)
    (k,) = [k for k, lcs in enumerate(exported) if any(last in lc for lc in lcs)]
    code, out = cli("groth16", "check", files.r1cs, bad)
    assert code == 1 and f"constraint {k} is not satisfied" in out
    assert cli("groth16", "check", files.r1cs, files.wtns)[0] == 0
    code, out = cli("groth16", "prove", "--seed", "1", files.zkey, bad,
                    tmp_path / "p.json", tmp_path / "pub.json")  # fmt: skip
    assert code == 0, out
    status = snarkjs_status("groth16", "verify", files.vk_json, tmp_path / "pub.json",
                            tmp_path / "p.json", cwd=tmp_path)  # fmt: skip
    assert status != 0
    assert (
        cli("groth16", "verify", files.vk_json, tmp_path / "pub.json", tmp_path / "p.json")[0] == 1
    )


# ids must not be the bare word "gpu": pytest would take it for the `gpu` marker keyword
@pytest.mark.parametrize("backend", ["reference", "gpu"], ids=["backend-reference", "backend-gpu"])
def test_backend_option(backend: str, proofs: Callable[[str], Proofs], tmp_path: Path) -> None:
    """--backend gpu proves like the reference when CuPy + CUDA work, else says why in one
    line and exits non-zero (no traceback)."""
    p = proofs("multi_public")
    code, out = cli("groth16", "prove", "--backend", backend, "--seed", "3", p.files.zkey,
                    p.files.wtns, tmp_path / "p.json", tmp_path / "pub.json")  # fmt: skip
    if backend == "gpu" and not cuda_available():
        assert code != 0
        assert "--backend gpu" in out and "Traceback" not in out
        assert len(out.strip().splitlines()) == 1
        return
    assert code == 0, out
    assert snarkjs_verifies(p, tmp_path / "pub.json", tmp_path / "p.json")
