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


# what runs each kind of TOML file, for the message when one is given to another command
RUNS_IT = {
    "scenario": "run it with cuzk-sim run or check",
    "sweep spec": "run it with cuzk-sim sweep",
    "validation spec": "run it with cuzk-sim validate",
    "calibration profile": "name it in a scenario (profile = ...) or read it with cuzk-sim "
    "profile show",
}


def document_kind(raw: dict) -> str | None:
    """What a parsed TOML document plainly is, by the keys only that kind has (a scenario:
    `workload`; a sweep spec: `base` with `axes` or `sample`; a validation spec: `base`
    with `config`; a profile: a `[kernel]` table), else None."""
    if "workload" in raw:
        return "scenario"
    if "base" in raw and ("axes" in raw or "sample" in raw):
        return "sweep spec"
    if "base" in raw and "config" in raw:
        return "validation spec"
    if isinstance(raw.get("kernel"), dict):
        return "calibration profile"
    return None


def refuse_other_kind(raw: dict, source: str, expected: str) -> None:
    """One line when `raw` is plainly another kind of file than the command reads (a sweep
    spec given to `run`: not a list of its keys as unknown scenario keys)."""
    kind = document_kind(raw)
    if kind is not None and kind != expected:
        raise InputError(f"{source}: a {kind}, not a {expected}: {RUNS_IT[kind]}")


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
