"""The iden3 binary container shared by .r1cs, .wtns and .zkey.

Layout: 4-byte magic, u32 version, u32 section count, then sections, each a u32 type,
a u64 byte size and that many bytes; all integers little-endian. Every size is checked
against the bytes actually present before any list is built from a count, so a hostile
header ("10^12 constraints") costs nothing but an error.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from .errors import FormatError, at_byte
from .files import read_limited

HEADER_BYTES = 12  # magic, version, section count
SECTION_HEADER_BYTES = 12  # type, size
MAX_FILE_BYTES = 4 << 30  # 4 GiB: far beyond what the reference prover can use in memory


@dataclass(frozen=True)
class Section:
    kind: int  # the section type id
    start: int  # offset of its first content byte in the file
    size: int  # content bytes


@dataclass(frozen=True)
class BinFile:
    path: str
    data: bytes
    version: int
    sections: dict[int, tuple[Section, ...]]

    def section(self, kind: int, what: str) -> SectionReader:
        """A reader over the only section of this type; missing or repeated is an error."""
        found = self.sections.get(kind, ())
        if not found:
            raise FormatError(self.path, "section table", f"missing section {kind} ({what})")
        if len(found) > 1:
            raise FormatError(
                self.path, at_byte(found[1].start), f"section {kind} ({what}) appears twice"
            )
        return SectionReader(self.path, self.data, found[0], what)

    def has(self, kind: int) -> bool:
        return kind in self.sections


class SectionReader:
    """A cursor over one section: every read is bounds-checked against the section."""

    def __init__(self, path: str, data: bytes, section: Section, what: str) -> None:
        self.path, self.data, self.what = path, data, what
        self.start, self.end = section.start, section.start + section.size
        self.pos = section.start

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def error(self, message: str, offset: int | None = None) -> FormatError:
        where = at_byte(self.pos if offset is None else offset)
        return FormatError(self.path, where, f"{self.what}: {message}")

    def take(self, n: int, field: str) -> bytes:
        if n < 0 or n > self.remaining:
            raise self.error(
                f"{field} needs {n} bytes but the section has {self.remaining} left "
                f"(truncated or corrupt)"
            )
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def u32(self, field: str) -> int:
        return int(struct.unpack("<I", self.take(4, field))[0])

    def u64(self, field: str) -> int:
        return int(struct.unpack("<Q", self.take(8, field))[0])

    def uint(self, n8: int, field: str) -> int:
        """An n8-byte little-endian unsigned integer."""
        return int.from_bytes(self.take(n8, field), "little")

    def expect_room(self, count: int, item_bytes: int, field: str) -> None:
        """Fail before allocating when `count` items of `item_bytes` cannot fit."""
        if count * item_bytes > self.remaining:
            raise self.error(
                f"{field} = {count} needs at least {count * item_bytes} bytes but the "
                f"section has {self.remaining} left"
            )

    def expect_end(self) -> None:
        if self.pos != self.end:
            raise self.error(
                f"{self.remaining} unexpected trailing bytes at the end of the section"
            )


def read_binfile(path: str | Path, magic: bytes, max_version: int) -> BinFile:
    """Read and index an iden3 binary file; sections may appear in any order."""
    path = str(path)
    try:
        data = read_limited(path, MAX_FILE_BYTES)
    except OSError as e:
        raise FormatError(path, "open", f"cannot read file: {e.strerror or e}") from None
    if len(data) < HEADER_BYTES:
        raise FormatError(path, at_byte(len(data)), f"file of {len(data)} bytes is too short")
    if data[:4] != magic:
        raise FormatError(
            path, at_byte(0), f"bad magic {data[:4]!r}, expected {magic!r} (wrong file type?)"
        )
    version, count = struct.unpack_from("<II", data, 4)
    if not 1 <= version <= max_version:
        raise FormatError(
            path, at_byte(4), f"version {version} not supported (expected 1..{max_version})"
        )
    if count * SECTION_HEADER_BYTES > len(data) - HEADER_BYTES:
        raise FormatError(
            path, at_byte(8), f"section count {count} cannot fit in a file of {len(data)} bytes"
        )
    sections: dict[int, list[Section]] = {}
    pos = HEADER_BYTES
    for _ in range(count):
        if pos + SECTION_HEADER_BYTES > len(data):
            raise FormatError(path, at_byte(pos), "truncated section header")
        kind, size = struct.unpack_from("<IQ", data, pos)
        start = pos + SECTION_HEADER_BYTES
        if size > len(data) - start:
            raise FormatError(
                path,
                at_byte(pos + 4),
                f"section {kind} claims {size} bytes but only {len(data) - start} remain",
            )
        sections.setdefault(kind, []).append(Section(kind, start, size))
        pos = start + size
    if pos != len(data):
        raise FormatError(path, at_byte(pos), f"{len(data) - pos} bytes after the last section")
    return BinFile(path, data, version, {k: tuple(v) for k, v in sections.items()})
