"""snarkjs's JSON files: proof.json, public.json, verification_key.json.

Numbers are decimal strings. A G1 point is [x, y, z] and a G2 point [[x0, x1], [y0, y1],
[z0, z1]] (Fq2 as c0 + c1·u) in ffjavascript's Jacobian coordinates: z = 1 for the affine
points snarkjs writes, [0, 1, 0] for infinity. vk_alphabeta_12 = e(alpha, beta) is written
in ffjavascript's Fq12 tower Fq2[v]/(v^3 - (1 + u))[w]/(w^2 - v) and its pairing equals
py_ecc's raised to the power -3 (checked against snarkjs 0.7.6 by the interop tests);
snarkjs's verifier does not read it, and neither does ours.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import py_ecc.optimized_bls12_381 as bls

from ..curve import (
    G1,
    G2,
    from_py_ecc_g1,
    from_py_ecc_g2,
    g1_is_on_curve,
    g2_is_on_curve,
    to_py_ecc_g1,
    to_py_ecc_g2,
)
from ..field import Q, R
from ..types import Proof, VerifyingKey
from .errors import FormatError, PointNotOnCurve, UnsupportedCurve
from .files import MAX_JSON_DEPTH, json_depth_exceeds, read_limited, write_atomic

CURVE = "bls12381"
PROTOCOL = "groth16"
MAX_JSON_BYTES = 64 << 20  # a verification key with a million public inputs is ~300 MB


class _Doc:
    """A parsed JSON document plus the file name, so every error can say where it is."""

    def __init__(self, path: str) -> None:
        self.path = path

    def error(self, where: str, message: str) -> FormatError:
        return FormatError(self.path, where, message)

    def load(self) -> Any:
        try:
            text = read_limited(self.path, MAX_JSON_BYTES).decode("utf-8")
        except OSError as e:
            raise self.error("open", f"cannot read file: {e.strerror or e}") from None
        except UnicodeDecodeError as e:
            raise self.error(f"byte {e.start}", "not UTF-8 text") from None
        if json_depth_exceeds(text):  # before the parser, which recurses in C
            raise self.error("top level", f"not JSON we read: nested deeper than {MAX_JSON_DEPTH}")
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            raise self.error(f"line {e.lineno} column {e.colno}", f"not JSON: {e.msg}") from None
        except ValueError as e:  # e.g. an integer literal beyond Python's digit limit
            raise self.error("document", f"not usable JSON: {e}") from None
        except RecursionError:
            raise self.error("document", "JSON nested too deeply") from None

    def number(self, value: Any, where: str, modulus: int) -> int:
        """A decimal string (or JSON integer) in [0, modulus)."""
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise self.error(where, f"expected a decimal string, got {type(value).__name__}")
        if isinstance(value, str):
            if not value.isascii() or not value.isdigit() or len(value) > 200:
                raise self.error(where, f"expected a decimal string, got {value[:40]!r}")
            value = int(value)
        if not 0 <= value < modulus:
            raise self.error(where, f"{value} is not in [0, {'r' if modulus == R else 'q'})")
        return value

    def array(self, value: Any, where: str, lengths: tuple[int, ...]) -> list[Any]:
        if not isinstance(value, list) or len(value) not in lengths:
            want = " or ".join(str(n) for n in lengths)
            raise self.error(where, f"expected a list of {want} entries, got {value!r:.60}")
        return value

    def member(self, obj: Any, key: str) -> Any:
        if not isinstance(obj, dict):
            raise self.error("document", f"expected a JSON object, got {type(obj).__name__}")
        if key not in obj:
            raise self.error(key, "missing")
        return obj[key]

    def check_tags(self, obj: Any) -> None:
        protocol = obj.get("protocol", PROTOCOL) if isinstance(obj, dict) else PROTOCOL
        if protocol != PROTOCOL:
            raise self.error("protocol", f"protocol {protocol!r} not supported (only groth16)")
        curve = obj.get("curve", CURVE) if isinstance(obj, dict) else CURVE
        if curve != CURVE:
            raise UnsupportedCurve(
                self.path, "curve", f"curve {curve} not supported (only {CURVE})"
            )

    def g1(self, value: Any, where: str, subgroup: bool) -> Any:
        x, y, *z = self.array(value, where, (2, 3))
        X, Y = self.number(x, f"{where}[0]", Q), self.number(y, f"{where}[1]", Q)
        Z = self.number(z[0], f"{where}[2]", Q) if z else 1
        if Z == 0:
            return bls.Z1
        zi = pow(Z, -1, Q)  # Jacobian: x = X/Z^2, y = Y/Z^3
        P = (X * zi * zi % Q, Y * zi * zi * zi % Q)
        if not g1_is_on_curve(P):
            raise PointNotOnCurve(self.path, where, "G1 point is not on the curve y^2 = x^3 + 4")
        if subgroup and not G1.in_subgroup(P):
            raise PointNotOnCurve(self.path, where, "G1 point is not in the order-r subgroup")
        return to_py_ecc_g1(P)

    def fq2(self, value: Any, where: str) -> tuple[int, int]:
        c0, c1 = self.array(value, where, (2,))
        return self.number(c0, f"{where}[0]", Q), self.number(c1, f"{where}[1]", Q)

    def g2(self, value: Any, where: str, subgroup: bool) -> Any:
        coords = self.array(value, where, (2, 3))
        X, Y = self.fq2(coords[0], f"{where}[0]"), self.fq2(coords[1], f"{where}[1]")
        Z = self.fq2(coords[2], f"{where}[2]") if len(coords) == 3 else (1, 0)
        if Z == (0, 0):
            return bls.Z2
        P = from_py_ecc_g2((bls.FQ2(list(X)), bls.FQ2(list(Y)), bls.FQ2(list(Z))))
        # py_ecc is homogeneous (x = X/Z), ffjavascript Jacobian (x = X/Z^2): rescale.
        if Z != (1, 0):
            z = bls.FQ2(list(Z))
            zi = z.inv()
            Xa, Ya = bls.FQ2(list(X)) * zi * zi, bls.FQ2(list(Y)) * zi * zi * zi
            P = (tuple(int(c) for c in Xa.coeffs), tuple(int(c) for c in Ya.coeffs))
        if not g2_is_on_curve(P):
            raise PointNotOnCurve(
                self.path, where, "G2 point is not on the twist y^2 = x^3 + 4(1 + u)"
            )
        if subgroup and not G2.in_subgroup(P):
            raise PointNotOnCurve(self.path, where, "G2 point is not in the order-r subgroup")
        return to_py_ecc_g2(P)


# ---------------------------------------------------------------- encoding


def g1_json(P: Any) -> list[str]:
    affine = from_py_ecc_g1(P)
    if affine is None:
        return ["0", "1", "0"]
    return [str(affine[0]), str(affine[1]), "1"]


def g2_json(P: Any) -> list[list[str]]:
    affine = from_py_ecc_g2(P)
    if affine is None:
        return [["0", "0"], ["1", "0"], ["0", "0"]]
    (x0, x1), (y0, y1) = affine
    return [[str(x0), str(x1)], [str(y0), str(y1)], ["1", "0"]]


def json_text(obj: Any) -> str:
    """The JSON text of a proof / public / vk object as we write it (snarkjs's indent)."""
    return json.dumps(obj, indent=1) + "\n"


def _write(path: str | Path, obj: Any) -> None:
    write_atomic(path, json_text(obj).encode("utf-8"))


# ---------------------------------------------------------------- proof.json


def proof_to_json(proof: Proof) -> dict[str, Any]:
    return {
        "pi_a": g1_json(proof.a),
        "pi_b": g2_json(proof.b),
        "pi_c": g1_json(proof.c),
        "protocol": PROTOCOL,
        "curve": CURVE,
    }


def write_proof(path: str | Path, proof: Proof) -> None:
    _write(path, proof_to_json(proof))


def read_proof(path: str | Path) -> Proof:
    """Points are checked to lie on their curves; the verifier checks the subgroups."""
    doc = _Doc(str(path))
    obj = doc.load()
    doc.check_tags(obj)
    return Proof(
        a=doc.g1(doc.member(obj, "pi_a"), "pi_a", subgroup=False),
        b=doc.g2(doc.member(obj, "pi_b"), "pi_b", subgroup=False),
        c=doc.g1(doc.member(obj, "pi_c"), "pi_c", subgroup=False),
    )


# ---------------------------------------------------------------- public.json


def write_public(path: str | Path, public_inputs: Sequence[int]) -> None:
    _write(path, [str(x) for x in public_inputs])


def read_public(path: str | Path) -> list[int]:
    doc = _Doc(str(path))
    obj = doc.load()
    if not isinstance(obj, list):
        raise doc.error("document", f"expected a list of decimal strings, got {type(obj).__name__}")
    return [doc.number(x, f"[{i}]", R) for i, x in enumerate(obj)]


# ---------------------------------------------------------------- verification_key.json


def _fq12_tower(value: Any) -> list[list[list[str]]]:
    """py_ecc Fq12 (basis w^0..w^11, w^6 = 1 + u) -> ffjavascript's tower coefficients:
    c_{k}.c_{j} = coefficient of v^j w^k = w^(2j+k), an Fq2 (c0, c1) with u = w^6 - 1."""
    c = [int(x) for x in value.coeffs]
    return [
        [[str((c[2 * j + k] + c[2 * j + k + 6]) % Q), str(c[2 * j + k + 6])] for j in range(3)]
        for k in range(2)
    ]


def alphabeta_12(vk: VerifyingKey) -> list[list[list[str]]]:
    """e(alpha, beta) as snarkjs writes it: ffjavascript's pairing is py_ecc's to the -3."""
    e = bls.pairing(vk.beta_g2, vk.alpha_g1)
    cubed = e * e * e
    c = [int(x) for x in cubed.coeffs]
    conjugate = bls.FQ12([(-x if i % 2 else x) % Q for i, x in enumerate(c)])  # = inverse in GT
    return _fq12_tower(conjugate)


def verification_key_to_json(vk: VerifyingKey) -> dict[str, Any]:
    return {
        "protocol": PROTOCOL,
        "curve": CURVE,
        "nPublic": vk.num_public,
        "vk_alpha_1": g1_json(vk.alpha_g1),
        "vk_beta_2": g2_json(vk.beta_g2),
        "vk_gamma_2": g2_json(vk.gamma_g2),
        "vk_delta_2": g2_json(vk.delta_g2),
        "vk_alphabeta_12": alphabeta_12(vk),
        "IC": [g1_json(P) for P in vk.ic],
    }


def write_verification_key(path: str | Path, vk: VerifyingKey) -> None:
    _write(path, verification_key_to_json(vk))


class PublicCountMismatch(FormatError):
    """The key takes a different number of public inputs than the caller has."""

    def __init__(self, path: str, expected: int, got: int) -> None:
        self.expected, self.got = expected, got
        super().__init__(path, "IC", f"the key takes {expected} public inputs, got {got}")


def read_verification_key(path: str | Path, num_public: int | None = None) -> VerifyingKey:
    """All points on their curves and in the order-r subgroup; nPublic must match IC.

    num_public: the public inputs the caller holds; a key for another count is refused
    (PublicCountMismatch) before any point is parsed, so a hostile key with 10,000 IC
    points costs nothing but the JSON parse."""
    doc = _Doc(str(path))
    obj = doc.load()
    doc.check_tags(obj)
    ic_list = doc.member(obj, "IC")
    if not isinstance(ic_list, list) or not ic_list:
        raise doc.error("IC", "expected a non-empty list of G1 points")
    if num_public is not None and len(ic_list) - 1 != num_public:
        raise PublicCountMismatch(doc.path, len(ic_list) - 1, num_public)
    if "nPublic" in obj:
        n_public = obj["nPublic"]
        if not isinstance(n_public, int) or n_public != len(ic_list) - 1:
            raise doc.error(
                "nPublic", f"{n_public!r} but IC has {len(ic_list)} points (nPublic + 1)"
            )
    return VerifyingKey(
        alpha_g1=doc.g1(doc.member(obj, "vk_alpha_1"), "vk_alpha_1", subgroup=True),
        beta_g2=doc.g2(doc.member(obj, "vk_beta_2"), "vk_beta_2", subgroup=True),
        gamma_g2=doc.g2(doc.member(obj, "vk_gamma_2"), "vk_gamma_2", subgroup=True),
        delta_g2=doc.g2(doc.member(obj, "vk_delta_2"), "vk_delta_2", subgroup=True),
        ic=tuple(doc.g1(P, f"IC[{i}]", subgroup=True) for i, P in enumerate(ic_list)),
    )
