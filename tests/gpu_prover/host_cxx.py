"""The host C++ compiler for the emulation tests (kernel sources built for the CPU and run
without a GPU): the compiler found on PATH and one build helper, which skips the test with
a reason where there is none.

Builds are cached by content (the harness, the flags, the compiler, every file of the
include folders and of the kernels' folder) in the temporary directory, so the xdist
workers of one run, and later runs, compile each harness once.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest
from cuzk_sim.gpu.module import KERNEL_DIR

CXX = shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")


def build(
    directory: Path,
    source: str,
    flags: Sequence[str] = (),
    std: str = "c++17",
    include: Sequence[Path] = (),
) -> Path:
    """Compile `source` (a harness that includes the kernels) in `directory` with the
    kernels' folder (and `include`) on the include path; the executable's path."""
    if CXX is None:
        pytest.skip("no C++ compiler (g++, c++, clang++) on PATH")
    dirs = (*include, KERNEL_DIR)
    cached = _cache_path(source, flags, std, dirs)
    cached.parent.mkdir(parents=True, exist_ok=True)
    with open(cached.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if cached.exists():
            return cached
        (directory / "emu.cpp").write_text(source)
        out = directory / "emu"
        subprocess.run(
            [CXX, "-O1", f"-std={std}", *flags, *(f"-I{d}" for d in dirs),
             str(directory / "emu.cpp"), "-o", str(out)],
            check=True,
            capture_output=True,
        )  # fmt: skip
        staged = cached.with_name(f"emu.{os.getpid()}")
        shutil.copy2(out, staged)
        os.replace(staged, cached)
    return cached


def _cache_path(source: str, flags: Sequence[str], std: str, dirs: Sequence[Path]) -> Path:
    """Where the build of these inputs is kept: a digest of everything it reads."""
    h = hashlib.sha256("\0".join([str(CXX), std, *flags, source]).encode())
    for d in dirs:
        for f in sorted(p for p in Path(d).iterdir() if p.is_file()):
            h.update(f.name.encode() + b"\0" + f.read_bytes())
    return Path(tempfile.gettempdir()) / "cuzk-sim-cxx" / h.hexdigest()[:32] / "emu"
