"""`cuzk-sim groth16` exit codes and messages on files made here (no node needed).

The keys come from the reference setup (toxic waste drawn from a seeded rng), the .r1cs
and .wtns are built byte by byte; what is checked is the CLI's contract: 0 valid, 1 not
valid, 2 unusable input, one clear line, never a traceback.
"""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path

import py_ecc.optimized_bls12_381 as bls
import pytest
from cuzk_sim.reference.circuits import cubic
from cuzk_sim.reference.formats import (
    read_proof,
    read_public,
    read_verification_key,
    write_proof,
    write_public,
    write_verification_key,
    write_wtns,
)
from cuzk_sim.reference.prove import prove
from cuzk_sim.reference.setup import setup
from typer.testing import CliRunner

from cuzk_sim.cli import app

R = bls.curve_order


def cli(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def cubic_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """vk.json, proof.json, public.json for x^3 + x + 5 = 35 (x = 3)."""
    d = tmp_path_factory.mktemp("cubic")
    r1cs, w = cubic(3)
    pk = setup(r1cs, rng=random.Random(5))
    public = w[1 : 1 + r1cs.num_public]
    assert public == [35]  # hand-computed: 27 + 3 + 5
    write_verification_key(d / "vk.json", pk.vk)
    write_proof(d / "proof.json", prove(pk, w, r=3, s=4))
    write_public(d / "public.json", public)
    return {"vk": d / "vk.json", "proof": d / "proof.json", "public": d / "public.json"}


def test_json_writers_round_trip(cubic_files: dict[str, Path]) -> None:
    assert read_public(cubic_files["public"]) == [35]
    doc = json.loads(cubic_files["proof"].read_text())
    assert doc["protocol"] == "groth16" and doc["curve"] == "bls12381"
    proof = read_proof(cubic_files["proof"])
    assert json.loads(cubic_files["proof"].read_text()) == doc
    assert bls.is_on_curve(proof.a, bls.b) and bls.is_on_curve(proof.b, bls.b2)
    vk = read_verification_key(cubic_files["vk"])
    assert vk.num_public == 1


def test_verify_exit_codes(cubic_files: dict[str, Path], tmp_path: Path) -> None:
    vk, proof, public = cubic_files["vk"], cubic_files["proof"], cubic_files["public"]
    assert cli("groth16", "verify", vk, public, proof) == (0, "OK!\n")
    wrong = tmp_path / "wrong.json"
    wrong.write_text('["36"]')
    assert cli("groth16", "verify", vk, wrong, proof) == (1, "Invalid proof\n")
    two = tmp_path / "two.json"
    two.write_text('["35", "1"]')
    code, out = cli("groth16", "verify", vk, two, proof)
    assert code == 2 and "2 public inputs" in out and "expects 1" in out
    off_curve = tmp_path / "off.json"
    doc = json.loads(proof.read_text())
    off_curve.write_text(json.dumps(dict(doc, pi_a=["1", "2", "1"])))
    code, out = cli("groth16", "verify", vk, public, off_curve)
    assert code == 1 and out.startswith("Invalid proof") and "pi_a" in out
    code, out = cli("groth16", "verify", tmp_path / "missing.json", public, proof)
    assert code == 2 and "missing.json" in out and "Traceback" not in out


def square_r1cs() -> bytes:
    """x·x = y, wires [1, y (public output), x (private input)], built by hand."""

    def lc(*terms: tuple[int, int]) -> bytes:
        return struct.pack("<I", len(terms)) + b"".join(
            struct.pack("<I", w) + c.to_bytes(32, "little") for w, c in terms
        )

    header = struct.pack("<I", 32) + R.to_bytes(32, "little")
    header += struct.pack("<IIIIQI", 3, 1, 0, 1, 3, 1)
    constraints = lc((2, 1)) + lc((2, 1)) + lc((1, 1))
    sections = [(1, header), (2, constraints)]
    body = b"".join(struct.pack("<IQ", k, len(d)) + d for k, d in sections)
    return b"r1cs" + struct.pack("<II", 1, len(sections)) + body


def test_check_exit_codes(tmp_path: Path) -> None:
    r1cs = tmp_path / "sq.r1cs"
    r1cs.write_bytes(square_r1cs())
    good, bad, short = tmp_path / "good.wtns", tmp_path / "bad.wtns", tmp_path / "short.wtns"
    write_wtns(good, [1, 9, 3])
    write_wtns(bad, [1, 10, 3])
    write_wtns(short, [1, 9])
    code, out = cli("groth16", "check", r1cs, good)
    assert code == 0 and out.startswith("WITNESS IS CORRECT")
    code, out = cli("groth16", "check", r1cs, bad)
    assert code == 1 and "constraint 0 is not satisfied" in out
    code, out = cli("groth16", "check", r1cs, short)
    assert code == 2 and "2 witness values" in out and "3 wires" in out
    code, out = cli("groth16", "check", good, r1cs)  # swapped arguments
    assert code == 2 and "bad magic" in out and "Traceback" not in out


def test_prove_input_errors(tmp_path: Path) -> None:
    r1cs = tmp_path / "sq.r1cs"
    r1cs.write_bytes(square_r1cs())
    wtns = tmp_path / "w.wtns"
    write_wtns(wtns, [1, 9, 3])
    code, out = cli("groth16", "prove", r1cs, wtns, tmp_path / "p.json", tmp_path / "q.json")
    assert code == 2 and "bad magic" in out and str(r1cs) in out
    code, out = cli("groth16", "prove", "--backend", "cpu", r1cs, wtns, "p.json", "q.json")
    assert code == 2 and "--backend must be one of reference, gpu" in out
    assert not (tmp_path / "p.json").exists()


def test_prove_refuses_unwritable_outputs_before_proving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An output in a missing folder, or an output that is a folder, is unusable input
    (exit 2, the path named), found before any proving work, never a traceback."""
    import cuzk_sim.reference.formats as formats

    r1cs, w = cubic(3)
    pk = setup(r1cs, rng=random.Random(5))
    monkeypatch.setattr(formats, "read_zkey", lambda path: pk)
    monkeypatch.setattr(formats, "read_wtns", lambda path: w)
    ok, missing_dir = tmp_path / "ok.json", tmp_path / "no-such-dir" / "proof.json"
    for proof_json, public_json, named in (
        (missing_dir, ok, missing_dir.parent),
        (ok, tmp_path, tmp_path),  # public.json is a directory
    ):
        code, out = cli("groth16", "prove", "k.zkey", "w.wtns", proof_json, public_json)
        assert code == 2, out
        assert out.startswith("error: ") and str(named) in out and "Traceback" not in out
        assert not ok.exists()
    code, out = cli("groth16", "prove", "--seed", "1", "k.zkey", "w.wtns", ok, tmp_path / "q.json")
    assert code == 0, out
    assert read_public(tmp_path / "q.json") == [35]


def test_verify_malformed_proof_is_unusable_input(
    cubic_files: dict[str, Path], tmp_path: Path
) -> None:
    """A proof.json with a missing or non-numeric pi_* is a malformed file (exit 2, as the
    docs say); only well-formed coordinates off the curve are an invalid proof (exit 1)."""
    vk, proof, public = cubic_files["vk"], cubic_files["proof"], cubic_files["public"]
    doc = json.loads(proof.read_text())
    no_c = {k: v for k, v in doc.items() if k != "pi_c"}
    bad_b = dict(doc, pi_b=[["x", "1"], ["1", "1"], ["1", "0"]])
    off_curve = dict(doc, pi_c=["1", "2", "1"])
    for broken, code, where in (
        (no_c, 2, "pi_c"),
        (bad_b, 2, "pi_b[0][0]"),
        (off_curve, 1, "pi_c"),
    ):
        path = tmp_path / "proof.json"
        path.write_text(json.dumps(broken))
        got, out = cli("groth16", "verify", vk, public, path)
        assert got == code, out
        assert where in out and "Traceback" not in out
        assert out.startswith("error: ") if code == 2 else out.startswith("Invalid proof")


def test_help_names_every_argument_in_one_style() -> None:
    """The usage lines spell every positional argument in capitals, in snarkjs's order
    (they mixed `{zkey}` with `{PROOF_JSON}`)."""
    for command, names in (
        ("prove", ["ZKEY", "WITNESS", "PROOF_JSON", "PUBLIC_JSON"]),
        ("verify", ["VERIFICATION_KEY", "PUBLIC_JSON", "PROOF_JSON"]),
        ("check", ["CIRCUIT", "WITNESS"]),
    ):
        code, out = cli("groth16", command, "--help")
        usage = out.split("Usage:")[1].split("\n\n")[0]  # may wrap over two lines
        assert code == 0
        positions = [usage.find(name) for name in names]
        assert -1 not in positions and positions == sorted(positions), usage
