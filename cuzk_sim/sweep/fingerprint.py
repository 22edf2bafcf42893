"""A fingerprint of the model's code: part of every row's key, and checked on workers.

A row is a function of the resolved scenario *and* of the code that simulated it. Keying
rows by the scenario alone would let a resumed sweep reuse rows computed before a model
change, and a Dask worker with another checkout of the package would compute other rows
without anyone noticing (it happened while this was written: a `dask worker` started
with another interpreter imported another helper's `cuzk_sim`). So the key also hashes
the package's source files (`cuzk_sim` and the `cuzk_sim.gpu` folder whose dry run
builds live plans; profiles included), and each task carries the client's fingerprint,
which the worker compares with its own before simulating.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
from pathlib import Path

_SUFFIXES = (".py", ".toml", ".json", ".cu", ".cuh")


def _roots() -> list[Path]:
    roots = []
    for name in ("cuzk_sim", "cuzk_sim.gpu"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            roots += [Path(p) for p in spec.submodule_search_locations]
    return roots


@functools.cache
def code_fingerprint() -> str:
    """16 hex digits of SHA-256 over the package's source files (path and bytes)."""
    h = hashlib.sha256()
    for root in _roots():
        for path in sorted(root.rglob("*")):
            if path.suffix in _SUFFIXES and "__pycache__" not in path.parts and path.is_file():
                h.update(f"{root.name}/{path.relative_to(root)}\0".encode())
                h.update(path.read_bytes())
    return h.hexdigest()[:16]
