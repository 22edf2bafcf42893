"""circom's binary constraint system (.r1cs, version 1) -> our R1CS.

Sections: 1 header (n8, prime, wires, public outputs, public inputs, private inputs,
labels, constraints); 2 constraints, each three linear combinations A, B, C written as
a u32 term count and (u32 wire, n8-byte little-endian coefficient) pairs, coefficients
plain (not Montgomery); 3 wire -> label map (u64 per wire); 4/5 custom gates (circom's
PLONK extension, refused here). circom numbers wires [1, outputs, public inputs, rest],
so our public inputs are the outputs followed by the public inputs, as in snarkjs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..field import R
from ..r1cs import R1CS, Matrix, Row
from .binfile import BinFile, SectionReader, read_binfile
from .curves import KNOWN_SCALAR_FIELDS, N8_R, check_prime
from .errors import FormatError, at_byte

MAGIC = b"r1cs"
HEADER, CONSTRAINTS, WIRE_LABELS, CUSTOM_GATES_LIST, CUSTOM_GATES_USES = 1, 2, 3, 4, 5
TERM_BYTES = 4 + N8_R


@dataclass(frozen=True)
class R1csHeader:
    num_wires: int  # wire 0 (the constant 1) included
    num_outputs: int
    num_public_inputs: int
    num_private_inputs: int
    num_labels: int
    num_constraints: int

    @property
    def num_public(self) -> int:
        """Public wires after wire 0: circom's outputs, then its public inputs."""
        return self.num_outputs + self.num_public_inputs


@dataclass(frozen=True)
class CircomR1cs:
    header: R1csHeader
    r1cs: R1CS
    wire_labels: tuple[int, ...] | None  # label id per wire, when section 3 is present


def _read_header(f: BinFile) -> R1csHeader:
    s = f.section(HEADER, "header")
    where = at_byte(s.pos)
    n8 = s.u32("n8")
    if n8 != N8_R:
        prime = s.uint(n8, "prime") if 0 < n8 <= 64 else None
        if prime is not None:
            check_prime(f.path, where, prime, KNOWN_SCALAR_FIELDS, R, "prime")
        raise FormatError(f.path, where, f"header: field size n8 = {n8}, expected {N8_R}")
    check_prime(f.path, at_byte(s.pos), s.uint(N8_R, "prime"), KNOWN_SCALAR_FIELDS, R, "prime")
    wires_at = s.pos
    header = R1csHeader(
        num_wires=s.u32("nWires"),
        num_outputs=s.u32("nPubOut"),
        num_public_inputs=s.u32("nPubIn"),
        num_private_inputs=s.u32("nPrvIn"),
        num_labels=s.u64("nLabels"),
        num_constraints=s.u32("nConstraints"),
    )
    s.expect_end()
    inputs = 1 + header.num_public + header.num_private_inputs
    if header.num_wires < inputs:
        raise FormatError(
            f.path,
            at_byte(wires_at),
            f"header: nWires = {header.num_wires} < 1 + outputs + inputs = {inputs}",
        )
    return header


def _read_lc(s: SectionReader, header: R1csHeader, field: str) -> Row:
    count = s.u32(f"{field} term count")
    s.expect_room(count, TERM_BYTES, f"{field} term count")
    terms = []
    for _ in range(count):
        at = s.pos
        wire = s.u32(f"{field} wire")
        coeff = s.uint(N8_R, f"{field} coefficient")
        if wire >= header.num_wires:
            raise s.error(f"{field}: wire {wire} >= nWires = {header.num_wires}", at)
        if coeff >= R:
            raise s.error(f"{field}: coefficient {coeff} >= r", at + 4)
        terms.append((wire, coeff))
    return tuple(terms)


def _read_constraints(f: BinFile, header: R1csHeader) -> tuple[Matrix, Matrix, Matrix]:
    s = f.section(CONSTRAINTS, "constraints")
    s.expect_room(header.num_constraints, 3 * 4, "nConstraints")
    A, B, C = [], [], []
    for k in range(header.num_constraints):
        A.append(_read_lc(s, header, f"constraint {k} A"))
        B.append(_read_lc(s, header, f"constraint {k} B"))
        C.append(_read_lc(s, header, f"constraint {k} C"))
    s.expect_end()
    return tuple(A), tuple(B), tuple(C)


def _read_wire_labels(f: BinFile, header: R1csHeader) -> tuple[int, ...] | None:
    if not f.has(WIRE_LABELS):
        return None
    s = f.section(WIRE_LABELS, "wire to label map")
    s.expect_room(header.num_wires, 8, "nWires")
    labels = tuple(s.u64(f"label of wire {i}") for i in range(header.num_wires))
    s.expect_end()
    return labels


def read_r1cs(path: str | Path) -> CircomR1cs:
    """Parse a circom .r1cs file; any defect raises FormatError with file and offset."""
    f = read_binfile(path, MAGIC, max_version=1)
    if f.has(CUSTOM_GATES_LIST) or f.has(CUSTOM_GATES_USES):
        raise FormatError(f.path, "section table", "custom gates (circom PLONK) not supported")
    header = _read_header(f)
    A, B, C = _read_constraints(f, header)
    labels = _read_wire_labels(f, header)
    try:
        r1cs = R1CS(num_public=header.num_public, num_vars=header.num_wires, A=A, B=B, C=C)
    except ValueError as e:  # already checked above; kept so no other error type escapes
        raise FormatError(f.path, "constraints", str(e)) from None
    return CircomR1cs(header=header, r1cs=r1cs, wire_labels=labels)
