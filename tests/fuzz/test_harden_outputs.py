"""Regressions: `groth16 prove` never loses or mixes up an output. Each case failed before
(a truncated proof.json, proof.json replaced while the command exited 2, public.json
written over proof.json with exit 0)."""

from __future__ import annotations

import resource
import signal
from collections.abc import Iterator
from pathlib import Path

import cuzk_sim.reference.formats as formats
import pytest
from cubic_files import cubic_files, cubic_key
from cuzk_sim.reference.formats import read_proof, read_public
from typer.testing import CliRunner

from cuzk_sim.cli import app

runner = CliRunner()
OLD_PROOF = '{"old": "proof"}\n'


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """The cubic circuit; read_zkey answers its proving key (we write no .zkey here)."""
    f = cubic_files(tmp_path)
    pk, _ = cubic_key()
    monkeypatch.setattr(formats, "read_zkey", lambda path: pk)
    return f


def prove(files: dict[str, Path], proof: Path, public: Path):
    args = ["groth16", "prove", "--seed", "1", "k.zkey", files["wtns"], proof, public]
    return runner.invoke(app, [str(a) for a in args])


def test_one_path_for_both_outputs_is_refused_before_proving(files, tmp_path) -> None:
    """Before: exit 0, and public.json overwrote the proof."""
    same = tmp_path / "out.json"
    for proof, public in ((same, same), (same, tmp_path / "." / "out.json")):
        result = prove(files, proof, public)
        assert result.exit_code == 2
        assert "PROOF_JSON and PUBLIC_JSON both name" in result.output
        assert not same.exists()
    (tmp_path / "link.json").symlink_to(same)
    result = prove(files, same, tmp_path / "link.json")
    assert result.exit_code == 2 and "both name" in result.output


def test_an_unwritable_public_json_leaves_the_old_proof(files, tmp_path, monkeypatch) -> None:
    """Before: proof.json was replaced although the command exited 2 (it was written
    first, then public.json failed)."""
    import cuzk_sim.io.outputs as outputs

    proof, public = tmp_path / "proof.out.json", tmp_path / "public.out.json"
    proof.write_text(OLD_PROOF)
    real_stage = outputs.stage

    def stage(path, data):  # public.json's folder refuses new files (EACCES)
        if Path(path) == public:
            raise PermissionError(13, "Permission denied", str(path))
        return real_stage(path, data)

    monkeypatch.setattr(outputs, "stage", stage)
    result = prove(files, proof, public)
    assert result.exit_code == 2, result.output
    assert str(public) in result.output and "Permission denied" in result.output
    assert proof.read_text() == OLD_PROOF and not public.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.fixture
def file_size_limit() -> Iterator:
    """Writes beyond n bytes fail with EFBIG, as on a full disk (RLIMIT_FSIZE)."""
    old = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    yield lambda n: resource.setrlimit(resource.RLIMIT_FSIZE, (n, old[1]))
    resource.setrlimit(resource.RLIMIT_FSIZE, old)
    signal.signal(signal.SIGXFSZ, handler)


def test_a_failing_write_leaves_the_previous_proof_and_public_whole(
    files, tmp_path, file_size_limit
) -> None:
    """Before: a write that failed half-way left proof.json truncated."""
    proof, public = tmp_path / "p.json", tmp_path / "q.json"
    proof.write_text(OLD_PROOF)
    public.write_text('["1"]\n')
    file_size_limit(200)  # a proof.json is about 700 bytes
    result = prove(files, proof, public)
    file_size_limit(resource.RLIM_INFINITY)
    assert result.exit_code == 2, result.output
    assert "cannot write" in result.output and str(proof) in result.output
    assert proof.read_text() == OLD_PROOF and public.read_text() == '["1"]\n'
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_good_run_writes_both_outputs(files, tmp_path) -> None:
    proof, public = tmp_path / "p.json", tmp_path / "q.json"
    proof.write_text(OLD_PROOF)
    result = prove(files, proof, public)
    assert result.exit_code == 0, result.output
    assert read_public(public) == [35]  # 27 + 3 + 5
    read_proof(proof)  # parses, points on their curves
