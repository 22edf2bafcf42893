"""`cuzk-sim capture`: the refusals (one line, exit 2) and, with a stand-in for
cupti-python (fake_cupti/, replaying cupti_canned's records), the whole path a real
capture takes except the driver: the sitecustomize injection into a child Python, the
recorder in it, its file, and the trace and plan read back."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cupti_canned import one_partition
from test_import_nsys import EXPECTED
from typer.testing import CliRunner

from cuzk_sim.capture import cupti_run
from cuzk_sim.cli import app
from cuzk_sim.input_errors import InputError
from cuzk_sim.plan import Plan

FAKE = Path(__file__).parent / "fake_cupti"


def _refused(args):
    r = CliRunner().invoke(app, ["capture", *args])
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: capture: "), r.stderr
    return lines[0]


def test_no_command():
    assert "give the program after --" in _refused(["-o", "p.json"])


def test_other_programs_go_through_the_injection_library(tmp_path, monkeypatch):
    """A program that is not Python: the injection library is built (into the cache),
    then the missing driver is the refusal."""
    from cuzk_sim.capture import inject_build

    try:
        inject_build.find_cupti(), inject_build.find_compiler()
    except InputError as e:
        pytest.skip(f"no toolchain for the injection library here: {e}")
    monkeypatch.setenv("CUZK_SIM_CACHE", str(tmp_path))
    monkeypatch.setattr(cupti_run.ctypes, "CDLL", _no_driver)
    assert "no NVIDIA driver" in _refused(["--", "./prover", "--gpu"])
    assert len(list(tmp_path.glob("inject/*/libcuzk_capture.so"))) == 1


def test_no_cupti(monkeypatch):
    monkeypatch.setattr(cupti_run.importlib.util, "find_spec", lambda name: None)
    args = ["--via", "cupti-python", "--", sys.executable, "-c", "pass"]
    assert "pip install 'cuzk-sim[capture]'" in _refused(args)


def test_no_gpu(monkeypatch):
    monkeypatch.syspath_prepend(str(FAKE))  # cupti "installed"
    monkeypatch.setattr(cupti_run.ctypes, "CDLL", _no_driver)
    assert "no NVIDIA driver" in _refused(["--", sys.executable, "-c", "pass"])


def _no_driver(name):
    raise OSError(f"{name}: cannot open shared object file")


@pytest.fixture
def fake_cupti(tmp_path, monkeypatch):
    canned = tmp_path / "records.json"
    canned.write_text(json.dumps(one_partition()))
    monkeypatch.syspath_prepend(str(FAKE))
    monkeypatch.setenv("PYTHONPATH", str(FAKE))
    monkeypatch.setenv("FAKE_CUPTI_RECORDS", str(canned))
    monkeypatch.setattr(cupti_run, "check_gpu", lambda: None)


def test_capture_end_to_end_with_a_stand_in_cupti(tmp_path, fake_cupti):
    out = tmp_path / "plan.json"
    r = CliRunner().invoke(app, ["capture", "-o", str(out), "--", sys.executable, "-c", "pass"])
    assert r.exit_code == 0, r.output
    assert Plan.from_json(out.read_text()).steps == EXPECTED
    assert "peak device bytes: 100663296 (96.00 MiB)" in r.output


def test_failing_program_refused(fake_cupti):
    line = _refused(["--", sys.executable, "-c", "raise SystemExit(3)"])
    assert "exited with status 3; no plan written" in line


def test_program_without_cuda_activity(tmp_path):
    with pytest.raises(InputError, match="recorded no CUDA activity"):
        cupti_run.read_folder(tmp_path, "prog")


def test_unreadable_recorder_file(tmp_path):
    (tmp_path / "trace-9.json").write_text('{"pid": 9}')
    with pytest.raises(InputError, match=r"trace-9.json: not a recorder's file"):
        cupti_run.read_folder(tmp_path, "prog")
