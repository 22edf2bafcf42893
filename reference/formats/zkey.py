"""snarkjs's Groth16 proving key (.zkey) -> our ProvingKey with reduction "snarkjs".

Sections (u32/u64 little-endian; points as in `curves`):
  1 protocol id (1 = Groth16)
  2 n8q, q, n8r, r, nVars, nPublic, domainSize, [alpha]_1, [beta]_1, [beta]_2, [gamma]_2,
    [delta]_1, [delta]_2
  3 IC: nPublic + 1 G1 points          4 coefficients: u32 count, then (u32 matrix 0=A/1=B,
  5 A: nVars G1                          u32 constraint, u32 signal, 32-byte v·R^2 mod r)
  6 B1: nVars G1   7 B2: nVars G2      8 C (our l_query): nVars - nPublic - 1 G1
  9 H: domainSize G1 (odd Lagrange points of the 2n domain, over delta)
  10 the MPC contributions (not needed to prove; ignored)
The coefficient section holds A and B only, with snarkjs's input rows `1·x_i` (i = 0..l)
appended to A after the circuit's constraints; the prover takes c_k = a_k·b_k.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..field import Q, R
from ..types import ProvingKey, VerifyingKey
from .binfile import BinFile, SectionReader, read_binfile
from .curves import (
    G1_BYTES,
    G2_BYTES,
    KNOWN_BASE_FIELDS,
    KNOWN_SCALAR_FIELDS,
    N8_Q,
    N8_R,
    check_prime,
    read_g1,
    read_g2,
)
from .errors import FormatError, at_byte

MAGIC = b"zkey"
PROTOCOL, GROTH_HEADER, IC, COEFFS, POINTS_A, POINTS_B1, POINTS_B2, POINTS_C, POINTS_H = range(
    1, 10
)
PROTOCOLS = {1: "groth16", 2: "plonk", 10: "fflonk"}
COEFF_BYTES = 12 + N8_R
MAX_LOG_DOMAIN = 28  # snarkjs's own ceiling for bls12-381 powers of tau
R2_INV = pow(pow(2, 2 * 8 * N8_R, R), -1, R)  # (2^256)^-2 mod r: undo v·R^2


@dataclass(frozen=True)
class ZkeyHeader:
    num_vars: int
    num_public: int
    domain_size: int
    alpha_g1: Any
    beta_g1: Any
    beta_g2: Any
    gamma_g2: Any
    delta_g1: Any
    delta_g2: Any


def _read_protocol(f: BinFile) -> None:
    s = f.section(PROTOCOL, "protocol")
    at = s.pos
    protocol = s.u32("protocol id")
    s.expect_end()
    if protocol != 1:
        name = PROTOCOLS.get(protocol, f"id {protocol}")
        raise FormatError(f.path, at_byte(at), f"protocol {name} not supported (only groth16)")


def _read_header(f: BinFile) -> ZkeyHeader:
    s = f.section(GROTH_HEADER, "groth16 header")
    at = s.pos
    n8q = s.u32("n8q")
    if n8q != N8_Q:
        if 0 < n8q <= 64:
            check_prime(f.path, at_byte(at), s.uint(n8q, "q"), KNOWN_BASE_FIELDS, Q, "q")
        raise FormatError(f.path, at_byte(at), f"n8q = {n8q}, expected {N8_Q}")
    check_prime(f.path, at_byte(s.pos), s.uint(N8_Q, "q"), KNOWN_BASE_FIELDS, Q, "q")
    at = s.pos
    n8r = s.u32("n8r")
    if n8r != N8_R:
        raise FormatError(f.path, at_byte(at), f"n8r = {n8r}, expected {N8_R}")
    check_prime(f.path, at_byte(s.pos), s.uint(N8_R, "r"), KNOWN_SCALAR_FIELDS, R, "r")
    at = s.pos
    num_vars, num_public, domain_size = s.u32("nVars"), s.u32("nPublic"), s.u32("domainSize")
    if num_vars < num_public + 1:
        raise FormatError(
            f.path, at_byte(at), f"nVars = {num_vars} < nPublic + 1 = {num_public + 1}"
        )
    if domain_size < 1 or domain_size & (domain_size - 1) or domain_size > 1 << MAX_LOG_DOMAIN:
        raise FormatError(
            f.path,
            at_byte(at + 8),
            f"domainSize = {domain_size} is not a power of two <= 2^{MAX_LOG_DOMAIN}",
        )
    header = ZkeyHeader(
        num_vars=num_vars,
        num_public=num_public,
        domain_size=domain_size,
        alpha_g1=read_g1(s, "[alpha]_1", subgroup=True),
        beta_g1=read_g1(s, "[beta]_1", subgroup=True),
        beta_g2=read_g2(s, "[beta]_2", subgroup=True),
        gamma_g2=read_g2(s, "[gamma]_2", subgroup=True),
        delta_g1=read_g1(s, "[delta]_1", subgroup=True),
        delta_g2=read_g2(s, "[delta]_2", subgroup=True),
    )
    s.expect_end()
    return header


def _points(
    f: BinFile, kind: int, what: str, count: int, g2: bool = False, subgroup: bool = False
) -> tuple[Any, ...]:
    s = f.section(kind, what)
    size = G2_BYTES if g2 else G1_BYTES
    if s.remaining != count * size:
        raise s.error(f"expected {count} points ({count * size} bytes), section has {s.remaining}")
    read = read_g2 if g2 else read_g1
    return tuple(read(s, f"{what}[{i}]", subgroup) for i in range(count))


def _read_coefficients(f: BinFile, header: ZkeyHeader) -> tuple[tuple, tuple]:
    s: SectionReader = f.section(COEFFS, "coefficients")
    count = s.u32("coefficient count")
    if s.remaining != count * COEFF_BYTES:
        raise s.error(
            f"coefficient count {count} needs {count * COEFF_BYTES} bytes, "
            f"section has {s.remaining}"
        )
    rows: tuple[dict[int, list], dict[int, list]] = ({}, {})
    for i in range(count):
        at = s.pos
        matrix, constraint, signal = s.u32("matrix"), s.u32("constraint"), s.u32("signal")
        stored = s.uint(N8_R, "value")
        if matrix > 1:
            raise s.error(f"coefficient {i}: matrix {matrix} is not 0 (A) or 1 (B)", at)
        if constraint >= header.domain_size:
            raise s.error(
                f"coefficient {i}: constraint {constraint} >= domainSize {header.domain_size}", at
            )
        if signal >= header.num_vars:
            raise s.error(f"coefficient {i}: signal {signal} >= nVars {header.num_vars}", at)
        if stored >= R:
            raise s.error(f"coefficient {i}: value {stored} >= r", at + 12)
        rows[matrix].setdefault(constraint, []).append((signal, stored * R2_INV % R))
    num_rows = 1 + max((k for m in rows for k in m), default=-1)
    A, B = (tuple(tuple(m.get(k, ())) for k in range(num_rows)) for m in rows)
    return A, B


def read_zkey(path: str | Path, subgroup_checks: bool = False) -> ProvingKey:
    """Parse a snarkjs Groth16 .zkey for BLS12-381 into a ProvingKey ("snarkjs" reduction).

    Every point is checked to be on its curve; the key's own points (alpha, beta, gamma,
    delta, IC) also to be in the order-r subgroup. `subgroup_checks` extends that to the
    query vectors (slow in pure Python: one 255-bit scalar multiplication per point).
    """
    f = read_binfile(path, MAGIC, max_version=2)
    _read_protocol(f)
    h = _read_header(f)
    n, m, l = h.domain_size, h.num_vars, h.num_public
    ic = _points(f, IC, "IC", l + 1, subgroup=True)
    A, B = _read_coefficients(f, h)
    vk = VerifyingKey(
        alpha_g1=h.alpha_g1,
        beta_g2=h.beta_g2,
        gamma_g2=h.gamma_g2,
        delta_g2=h.delta_g2,
        ic=ic,
        beta_g1=h.beta_g1,
        delta_g1=h.delta_g1,
    )
    return ProvingKey(
        vk=vk,
        alpha_g1=h.alpha_g1,
        beta_g1=h.beta_g1,
        beta_g2=h.beta_g2,
        delta_g1=h.delta_g1,
        delta_g2=h.delta_g2,
        a_query=_points(f, POINTS_A, "A", m, subgroup=subgroup_checks),
        b_g1_query=_points(f, POINTS_B1, "B1", m, subgroup=subgroup_checks),
        b_g2_query=_points(f, POINTS_B2, "B2", m, g2=True, subgroup=subgroup_checks),
        h_query=_points(f, POINTS_H, "H", n, subgroup=subgroup_checks),
        l_query=_points(f, POINTS_C, "C", m - l - 1, subgroup=subgroup_checks),
        domain_size=n,
        reduction="snarkjs",
        num_public=l,
        num_vars=m,
        A=A,
        B=B,
        C=None,
    )
