"""Loading the CUDA kernels (`kernels/*.cu`) as CuPy RawModules, and launching them.

One cached RawModule per file; kernels use grid-stride loops, so one launch shape fits
any size. CuPy is imported here, lazily, and nowhere on the dry-run path.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

KERNEL_DIR = Path(__file__).parent / "kernels"
THREADS = 256
MAX_BLOCKS = 132 * 64  # enough resident blocks for every SM of an H200


def defines() -> tuple[str, ...]:
    """Compile-time switches from $CUZK_KERNEL_DEFINES (the field product's baseline,
    "FIELD_MUL_WIDE=0"), for benchmarking it beside the default in one process."""
    return tuple(f"-D{d}" for d in os.environ.get("CUZK_KERNEL_DEFINES", "").split() if d)


def module(file: str) -> Any:
    return _module(file, defines())


@functools.cache
def _module(file: str, flags: tuple[str, ...]) -> Any:
    import cupy

    source = (KERNEL_DIR / file).read_text()
    return cupy.RawModule(
        code=source, options=("--std=c++17", f"-I{KERNEL_DIR}", *flags), backend="nvrtc"
    )


def kernel(file: str, name: str) -> Any:
    return module(file).get_function(name)


def launch(file: str, name: str, work_items: int, *args: Any, threads: int = THREADS) -> None:
    """Launch `name` with enough blocks for `work_items` grid-stride iterations."""
    blocks = max(1, min(MAX_BLOCKS, -(-work_items // threads)))
    kernel(file, name)((blocks,), (threads,), args)
