"""Errors in user input (scenarios, profiles, plan files) that name file, key path and
what was expected, so the CLI can print one line instead of a traceback."""

from __future__ import annotations

from pydantic import ValidationError


class InputError(ValueError):
    """Bad input; str(error) is the complete message for people."""


def key_path(loc: tuple) -> str:
    """('hardware', 'vram') -> 'hardware.vram'; list indices as [i]."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def from_validation(source: str, error: ValidationError, prefix: tuple = ()) -> InputError:
    """One line per problem: `file: key.path: what was expected`; `prefix` is the key path
    of the table that was validated on its own (e.g. ('plan', 'gpu_prover'))."""
    lines = []
    for e in error.errors():
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown key"
        elif e["type"] == "missing":
            msg = "required key is missing"
        lines.append(f"{source}: {key_path(prefix + tuple(e['loc']))}: {msg}")
    return InputError("\n".join(lines))
