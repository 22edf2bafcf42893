"""Build the CUPTI injection library (capture/inject/cuzk_capture.c) at first use.

`cuzk-sim capture -- ./prog` records a program that is not Python by naming this library
in CUDA_INJECTION64_PATH: the CUDA driver loads it into the program at cuInit. It is
compiled here, once per source, CUPTI and compiler, with the system's C compiler (`$CC`,
else cc, gcc, clang, else nvcc) against the CUPTI headers found, in this order:

1. `$CUPTI_ROOT` (a folder holding include/cupti.h and lib64/ or lib/ with libcupti.so*);
2. `$CUDA_HOME`, `$CUDA_PATH`, the toolkit of the `nvcc` on PATH, /usr/local/cuda and
   /usr/local/cuda-*: each one's include/ and extras/CUPTI/include/;
3. the `nvidia` pip packages of this Python (nvidia-cuda-cupti: nvidia/cu13/,
   nvidia/cuda_cupti/).

cuda.h comes from the same folder or from the toolkit's include/. The library goes into
`$CUZK_SIM_CACHE` (default ~/.cache/cuzk-sim)/inject/<hash>/libcuzk_capture.so, the hash
over the source, the CUPTI folders and the compiler, so a changed source is rebuilt. What
is missing (a compiler, cupti.h, cuda.h, libcupti) is an InputError in one line naming
where it looked.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cuzk_sim.input_errors import InputError

SOURCE = Path(__file__).resolve().parent / "inject" / "cuzk_capture.c"
LIBRARY = "libcuzk_capture.so"
BUILD_TIMEOUT_S = 180


@dataclass(frozen=True)
class Cupti:
    """Where CUPTI is: the folders to include and the libcupti to link."""

    includes: tuple[Path, ...]
    library: Path


def _toolkit_roots() -> list[Path]:
    roots = [os.environ.get(k) for k in ("CUDA_HOME", "CUDA_PATH")]
    out = [Path(r) for r in roots if r]
    nvcc = shutil.which("nvcc")
    if nvcc:
        out.append(Path(nvcc).resolve().parent.parent)
    out.append(Path("/usr/local/cuda"))
    out += sorted(Path("/usr/local").glob("cuda-*"), reverse=True)
    return out


def _pip_roots() -> list[Path]:
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return []
    out = []
    for base in spec.submodule_search_locations:
        out += [p.parent.parent for p in sorted(Path(base).glob("*/include/cupti.h"))]
    return out


def candidate_roots() -> list[Path]:
    """Folders that may hold include/cupti.h, in the order they are tried."""
    roots = [Path(os.environ["CUPTI_ROOT"])] if os.environ.get("CUPTI_ROOT") else []
    for root in _toolkit_roots():
        roots += [root, root / "extras" / "CUPTI"]
    roots += _pip_roots()
    return list(dict.fromkeys(roots))


def _libcupti(root: Path) -> Path | None:
    for lib in ("lib64", "lib"):
        found = sorted((root / lib).glob("libcupti.so*"), key=lambda p: (len(p.name), p.name))
        if found:
            return found[0]
    return None


def find_cupti(roots: list[Path] | None = None) -> Cupti:
    """The first root with include/cupti.h and a libcupti beside it, and a cuda.h."""
    roots = candidate_roots() if roots is None else roots
    cuda_h = [r / "include" for r in _toolkit_roots() if (r / "include" / "cuda.h").is_file()]
    for root in roots:
        inc = root / "include"
        if not (inc / "cupti.h").is_file():
            continue
        lib = _libcupti(root)
        if lib is None:
            continue
        includes = [inc] + ([] if (inc / "cuda.h").is_file() else cuda_h[:1])
        if not any((i / "cuda.h").is_file() for i in includes):
            raise InputError(
                f"capture: {inc}/cupti.h found but no cuda.h beside it or in a CUDA toolkit "
                "(set CUDA_HOME to the toolkit)"
            )
        return Cupti(tuple(includes), lib)
    looked = ", ".join(str(r) for r in roots[:8]) + (", ..." if len(roots) > 8 else "")
    raise InputError(
        "capture: CUPTI not found (include/cupti.h with a libcupti.so beside it) in "
        f"{looked}: set CUPTI_ROOT, or install the CUDA toolkit or "
        "`pip install nvidia-cuda-cupti`"
    )


def find_compiler() -> list[str]:
    """The C compiler's command: $CC, else cc, gcc, clang, else nvcc."""
    if os.environ.get("CC"):
        return os.environ["CC"].split()
    for name in ("cc", "gcc", "clang", "nvcc"):
        path = shutil.which(name)
        if path:
            return [path]
    raise InputError(
        "capture: no C compiler (cc, gcc, clang or nvcc) on PATH to build the injection "
        "library: install one or set CC"
    )


def build_command(compiler: list[str], cupti: Cupti, out: Path) -> list[str]:
    """The compile-and-link command: a shared library, libcupti by path with its folder
    as the run path (so the driver's loader finds it without LD_LIBRARY_PATH)."""
    libdir = str(cupti.library.parent)
    includes = [f"-I{i}" for i in cupti.includes]
    if Path(compiler[0]).name == "nvcc":
        return [*compiler, "-O2", "-shared", "-Xcompiler", "-fPIC", *includes, "-o", str(out),
                str(SOURCE), str(cupti.library), "-Xlinker", f"-rpath={libdir}",
                "-lpthread", "-ldl"]  # fmt: skip
    return [*compiler, "-std=gnu11", "-O2", "-shared", "-fPIC", *includes, "-o", str(out),
            str(SOURCE), str(cupti.library), f"-Wl,-rpath,{libdir}",
            "-lpthread", "-ldl"]  # fmt: skip


def cache_dir() -> Path:
    base = os.environ.get("CUZK_SIM_CACHE") or str(Path.home() / ".cache" / "cuzk-sim")
    return Path(base) / "inject"


def injection_library(cupti: Cupti | None = None, compiler: list[str] | None = None) -> Path:
    """The built library (built now if this source, CUPTI and compiler have none yet)."""
    cupti = find_cupti() if cupti is None else cupti
    compiler = find_compiler() if compiler is None else compiler
    key = hashlib.sha256(SOURCE.read_bytes())
    key.update(repr((cupti, compiler)).encode())
    folder = cache_dir() / key.hexdigest()[:16]
    lib = folder / LIBRARY
    if lib.is_file():
        return lib
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"capture: cannot make {folder}: {e.strerror}") from None
    tmp = folder / f"{LIBRARY}.{os.getpid()}.tmp"
    cmd = build_command(compiler, cupti, tmp)
    try:
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise InputError(f"capture: building the injection library failed: {e}") from None
    if done.returncode != 0:
        last = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise InputError(
            f"capture: {Path(compiler[0]).name} could not build the injection library "
            f"against {cupti.includes[0]}: {last[:400]}"
        )
    os.replace(tmp, lib)
    return lib
