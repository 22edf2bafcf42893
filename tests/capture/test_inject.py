"""The injection library for programs that are not Python (capture/inject/cuzk_capture.c),
checked without a driver:

- its record writer, fed CUPTI's own C structs by a harness (tests/capture/inject/
  harness.c, compiled here against the CUPTI headers found), writes a file that
  `read_folder` turns into the hand-worked plan of test_import_nsys (EXPECTED), and its
  cuMemGetInfo samples give the context by hand: 1000 − 436 free − 64 live = 500 MiB;
- the library itself builds at first use, is reused from the cache, exports
  InitializeInjection, and with no driver still writes a file naming what failed;
- the refusals: no CUPTI, no compiler, a compiler that fails, --via for a program it
  cannot record — one line each.

Needs a C compiler and CUPTI's headers (the CUDA toolkit or the nvidia-cuda-cupti
wheel); the tests that build skip, saying so, where either is missing.
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_import_nsys import EXPECTED
from typer.testing import CliRunner

from cuzk_sim.capture import cupti_run, inject_build
from cuzk_sim.capture.to_plan import trace_to_plan
from cuzk_sim.cli import app
from cuzk_sim.input_errors import InputError
from cuzk_sim.plan import Alloc

MiB = 1 << 20
HARNESS = Path(__file__).parent / "inject" / "harness.c"


def _toolchain():
    try:
        return inject_build.find_cupti(), inject_build.find_compiler()
    except InputError as e:
        pytest.skip(f"no toolchain for the injection library here: {e}")


@pytest.fixture(scope="module")
def harness_trace(tmp_path_factory):
    cupti, cc = _toolchain()
    folder = tmp_path_factory.mktemp("harness")
    exe = folder / "harness"
    includes = [f"-I{i}" for i in cupti.includes] + [f"-I{inject_build.SOURCE.parent}"]
    lib = cupti.library
    build = [*cc, "-std=gnu11", *includes, "-o", str(exe), str(HARNESS), str(lib),
             f"-Wl,-rpath,{lib.parent}", "-lpthread", "-ldl"]  # fmt: skip
    if Path(cc[0]).name == "nvcc":
        pytest.skip("the harness is built with a C compiler, only nvcc found")
    done = subprocess.run(build, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = folder / "out"
    out.mkdir()
    done = subprocess.run([str(exe), str(out)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return out


def test_the_writer_gives_the_hand_worked_plan(harness_trace):
    (path,) = harness_trace.glob("trace-*.json")
    data = json.loads(path.read_text())
    assert data["notes"] == ["harness: no driver"]
    kinds = {r["kind"] for r in data["records"]}
    assert kinds >= {"MEMORY2", "MEMCPY", "MEMSET", "CONCURRENT_KERNEL", "MARKER", "MEMINFO"}
    assert any(r.get("name") == 'tick "quoted"' for r in data["records"])  # escaped, read back
    trace = cupti_run.read_folder(harness_trace, "harness")
    imp = trace_to_plan(trace)
    assert imp.plan.steps == EXPECTED
    assert imp.default_stream == 7
    # the context: 1000 MiB total − 436 MiB free − 64 MiB live after the cudaMalloc
    assert imp.context_bytes == 500 * MiB
    assert imp.plan.meta["context_bytes"] == 500 * MiB
    assert "no CUDA context size measured" not in trace.missing


def test_a_window_over_the_writer_s_nvtx_range(harness_trace):
    imp = trace_to_plan(cupti_run.read_folder(harness_trace, "harness"), window="partition")
    assert imp.window == (50, 5000)


@pytest.fixture
def built(tmp_path, monkeypatch):
    _toolchain()
    monkeypatch.setenv("CUZK_SIM_CACHE", str(tmp_path / "cache"))
    return inject_build.injection_library()


def test_the_library_builds_once_and_loads(built, tmp_path):
    assert built.is_file() and built.parent.parent == tmp_path / "cache" / "inject"
    stamp = built.stat().st_mtime_ns
    assert inject_build.injection_library() == built  # from the cache, not rebuilt
    assert built.stat().st_mtime_ns == stamp
    assert hasattr(ctypes.CDLL(str(built)), "InitializeInjection")


def test_without_a_driver_the_library_writes_what_failed(built, tmp_path):
    folder = tmp_path / "rec"
    folder.mkdir()
    code = f"import ctypes; print(ctypes.CDLL({str(built)!r}).InitializeInjection())"
    env = {"CUZK_SIM_CAPTURE_DIR": str(folder), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.strip() == "1", done.stderr
    (path,) = folder.glob("trace-*.json")
    data = json.loads(path.read_text())
    assert data["records"] == []
    assert any("not enabled" in n for n in data["notes"]), data["notes"]


def test_no_cupti_is_one_line(tmp_path):
    with pytest.raises(InputError, match=r"^capture: CUPTI not found .* set CUPTI_ROOT"):
        inject_build.find_cupti([tmp_path / "nothing"])


def test_no_compiler_is_one_line(monkeypatch):
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setattr(inject_build.shutil, "which", lambda name: None)
    with pytest.raises(InputError, match=r"no C compiler \(cc, gcc, clang or nvcc\)"):
        inject_build.find_compiler()


def test_a_failing_compiler_is_one_line(tmp_path, monkeypatch):
    cupti, _ = _toolchain()
    monkeypatch.setenv("CUZK_SIM_CACHE", str(tmp_path))
    with pytest.raises(InputError, match=r"false could not build the injection library"):
        inject_build.injection_library(cupti, ["false"])


def _refused(args):
    r = CliRunner().invoke(app, ["capture", *args])
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: capture: "), r.stderr
    return lines[0]


def test_cli_refusals(monkeypatch):
    assert "records Python programs only" in _refused(["--via", "cupti-python", "--", "./a"])
    assert "expected one of auto, injection" in _refused(["--via", "nsys", "--", "./a"])

    def no_cupti(roots=None):
        raise InputError("capture: CUPTI not found (include/cupti.h ...) in /x")

    monkeypatch.setattr(inject_build, "find_cupti", no_cupti)
    assert "CUPTI not found" in _refused(["--", "./prover", "--gpu"])


def test_auto_picks_the_injection_library_for_other_programs(monkeypatch):
    assert cupti_run.choose_recorder(["./prover"], "auto") == "injection"
    monkeypatch.setattr(cupti_run.importlib.util, "find_spec", lambda name: None)
    assert cupti_run.choose_recorder([sys.executable, "x.py"], "auto") == "injection"
    monkeypatch.setattr(cupti_run.importlib.util, "find_spec", lambda name: object())
    assert cupti_run.choose_recorder([sys.executable, "x.py"], "auto") == "cupti-python"


def test_a_process_stopped_by_a_signal_keeps_its_flushed_records(harness_trace, tmp_path):
    """The harness stopped half-way (its `killed` mode: what was flushed, then half a
    record, then _exit): the .tmp file is read up to its last whole record."""
    exe = harness_trace.parent / "harness"
    out = tmp_path / "killed"
    out.mkdir()
    done = subprocess.run([str(exe), str(out), "killed"], capture_output=True, timeout=60)
    assert done.returncode == 0
    (path,) = out.glob("trace-*.json.tmp")
    trace = cupti_run.read_folder(out, "harness")
    assert any("did not exit" in m for m in trace.missing), trace.missing
    imp = trace_to_plan(trace)
    # the hand-worked plan up to the stream sync (the kernel's stream joined at the end);
    # the buffers never freed are kept (persistent)
    kept = tuple(
        dataclasses.replace(s, persistent=True) if isinstance(s, Alloc) else s for s in EXPECTED[:6]
    )
    assert imp.plan.steps == kept + (EXPECTED[-1],)


def test_a_stopped_program_still_gives_its_plan(monkeypatch, tmp_path, harness_trace):
    """Ctrl-C or SIGTERM ends a daemon: its status says so, and the plan is written with
    a note instead of being refused."""
    monkeypatch.setattr(cupti_run, "check_gpu", lambda: None)
    monkeypatch.setattr(cupti_run, "run_program", lambda cmd, env: (-15, False))
    monkeypatch.setattr(cupti_run, "read_folder", lambda folder, source: _canned(harness_trace))
    monkeypatch.setenv("CUZK_SIM_CACHE", str(tmp_path))
    trace = cupti_run.run_captured(["./daemon"], "injection")
    assert "./daemon was stopped (status -15): the plan is what it did until then" in (
        trace.missing
    )
    monkeypatch.setattr(cupti_run, "run_program", lambda cmd, env: (1, False))
    with pytest.raises(InputError, match="exited with status 1; no plan written"):
        cupti_run.run_captured(["./daemon"], "injection")


def _canned(folder):
    from cuzk_sim.capture.recorder_files import read_folder

    return read_folder(folder, "canned")


def test_run_program_reports_a_signal():
    code = "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"
    rc, stopped = cupti_run.run_program([sys.executable, "-c", code], dict(os.environ))
    assert rc == -signal.SIGTERM and not stopped and rc in cupti_run.STOPPED


def test_nvtx_through_cupti_can_be_turned_off(monkeypatch, tmp_path):
    lib, cupti_lib = tmp_path / "lib.so", tmp_path / "libcupti.so"
    monkeypatch.delenv("NVTX_INJECTION64_PATH", raising=False)
    monkeypatch.delenv("CUZK_SIM_CAPTURE_NVTX", raising=False)
    env = cupti_run.injection_env("/f", lib, cupti_lib)
    assert env["CUDA_INJECTION64_PATH"] == str(lib) and env["CUZK_SIM_CAPTURE_DIR"] == "/f"
    assert env["NVTX_INJECTION64_PATH"] == str(cupti_lib)
    monkeypatch.setenv("CUZK_SIM_CAPTURE_NVTX", "0")
    assert "NVTX_INJECTION64_PATH" not in cupti_run.injection_env("/f", lib, cupti_lib)
