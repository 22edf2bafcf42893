"""`cuzk-sim capture -- CMD ARGS`: run a CUDA program under CUPTI, read what its
processes recorded, and return one trace. Two recorders write the same records:

- `injection` (any program: C++, Rust, Go, Python): the library of
  capture/inject/cuzk_capture.c, built at first use (capture/inject_build.py), named in
  CUDA_INJECTION64_PATH; the CUDA driver loads it into every process of the program
  that initializes CUDA;
- `cupti-python` (Python programs, with NVIDIA's cupti-python installed): a temporary
  `sitecustomize.py` starts the recorder (capture/cupti_child.py) in every Python
  process that finds it first on PYTHONPATH, before the program's code runs.

`auto` takes cupti-python for a Python program when it is installed, else the injection
library. Each process writes `trace-<pid>.json` into a temporary folder at exit;
`read_folder` turns them into the trace model (capture/cupti_records.py), the context's
size from the library's cuMemGetInfo samples (capture/context_size.py). NVTX ranges
reach CUPTI through its NVTX injection: NVTX_INJECTION64_PATH is set to the libcupti
used when the caller has not set it.

The command refuses, in one line, what cannot work: no command, no cupti-python (when
asked for), no compiler or CUPTI to build the library, no NVIDIA driver or no CUDA
device, a program that exits with an error.
"""

from __future__ import annotations

import ctypes
import dataclasses
import importlib.util
import os
import re
import signal
import subprocess
import tempfile
from pathlib import Path

from cuzk_sim.capture.recorder_files import read_folder
from cuzk_sim.capture.trace import Trace
from cuzk_sim.input_errors import InputError

SITECUSTOMIZE = '''"""Written by cuzk-sim capture: start the CUPTI recorder in this process."""
import os

if os.environ.get("CUZK_SIM_CAPTURE_DIR"):
    try:
        from cuzk_sim.capture import cupti_child

        cupti_child.start(os.environ["CUZK_SIM_CAPTURE_DIR"])
    except Exception as e:  # never break the program: say so and run it unrecorded
        import sys

        print(f"cuzk-sim capture: not recording pid {os.getpid()}: {e}", file=sys.stderr)
'''
STOPPED = (-signal.SIGINT, -signal.SIGTERM, 128 + signal.SIGINT, 128 + signal.SIGTERM)
RECORDERS = ("auto", "injection", "cupti-python")


def check_command(cmd: list[str]) -> None:
    if not cmd:
        raise InputError(
            "capture: give the program after --, e.g. cuzk-sim capture -o plan.json -- "
            "./prover ARGS"
        )


def is_python(cmd: list[str]) -> bool:
    exe = Path(cmd[0]).name
    return bool(re.fullmatch(r"python[0-9.]*", exe) or exe.endswith(".py"))


def choose_recorder(cmd: list[str], via: str) -> str:
    """`injection` or `cupti-python` for `via` (auto: cupti-python for a Python program
    when it is installed, else the injection library)."""
    if via not in RECORDERS:
        raise InputError(f"capture: --via {via!r}: expected one of {', '.join(RECORDERS)}")
    if via == "cupti-python" and not is_python(cmd):
        raise InputError(
            f"capture: {cmd[0]} is not a Python program; --via cupti-python records Python "
            "programs only (use --via injection)"
        )
    if via == "auto":
        found = importlib.util.find_spec("cupti") is not None
        return "cupti-python" if is_python(cmd) and found else "injection"
    return via


def check_cupti() -> None:
    if importlib.util.find_spec("cupti") is None:
        raise InputError(
            "capture: NVIDIA's CUPTI Python bindings are not installed: "
            "pip install 'cuzk-sim[capture]' (cupti-python)"
        )


def check_gpu() -> None:
    """A driver that initializes and at least one CUDA device (cuInit, cuDeviceGetCount)."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        raise InputError("capture: no NVIDIA driver here (libcuda.so.1 not found)") from None
    if cuda.cuInit(0) != 0:
        raise InputError("capture: the CUDA driver does not initialize (no GPU?)")
    count = ctypes.c_int(0)
    if cuda.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value < 1:
        raise InputError("capture: no CUDA device")


def _libcupti() -> str | None:
    spec = importlib.util.find_spec("nvidia.cuda_cupti")
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        found = sorted(Path(root).glob("lib/libcupti.so*"))
        if found:
            return str(found[0])
    return None


def child_env(folder: str) -> dict[str, str]:
    """The captured program's environment: the sitecustomize folder and this package
    first on PYTHONPATH, the capture folder named, NVTX routed to CUPTI."""
    root = str(Path(__file__).resolve().parents[2])
    path = [folder, root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "CUZK_SIM_CAPTURE_DIR": folder}
    lib = _libcupti()
    if lib is not None and "NVTX_INJECTION64_PATH" not in env and _nvtx_wanted():
        env["NVTX_INJECTION64_PATH"] = lib
    return env


def _nvtx_wanted() -> bool:
    """NVTX ranges through CUPTI unless CUZK_SIM_CAPTURE_NVTX=0 (CUPTI 13.0's NVTX
    injection crashed nvtxNameOsThreadA: NVIDIA/NVTX#125)."""
    return os.environ.get("CUZK_SIM_CAPTURE_NVTX", "1") != "0"


def injection_env(folder: str, library: Path, libcupti: Path) -> dict[str, str]:
    """The captured program's environment for the injection library."""
    env = {**os.environ, "CUDA_INJECTION64_PATH": str(library), "CUZK_SIM_CAPTURE_DIR": folder}
    if _nvtx_wanted():
        env.setdefault("NVTX_INJECTION64_PATH", str(libcupti))
    return env


def run_captured(cmd: list[str], via: str = "auto") -> Trace:
    """Run `cmd` under the recorder `via` chooses and return what its processes recorded."""
    check_command(cmd)
    recorder = choose_recorder(cmd, via)
    if recorder == "cupti-python":
        check_cupti()
    else:
        from cuzk_sim.capture.inject_build import find_cupti, injection_library

        cupti = find_cupti()
        library = injection_library(cupti)
    check_gpu()
    source = " ".join(cmd)[:200]
    with tempfile.TemporaryDirectory(prefix="cuzk-capture-") as folder:
        if recorder == "cupti-python":
            Path(folder, "sitecustomize.py").write_text(SITECUSTOMIZE)
            env = child_env(folder)
        else:
            env = injection_env(folder, library, cupti.library)
        rc, stopped = run_program(cmd, env)
        if rc != 0 and not stopped and rc not in STOPPED:
            raise InputError(f"capture: {cmd[0]} exited with status {rc}; no plan written")
        trace = read_folder(Path(folder), source)
        if rc != 0:  # stopped by Ctrl-C or a signal, as a daemon is: said, not refused
            note = f"{cmd[0]} was stopped (status {rc}): the plan is what it did until then"
            trace = dataclasses.replace(trace, missing=(*trace.missing, note))
        return trace


def run_program(cmd: list[str], env: dict[str, str]) -> tuple[int, bool]:
    """Run the program to its end: (its exit status, whether Ctrl-C stopped it). Ctrl-C
    reaches the program too (one process group): cuzk-sim waits for it to stop (60 s,
    then kills it) and reads what it recorded."""
    try:
        child = subprocess.Popen(cmd, env=env)
    except OSError as e:
        raise InputError(f"capture: cannot run {cmd[0]}: {e.strerror or e}") from None
    try:
        return child.wait(), False
    except KeyboardInterrupt:
        try:
            return child.wait(timeout=60), True
        except subprocess.TimeoutExpired:
            child.kill()
            return child.wait(), True
