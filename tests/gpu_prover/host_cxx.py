"""The host C++ compiler for the emulation tests (kernel sources built for the CPU and run
without a GPU): the compiler found on PATH and one build helper, which skips the test with
a reason where there is none."""

from __future__ import annotations

import shutil
import subprocess
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
    (directory / "emu.cpp").write_text(source)
    out = directory / "emu"
    dirs = [f"-I{d}" for d in (*include, KERNEL_DIR)]
    subprocess.run(
        [CXX, "-O1", f"-std={std}", *flags, *dirs, str(directory / "emu.cpp"), "-o", str(out)],
        check=True,
        capture_output=True,
    )
    return out
