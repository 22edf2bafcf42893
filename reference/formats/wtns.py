"""circom's binary witness (.wtns, versions 1-2): read and write.

Sections: 1 header (u32 n8, the prime in n8 bytes, u32 witness count); 2 the values,
n8 little-endian bytes each, plain (not Montgomery). Value 0 is the constant wire 1.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path

from ..field import R
from .binfile import read_binfile
from .curves import KNOWN_SCALAR_FIELDS, N8_R, check_prime
from .errors import FormatError, at_byte
from .files import write_atomic

MAGIC = b"wtns"
HEADER, VALUES = 1, 2


def read_wtns(path: str | Path) -> list[int]:
    """The full assignment [1, public..., private...] as ints in [0, r)."""
    f = read_binfile(path, MAGIC, max_version=2)
    h = f.section(HEADER, "header")
    where = at_byte(h.pos)
    n8 = h.u32("n8")
    if n8 != N8_R:
        if 0 < n8 <= 64:
            check_prime(f.path, where, h.uint(n8, "prime"), KNOWN_SCALAR_FIELDS, R, "prime")
        raise FormatError(f.path, where, f"header: field size n8 = {n8}, expected {N8_R}")
    check_prime(f.path, at_byte(h.pos), h.uint(N8_R, "prime"), KNOWN_SCALAR_FIELDS, R, "prime")
    count = h.u32("nWitness")
    h.expect_end()
    v = f.section(VALUES, "witness values")
    if v.remaining != count * N8_R:
        raise v.error(f"nWitness = {count} needs {count * N8_R} bytes, section has {v.remaining}")
    values = []
    for i in range(count):
        at = v.pos
        x = v.uint(N8_R, f"witness[{i}]")
        if x >= R:
            raise v.error(f"witness[{i}] = {x} >= r", at)
        values.append(x)
    if count and values[0] != 1:
        raise v.error(f"witness[0] is the constant wire and must be 1, got {values[0]}", v.start)
    return values


def wtns_bytes(witness: Sequence[int]) -> bytes:
    """The .wtns (version 2) encoding of a full assignment."""
    for i, x in enumerate(witness):
        if not isinstance(x, int) or isinstance(x, bool) or not 0 <= x < R:
            raise ValueError(f"witness[{i}] must be an int in [0, r), got {x!r}")
    header = struct.pack("<I", N8_R) + R.to_bytes(N8_R, "little") + struct.pack("<I", len(witness))
    values = b"".join(x.to_bytes(N8_R, "little") for x in witness)
    sections = b"".join(
        struct.pack("<IQ", kind, len(body)) + body
        for kind, body in ((HEADER, header), (VALUES, values))
    )
    return MAGIC + struct.pack("<II", 2, 2) + sections


def write_wtns(path: str | Path, witness: Sequence[int]) -> None:
    write_atomic(path, wtns_bytes(witness))
