"""Outputs that are never lost: written whole or not at all, and never two on one path.

A command that writes several files (proof + public, a baseline) stages every file as a
temporary beside its target first and renames them into place only once all are
complete: a failing write leaves every previous file as it was, and a failure of the
second output does not replace the first. Two outputs that name the same file (directly,
through `..` or a symlink) are refused before any work starts.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path

from cuzk_sim.input_errors import InputError
from cuzk_sim.input_files import path_kind
from cuzk_sim.reference.formats.files import stage, write_atomic

__all__ = ["check_distinct", "check_writable", "write_all", "write_atomic"]


def _same_file(a: Path, b: Path) -> bool:
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)  # hard links
    except OSError:
        return False


def check_distinct(outputs: Mapping[str, Path]) -> None:
    """Refuse two outputs naming one file; keys are how the user named them (options)."""
    named = list(outputs.items())
    for i, (what_a, a) in enumerate(named):
        for what_b, b in named[i + 1 :]:
            if _same_file(a, b):
                raise InputError(
                    f"{what_a} and {what_b} both name {a}: the second would overwrite the "
                    "first; give two different files"
                )


def check_writable(what: str, path: Path) -> None:
    """Refuse an output that cannot be written (a folder, a missing folder, a special
    file) before any work is done."""
    kind = path_kind(path, what)
    if kind == "folder":
        raise InputError(f"{what} {path}: is a folder; give a file name")
    if kind == "special":
        raise InputError(f"{what} {path}: is not a regular file (a device or pipe?)")
    if path_kind(path.parent, what) != "folder":
        raise InputError(f"{what} {path}: folder {path.parent} does not exist")


def write_all(files: Mapping[Path, bytes]) -> None:
    """Write every file or none: stage all, then rename each into place. An OSError from
    staging (its filename: the target) leaves every target untouched and no temporary
    behind."""
    staged: list[tuple[str, Path]] = []
    try:
        for path, data in files.items():
            try:
                staged.append((stage(path, data), path))
            except OSError as e:  # name the target, not the temporary
                raise OSError(e.errno, e.strerror or str(e), str(path)) from None
        while staged:
            temp, path = staged[0]
            os.replace(temp, path)
            staged.pop(0)
    finally:
        for temp, _ in staged:
            with contextlib.suppress(OSError):
                os.unlink(temp)
