"""Quantities with units, as people write them in scenarios and profiles.

Sizes are binary ("16 GiB", "4096 MiB") or decimal ("6 GB"); times take ns..h
("690 ms", "2 h"); bandwidths are a size per second ("24 GiB/s"). Every parser returns a
plain number (bytes as int, seconds as float) and raises `UnitError` naming what it
expected, so callers can prefix the file and key path.

Every quantity has a stated upper limit (`MAX_SIZE_BYTES`, `MAX_DURATION_S`,
`MAX_BANDWIDTH`): far beyond any card, host or run we model, but finite, so "1e999 GiB"
is refused with one line instead of overflowing into infinity somewhere downstream, and
simulated times stay where a float still resolves nanoseconds' worth of work.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Annotated

from pydantic import BeforeValidator

SIZE_UNITS: dict[str, int] = {
    "B": 1,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "TiB": 2**40,
    "kB": 10**3,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
}
TIME_UNITS: dict[str, float] = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "min": 60.0,
    "h": 3600.0,
}

_QUANTITY = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-zµ/]+)\s*$")


MAX_SIZE_BYTES = 2**50  # 1 PiB: more than any VRAM, host RAM or buffer we model
MAX_DURATION_S = 1e9  # about 31.7 years: longer than any run, arrival gap or step
MAX_BANDWIDTH = float(2**50)  # 1 PiB/s
MAX_QUANTITY_CHARS = 64


class UnitError(ValueError):
    """A quantity that does not parse; the message says what was expected."""


def _split(text: object, what: str, units: dict) -> tuple[float, str]:
    if isinstance(text, bool) or not isinstance(text, str):
        raise UnitError(f"expected {what} as a string with a unit, got {text!r}")
    if len(text) > MAX_QUANTITY_CHARS:  # before the regex: its backtracking is quadratic
        raise UnitError(
            f"expected {what} of at most {MAX_QUANTITY_CHARS} characters, got {text[:40]!r}..."
        )
    if text.strip().startswith("-"):
        raise UnitError(f"expected a non-negative {what}, got {text!r}")
    m = _QUANTITY.match(text)
    if not m or m.group(2) not in units:
        raise UnitError(
            f"expected {what} like '{_example(what)}' (units: {', '.join(units)}), got {text!r}"
        )
    value = float(m.group(1))  # a float literal: never the int digit limit; may be inf
    if not math.isfinite(value):
        raise UnitError(f"expected a finite {what}, got {text!r}")
    return value, m.group(2)


def _example(what: str) -> str:
    return {"size": "16 GiB", "duration": "690 ms"}.get(what, "24 GiB/s")


def parse_size(text: object) -> int:
    """Bytes in a size string; "16 GiB" -> 17179869184."""
    value, unit = _split(text, "size", SIZE_UNITS)
    n = value * SIZE_UNITS[unit]
    if not n <= MAX_SIZE_BYTES:  # also catches inf from a finite but huge value
        raise UnitError(f"expected a size of at most 1 PiB (2^50 bytes), got {text!r}")
    return int(round(n))


def parse_duration(text: object) -> float:
    """Seconds in a duration string; "690 ms" -> 0.69."""
    value, unit = _split(text, "duration", TIME_UNITS)
    seconds = value * TIME_UNITS[unit]
    if not seconds <= MAX_DURATION_S:
        raise UnitError(f"expected a duration of at most 1e9 s (about 31 years), got {text!r}")
    return seconds


def parse_bandwidth(text: object) -> float:
    """Bytes per second in a bandwidth string; "24 GiB/s" -> 24 * 2**30."""
    if not isinstance(text, str) or "/" not in text:
        raise UnitError(f"expected a bandwidth like '24 GiB/s', got {text!r}")
    size_part, _, time_part = text.rpartition("/")
    seconds = parse_duration("1 " + time_part.strip())
    value, unit = _split(size_part.strip() or "x", "bandwidth", SIZE_UNITS)
    per_second = value * SIZE_UNITS[unit] / seconds
    if per_second <= 0 or not math.isfinite(per_second):
        raise UnitError(f"expected a positive bandwidth, got {text!r}")
    if per_second > MAX_BANDWIDTH:
        raise UnitError(f"expected a bandwidth of at most 1 PiB/s, got {text!r}")
    return per_second


def format_size(n: int | float) -> str:
    """A short human size: 4294967296 -> '4.00 GiB'."""
    for unit in ("TiB", "GiB", "MiB", "KiB"):
        if abs(n) >= SIZE_UNITS[unit]:
            return f"{n / SIZE_UNITS[unit]:.2f} {unit}"
    return f"{int(n)} B"


def _checked_by(parse: Callable[[object], object]) -> BeforeValidator:
    """Runs `parse` on the value as written, before pydantic's string check: a number
    without its unit (`vram = 16`) gets the quantity's own message ("expected size as a
    string with a unit, got 16"), not pydantic's "Input should be a valid string"."""

    def check(value: object) -> object:
        parse(value)  # raises UnitError (a ValueError): pydantic reports it at the key path
        return value

    return BeforeValidator(check)


# Field types for validated input models: the text is kept as written (so it can be echoed
# back) and checked to parse in its unit.
SizeText = Annotated[str, _checked_by(parse_size)]
DurationText = Annotated[str, _checked_by(parse_duration)]
BandwidthText = Annotated[str, _checked_by(parse_bandwidth)]
