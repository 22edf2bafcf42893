"""Reading the simulator's input files (scenario and profile TOML, plan and baseline
JSON) so that no file can crash, hang or exhaust the reader.

A file is read only if it is a regular file, and never beyond a byte limit (`/dev/zero`
is refused at once). Its text is parsed with every failure of the parser turned into one
`InputError` line naming the file: a syntax error, an integer literal beyond Python's
4,300-digit limit, nesting deeper than the parser's recursion. Then the parsed document
is walked once (without recursion) and refused if it holds a non-finite float (TOML
`inf`, JSON `Infinity`, or `1e999`, which both parsers turn into infinity) or an integer
outside TOML's 64-bit range: no key of ours takes either, and each would otherwise
overflow far downstream (a baseline of `Infinity` seconds passes every run).
"""

from __future__ import annotations

import json
import math
import os
import stat
import tomllib
from pathlib import Path
from typing import Any, Literal

from cuzk_sim.io.errors import InputError, key_path
from cuzk_sim.reference.formats.files import MAX_JSON_DEPTH, json_depth_exceeds, read_limited

MAX_TOML_BYTES = 16 << 20  # a scenario or profile is a few KiB
MAX_JSON_BYTES = 256 << 20  # a plan of 100,000 steps is about 15 MiB
INT_RANGE = (-(2**63), 2**63 - 1)  # TOML 1.0: integers are 64-bit signed


def read_text(path: Path, what: str, limit: int) -> str:
    """The UTF-8 text of a regular file of at most `limit` bytes; `what` names the input
    in the message ("scenario file", "baseline")."""
    try:
        return read_limited(path, limit).decode("utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such {what}") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read the {what} ({e.strerror or e})") from None
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: the {what} is not UTF-8 text (byte {e.start})") from None
    except ValueError:  # an embedded NUL byte: no file can have that name
        raise InputError(f"{str(path)[:80]!r}: not a usable path for the {what}") from None


def check_numbers(doc: Any, source: str) -> None:
    """Refuse a non-finite float or an integer beyond 64 bits anywhere in `doc`."""
    stack: list[tuple[tuple, Any]] = [((), doc)]
    while stack:
        loc, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((loc + (k,), v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((loc + (i,), v) for i, v in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            raise InputError(f"{source}: {key_path(loc)}: expected a finite number, got {value}")
        elif isinstance(value, int) and not INT_RANGE[0] <= value <= INT_RANGE[1]:
            raise InputError(
                f"{source}: {key_path(loc)}: integer outside the 64-bit range "
                f"(it has {len(str(abs(value)))} digits)"
            )


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def parse_json(text: str, source: str) -> Any:
    """JSON text -> Python values, or one InputError line naming the file and the line."""
    if json_depth_exceeds(text, MAX_JSON_DEPTH):
        raise InputError(f"{source}: not usable JSON: nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        doc = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as e:
        raise InputError(f"{source}: not JSON: {e}") from None
    except RecursionError:
        raise InputError(f"{source}: not usable JSON: nested too deeply") from None
    except ValueError as e:  # the integer digit limit, NaN / Infinity
        why = str(e).split(";")[0]  # Python's digit-limit message goes on about set_int_max_
        raise InputError(f"{source}: not usable JSON: {why}") from None
    check_numbers(doc, source)
    return doc


def parse_toml(text: str, source: str) -> dict[str, Any]:
    """TOML text -> a dict, or one InputError line naming the file."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{source}: not valid TOML: {e}") from None
    except RecursionError:
        raise InputError(f"{source}: not usable TOML: nested too deeply") from None
    except ValueError as e:
        raise InputError(f"{source}: not usable TOML: {str(e).split(';')[0]}") from None
    check_numbers(doc, source)
    return doc


def load_json(path: Path, what: str, limit: int = MAX_JSON_BYTES) -> Any:
    return parse_json(read_text(path, what, limit), str(path))


def load_toml(path: Path, what: str, limit: int = MAX_TOML_BYTES) -> dict[str, Any]:
    return parse_toml(read_text(path, what, limit), str(path))


PathKind = Literal["folder", "file", "special", "missing"]


def path_kind(path: Path, what: str) -> PathKind:
    """What is at `path` ('special': a device, FIFO or socket), without Path.is_file()'s
    exception for a name the OS refuses (ENAMETOOLONG): that is one InputError line."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except OSError as e:
        shown = str(path) if len(str(path)) <= 80 else str(path)[:80] + "..."
        raise InputError(f"{what} {shown}: {e.strerror or e}") from None
    except ValueError:  # an embedded NUL byte
        raise InputError(f"{what} {str(path)[:80]!r}: not a usable path") from None
    if stat.S_ISDIR(mode):
        return "folder"
    return "file" if stat.S_ISREG(mode) else "special"
