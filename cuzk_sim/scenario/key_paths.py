"""Change keys of a TOML table by their path, checked against its pydantic model (the
scenario format: cuzk_sim.scenario.overrides binds it).

A key path is the scenario file's own key names joined by dots, with list items by
index: `hardware.vram`, `engine.gpus.gpu_workers_per_device`, `workload[0].count`,
`plan.gpu_prover.msm_chunk`. Overrides apply to the raw TOML dict (a deep copy), so the
result is validated exactly like a file a user wrote: an override can never produce a
scenario that the file format could not. A path the scenario format does not have is
refused before anything runs, with the nearest real key names.
"""

from __future__ import annotations

import copy
import difflib
import re
import types
import typing
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from cuzk_sim.io.errors import InputError
from cuzk_sim.io.inputs import parse_toml

_PART = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)((?:\[\d{1,6}\])*)")
MAX_KEY_PATH_CHARS = 256  # the longest real key path is about 50
MAX_VALUE_CHARS = 4096  # a --set value or an axis value as TOML text
MAX_VALUE_DEPTH = 8  # nested arrays / inline tables in one value
MAX_OVERRIDES = 256  # --set options (or axes) in one run


def parse_key_path(path: str) -> tuple[str | int, ...]:
    """'workload[0].count' -> ('workload', 0, 'count')."""
    if not isinstance(path, str) or not path:
        raise InputError(f"{path!r}: a key path is dotted key names, e.g. hardware.vram")
    if len(path) > MAX_KEY_PATH_CHARS:
        raise InputError(
            f"{path[:60]!r}...: a key path of {len(path)} characters (at most "
            f"{MAX_KEY_PATH_CHARS}); the scenario format has none that long"
        )
    parts: list[str | int] = []
    for piece in path.split("."):
        m = _PART.fullmatch(piece)
        if m is None:
            raise InputError(
                f"{path}: not a key path (dotted key names with optional [index], "
                "e.g. engine.gpus.gpu_workers_per_device or workload[0].count)"
            )
        parts.append(m.group(1))
        parts.extend(int(i) for i in re.findall(r"\[(\d+)\]", m.group(2)))
    return tuple(parts)


def parse_assignment(text: str, model: type[BaseModel]) -> tuple[str, Any]:
    """'key.path=value' -> (key path, value). The value is read as a TOML value (`3`,
    `true`, `"16 GiB"`, `["a", "b"]`, `{ domain_log2 = 20 }`); anything that is not
    valid TOML is taken as a plain string, so `hardware.vram=16 GiB` needs no quotes."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise InputError(f"--set {text!r}: expected KEY=VALUE, e.g. hardware.vram='20 GiB'")
    check_key_path(key, model)
    return key, parse_value(value.strip(), f"--set {key}")


def parse_value(value: str, where: str) -> Any:
    """A value as TOML reads it, bounded before the parser sees it: at most
    MAX_VALUE_CHARS characters and MAX_VALUE_DEPTH levels of arrays and inline tables
    (tomllib recurses), integers within 64 bits, floats finite. Text that is not a TOML
    value is the plain string."""
    if len(value) > MAX_VALUE_CHARS:
        raise InputError(f"{where}: a value of {len(value)} characters (at most {MAX_VALUE_CHARS})")
    if _nesting(value) > MAX_VALUE_DEPTH:
        raise InputError(f"{where}: a value nested deeper than {MAX_VALUE_DEPTH} levels")
    try:
        doc = parse_toml(f"v = {value}", where)
    except InputError as e:
        if "not valid TOML" not in str(e):  # a 5,000-digit integer, inf: refused
            raise InputError(str(e).replace(f"{where}: v: ", f"{where}: ")) from None
        return value
    return doc["v"]


def _nesting(text: str) -> int:
    """An upper bound on the nesting of arrays / inline tables (quotes not skipped)."""
    depth = deepest = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(depth - 1, 0)
    return deepest


def _unwrap(annotation: Any) -> list[Any]:
    """The concrete types a field may hold: Optional/Union arms, without None."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        out = []
        for arm in typing.get_args(annotation):
            if arm is not type(None):
                out.extend(_unwrap(arm))
        return out
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    return [annotation]


def check_key_path(path: str, model: type[BaseModel]) -> None:
    """Refuse a path `model` (the scenario format) does not have, naming the nearest key
    names."""
    parts = parse_key_path(path)
    types_here: list[Any] = [model]
    walked = ""
    for part in parts:
        if isinstance(part, int):
            inner = []
            for t in types_here:
                if typing.get_origin(t) in (list, tuple):
                    inner.extend(_unwrap(a) for a in typing.get_args(t) if a is not Ellipsis)
            if not inner:
                raise InputError(f"{path}: {walked} is not a list; [{part}] does not apply")
            types_here = [t for arms in inner for t in arms]
            walked += f"[{part}]"
            continue
        models = [t for t in types_here if isinstance(t, type) and issubclass(t, BaseModel)]
        if any(typing.get_origin(t) is dict or t is dict for t in types_here):
            return  # a free-form table: any sub-key is the table's own business
        if not models:
            raise InputError(f"{path}: {walked} is a value, it has no key {part!r}")
        fields = {name: f for m in models for name, f in m.model_fields.items()}
        if part not in fields:
            near = difflib.get_close_matches(part, list(fields), n=3)
            hint = f" (did you mean {', '.join(near)}?)" if near else ""
            where = walked or "the top level"
            raise InputError(
                f"{path}: no key {part!r} under {where} in the scenario format{hint}; "
                f"keys there: {', '.join(sorted(fields))}"
            )
        annotation = fields[part].annotation
        types_here = _unwrap(annotation)
        if typing.get_origin(annotation) in (list, tuple):
            types_here = [annotation]
        walked += ("." if walked else "") + part


def apply_overrides(
    raw: Mapping[str, Any], overrides: Mapping[str, Any], model: type[BaseModel]
) -> dict[str, Any]:
    """A deep copy of `raw` with each `path: value` set. Missing tables are created;
    a list index must exist (`workload[1]` needs two workload entries). At most
    MAX_OVERRIDES changes at once."""
    if len(overrides) > MAX_OVERRIDES:
        raise InputError(f"{len(overrides)} key changes at once (at most {MAX_OVERRIDES})")
    out: dict[str, Any] = copy.deepcopy(dict(raw))
    for path, value in overrides.items():
        check_key_path(path, model)
        parts = parse_key_path(path)
        node: Any = out
        for i, part in enumerate(parts[:-1]):
            nxt = parts[i + 1]
            node = _child(node, part, want_list=isinstance(nxt, int), path=path)
        last = parts[-1]
        if isinstance(last, int):
            if not isinstance(node, list) or last >= len(node):
                raise InputError(f"{path}: index [{last}] is out of range")
            node[last] = copy.deepcopy(value)
        else:
            if not isinstance(node, dict):
                raise InputError(f"{path}: the scenario holds a value where a table is needed")
            node[last] = copy.deepcopy(value)
    return out


def _child(node: Any, part: str | int, want_list: bool, path: str) -> Any:
    if isinstance(part, int):
        if not isinstance(node, list) or part >= len(node):
            size = len(node) if isinstance(node, list) else 0
            raise InputError(f"{path}: index [{part}] is out of range (the list has {size})")
        return node[part]
    if not isinstance(node, dict):
        raise InputError(f"{path}: the scenario holds a value where a table is needed")
    if part not in node:
        if want_list:
            raise InputError(f"{path}: the scenario has no {part!r} list to index")
        node[part] = {}
    return node[part]
