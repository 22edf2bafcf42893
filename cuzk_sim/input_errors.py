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


MAX_PROBLEMS = 5  # named in one message; the rest are counted


def from_validation(source: str, error: ValidationError, prefix: tuple = ()) -> InputError:
    """One line, `file: key.path: what was expected`, with further problems after `; `
    (a CLI prints exactly one line for bad input); `prefix` is the key path of the table
    that was validated on its own (e.g. ('plan', 'gpu_prover'))."""
    problems = []
    for e in error.errors():
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown key"
        elif e["type"] == "missing":
            msg = "required key is missing"
        problems.append(f"{key_path(prefix + tuple(e['loc']))}: {msg}".replace("\n", " "))
    more = len(problems) - MAX_PROBLEMS
    text = "; ".join(problems[:MAX_PROBLEMS]) + (f"; and {more} more" if more > 0 else "")
    return InputError(f"{source}: {text}")
