"""Which TOML files in a searched folder are scenarios.

`check` and `gate` search folders recursively (scenarios/, scenarios/gate/). A folder may
also hold the files scenarios refer to or that vary them: a calibration profile named by a
scenario's `profile = "my-card.toml"`, a sweep spec or a validation spec (`base = ...`).
Those are not scenarios and are skipped; a file that is none of these is loaded as a
scenario, so a broken scenario is reported, never skipped.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from cuzk_sim.io.errors import InputError
from cuzk_sim.io.inputs import MAX_TOML_BYTES, path_kind
from cuzk_sim.reference.formats.files import read_limited

TomlKind = Literal["scenario", "spec", "profile"]


def toml_kind(path: Path) -> TomlKind:
    """'spec': a top-level `base` (the scenario it varies) and no `workload`; 'profile': a
    `[kernel]` table and no `workload`; else 'scenario' (unreadable files too: the scenario
    loader reports them)."""
    try:  # a regular file, bounded (a FIFO named x.toml in a searched folder never blocks)
        raw = tomllib.loads(read_limited(path, MAX_TOML_BYTES).decode())
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):  # TOMLDecodeError too
        return "scenario"
    if "workload" in raw:
        return "scenario"
    if "base" in raw:
        return "spec"
    if isinstance(raw.get("kernel"), dict):
        return "profile"
    return "scenario"


def scenario_files(paths: list[Path]) -> list[Path]:
    """Scenario TOML files: files as given, folders searched recursively without the
    profiles and sweep/validation specs found there."""
    files: list[Path] = []
    for p in paths:
        kind = path_kind(p, "scenario path")
        if kind == "folder":
            files += [f for f in sorted(p.rglob("*.toml")) if toml_kind(f) == "scenario"]
        elif kind != "missing":  # a special file is refused by the scenario loader
            files.append(p)
        else:
            raise InputError(f"{p}: no such file or folder")
    return files
