"""Errors in user input (scenarios, profiles, plan files) that name file, key path and
what was expected, so the CLI can print one line instead of a traceback."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


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


def validate_input(model: type[M], raw: Any, source: str, prefix: tuple = ()) -> M:
    """`raw` (a parsed TOML or JSON document) validated by `model` with strict types, or
    one InputError line naming `source` and the key path.

    Strict as JSON is: a count is an integer (not `true`, not `1.5`), a switch is a
    boolean (not `"yes"`, not `1`), a number is not a string; lists still fill tuples and
    strings still name enum members (pydantic's strict mode for JSON input). The document
    goes through JSON text for that, so the same rules hold whether it came from a TOML
    file, a JSON file, a `--set` value or a sweep axis."""
    try:
        return validate_strict(model, raw, source)
    except ValidationError as e:
        raise from_validation(source, e, prefix) from None


def validate_strict(model: type[M], raw: Any, source: str) -> M:
    """`validate_input` raising pydantic's ValidationError for the caller to word (an
    InputError only for a value JSON cannot hold)."""
    try:
        text = json.dumps(raw, allow_nan=False, default=_refuse_type)
    except (_NotJson, ValueError) as e:  # a date; a non-finite float (refused earlier)
        raise InputError(f"{source}: {e}") from None
    return model.model_validate_json(text, strict=True)


class _NotJson(TypeError):
    pass


def _refuse_type(value: Any) -> Any:
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    # a TOML date or time: no key of ours takes one
    raise _NotJson(f"a {type(value).__name__} value ({value!s:.40}) where no key takes one")


class LineError(InputError):
    """Bad input at one line of a stream (a log): the reader that knows the file names
    it as `file:line: why`."""

    def __init__(self, lineno: int, why: str) -> None:
        super().__init__(f"line {lineno}: {why}")
        self.lineno, self.why = lineno, why
