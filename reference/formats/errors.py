"""The one error type every reader in this package raises for a bad file.

A reader never lets a struct.error, IndexError, MemoryError or KeyError escape: whatever
is wrong with the bytes (magic, version, field, count, truncation) becomes a FormatError
that names the file and where in it the problem is (a byte offset for binary files, a
field path such as `pi_b[0][1]` for JSON), so a user can find it with a hex dump.
"""

from __future__ import annotations

from pathlib import Path


class FormatError(ValueError):
    """A file that is not a valid circom/snarkjs file of the expected kind."""

    def __init__(self, path: str | Path, where: str, message: str) -> None:
        self.path, self.where, self.message = str(path), where, message
        super().__init__(f"{self.path}: {where}: {message}")


class PointNotOnCurve(FormatError):
    """Well-formed coordinates that are not a point of the curve (or of its order-r
    subgroup): in a proof, snarkjs calls that an invalid proof, not a malformed file."""


class UnsupportedCurve(FormatError):
    """A well-formed file for a curve other than BLS12-381 (e.g. bn128)."""


def at_byte(offset: int) -> str:
    """The `where` of a binary file: a byte offset from the start of the file."""
    return f"byte {offset}"
