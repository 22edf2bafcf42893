"""The readers on small files built byte by byte here (no node needed).

Expected values are the ones written into the bytes by hand; every defect must come back
as FormatError (or UnsupportedCurve) naming the file and the byte offset or JSON field.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import py_ecc.optimized_bls12_381 as bls
import pytest
from cuzk_sim.reference.formats import (
    FormatError,
    UnsupportedCurve,
    read_proof,
    read_public,
    read_r1cs,
    read_verification_key,
    read_wtns,
    read_zkey,
    write_wtns,
)

R = bls.curve_order
Q = bls.field_modulus
BN128_R = 21888242871839275222246405745257275088548364400416034343698204186575808495617
BN128_Q = 21888242871839275222246405745257275088696311157297823662689037894645226208583


def container(magic: bytes, version: int, sections: list[tuple[int, bytes]]) -> bytes:
    body = b"".join(struct.pack("<IQ", kind, len(data)) + data for kind, data in sections)
    return magic + struct.pack("<II", version, len(sections)) + body


def fe(x: int) -> bytes:
    return x.to_bytes(32, "little")


def lc(*terms: tuple[int, int]) -> bytes:
    return struct.pack("<I", len(terms)) + b"".join(struct.pack("<I", w) + fe(c) for w, c in terms)


def r1cs_header(prime: int = R, wires: int = 3, n_constraints: int = 1) -> bytes:
    # n8, prime, nWires, nPubOut, nPubIn, nPrvIn, nLabels (u64), nConstraints
    return (
        struct.pack("<I", 32) + fe(prime) + struct.pack("<IIIIQI", wires, 1, 0, 1, 3, n_constraints)
    )


def square_r1cs(prime: int = R, constraints: bytes | None = None, **header) -> bytes:  # noqa: ANN003
    """x·x = y with wires [1, y (public output), x (private input)]."""
    if constraints is None:
        constraints = lc((2, 1)) + lc((2, 1)) + lc((1, 1))
    labels = struct.pack("<QQQ", 0, 1, 2)
    return container(b"r1cs", 1, [(1, r1cs_header(prime, **header)), (2, constraints), (3, labels)])


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_r1cs_by_hand(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "sq.r1cs",
        square_r1cs(constraints=lc((2, 3)) + lc((2, 1), (0, 5)) + lc((1, R - 1))),
    )
    got = read_r1cs(path)
    assert got.r1cs.num_public == 1 and got.r1cs.num_vars == 3
    assert got.r1cs.A == (((2, 3),),) and got.r1cs.B == (((2, 1), (0, 5)),)
    assert got.r1cs.C == (((1, R - 1),),)
    assert got.wire_labels == (0, 1, 2)
    assert (got.header.num_outputs, got.header.num_private_inputs) == (1, 1)


def test_section_order_does_not_matter(tmp_path: Path) -> None:
    constraints = lc((2, 1)) + lc((2, 1)) + lc((1, 1))
    data = container(b"r1cs", 1, [(2, constraints), (1, r1cs_header())])
    assert read_r1cs(write(tmp_path, "swapped.r1cs", data)).r1cs.A == (((2, 1),),)


@pytest.mark.parametrize(
    ("data", "where", "message"),
    [
        (b"r1cz" + square_r1cs()[4:], "byte 0", "bad magic"),
        (square_r1cs()[:4] + struct.pack("<I", 2) + square_r1cs()[8:], "byte 4", "version 2"),
        (square_r1cs()[:7], "byte 7", "too short"),
        (square_r1cs()[:-5], "byte", "claims"),  # last section truncated
        (square_r1cs() + b"\0", "byte", "after the last section"),
        (square_r1cs(n_constraints=2**32 - 1), "byte", "nConstraints = 4294967295"),
        (square_r1cs(constraints=lc((3, 1)) + lc() + lc()), "byte", "wire 3 >= nWires"),
        (square_r1cs(constraints=lc((1, R)) + lc() + lc()), "byte", ">= r"),
        (square_r1cs(constraints=struct.pack("<I", 10**9) + lc() + lc()), "byte", "term count"),
        (square_r1cs(wires=2), "byte", "nWires = 2 < 1 + outputs + inputs = 3"),
        (container(b"r1cs", 1, [(2, b"")]), "section table", "missing section 1"),
    ],
    ids=[
        "magic",
        "version",
        "short",
        "truncated",
        "trailing",
        "huge-count",
        "wire",
        "coeff",
        "huge-terms",
        "wires",
        "no-header",
    ],  # fmt: skip
)
def test_r1cs_defects(tmp_path: Path, data: bytes, where: str, message: str) -> None:
    path = write(tmp_path, "bad.r1cs", data)
    with pytest.raises(FormatError) as e:
        read_r1cs(path)
    assert str(path) in str(e.value) and where in e.value.where and message in str(e.value)


def test_bn128_files_name_the_curve(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedCurve, match="curve bn128 not supported"):
        read_r1cs(write(tmp_path, "bn.r1cs", square_r1cs(prime=BN128_R)))
    header = struct.pack("<I", 32) + fe(BN128_R) + struct.pack("<I", 1)
    wtns = container(b"wtns", 2, [(1, header), (2, fe(1))])
    with pytest.raises(UnsupportedCurve, match="curve bn128 not supported"):
        read_wtns(write(tmp_path, "bn.wtns", wtns))
    groth_header = struct.pack("<I", 32) + fe(BN128_Q) + struct.pack("<I", 32) + fe(BN128_R)
    zkey = container(b"zkey", 1, [(1, struct.pack("<I", 1)), (2, groth_header)])
    with pytest.raises(UnsupportedCurve, match="curve bn128 not supported"):
        read_zkey(write(tmp_path, "bn.zkey", zkey))


def test_zkey_other_protocols_refused(tmp_path: Path) -> None:
    zkey = container(b"zkey", 1, [(1, struct.pack("<I", 2))])
    with pytest.raises(FormatError, match="protocol plonk not supported"):
        read_zkey(write(tmp_path, "plonk.zkey", zkey))


def test_wtns_round_trip_and_defects(tmp_path: Path) -> None:
    w = [1, 5, R - 1, 0, 2**200]
    path = tmp_path / "w.wtns"
    write_wtns(path, w)
    assert read_wtns(path) == w
    raw = path.read_bytes()
    # the layout snarkjs reads: magic, version 2, two sections, header then values
    assert raw[:12] == b"wtns" + struct.pack("<II", 2, 2)
    assert raw[-32:] == fe(2**200)
    with pytest.raises(FormatError, match="nWitness = 5 needs 160 bytes"):
        read_wtns(
            write(
                tmp_path, "short.wtns", container(b"wtns", 2, [(1, raw[24:64]), (2, raw[76:-32])])
            )
        )
    bad_one = container(b"wtns", 2, [(1, raw[24:64]), (2, fe(2) + raw[108:])])
    with pytest.raises(FormatError, match="must be 1"):
        read_wtns(write(tmp_path, "one.wtns", bad_one))
    with pytest.raises(ValueError, match=r"witness\[1\]"):
        write_wtns(tmp_path / "x.wtns", [1, R])


def g1(P) -> list[str]:  # noqa: ANN001
    x, y = bls.normalize(P)
    return [str(int(x)), str(int(y)), "1"]


def g2(P) -> list[list[str]]:  # noqa: ANN001
    x, y = bls.normalize(P)
    return [[str(int(c)) for c in x.coeffs], [str(int(c)) for c in y.coeffs], ["1", "0"]]


def test_json_by_hand(tmp_path: Path) -> None:
    A, B, C = bls.multiply(bls.G1, 3), bls.multiply(bls.G2, 5), bls.multiply(bls.G1, 7)
    proof_path = tmp_path / "proof.json"
    proof_path.write_text(json.dumps({"pi_a": g1(A), "pi_b": g2(B), "pi_c": g1(C),
                                      "protocol": "groth16", "curve": "bls12381"}))  # fmt: skip
    proof = read_proof(proof_path)
    assert bls.eq(proof.a, A) and bls.eq(proof.b, B) and bls.eq(proof.c, C)
    # Jacobian input (z != 1), as ffjavascript may hold it: (x z^2, y z^3, z)
    x, y = (int(c) for c in bls.normalize(A))
    z = 12345
    jac = [str(x * z * z % Q), str(y * z**3 % Q), str(z)]
    proof_path.write_text(json.dumps({"pi_a": jac, "pi_b": g2(B), "pi_c": ["0", "1", "0"]}))
    proof = read_proof(proof_path)
    assert bls.eq(proof.a, A) and bls.is_inf(proof.c)
    public = tmp_path / "public.json"
    public.write_text(json.dumps(["0", "17", str(R - 1)]))
    assert read_public(public) == [0, 17, R - 1]


@pytest.mark.parametrize(
    ("doc", "where"),
    [
        ('{"pi_a": ["1", "2", "1"]}', "pi_a"),  # (1, 2) is not on y^2 = x^3 + 4
        ('{"pi_a": ["1", "2"], "curve": "bn128"}', "curve"),
        ('{"pi_a": 5}', "pi_a"),
        ('{"pi_b": []}', "pi_a"),  # missing pi_a
        ("[1, 2", "line 1 column 6"),
        ('{"pi_a": ["-1", "2", "1"]}', "pi_a[0]"),
        (json.dumps({"pi_a": [str(Q), "2", "1"]}), "pi_a[0]"),
        ('{"pi_a": [' + "9" * 5000 + ', "2", "1"]}', "document"),
    ],
    ids=["off-curve", "bn128", "type", "missing", "syntax", "negative", "ge-q", "huge-int"],
)
def test_proof_json_defects(tmp_path: Path, doc: str, where: str) -> None:
    path = tmp_path / "proof.json"
    path.write_text(doc)
    with pytest.raises(FormatError) as e:
        read_proof(path)
    assert e.value.where.startswith(where) and str(path) in str(e.value)


def test_public_json_defects(tmp_path: Path) -> None:
    path = tmp_path / "public.json"
    for doc, where in [(f'["{R}"]', "[0]"), ('{"a": 1}', "document"), ('["1", "x"]', "[1]")]:
        path.write_text(doc)
        with pytest.raises(FormatError) as e:
            read_public(path)
        assert e.value.where == where


def test_verification_key_rejects_points_outside_the_subgroup(tmp_path: Path) -> None:
    """A point on E1 but not in the r-torsion: x = 0 gives y^2 = 4 -> (0, 2) has order 3."""
    assert bls.is_on_curve((bls.FQ(0), bls.FQ(2), bls.FQ(1)), bls.b)
    vk = {
        "protocol": "groth16", "curve": "bls12381", "nPublic": 0,
        "vk_alpha_1": ["0", "2", "1"], "vk_beta_2": g2(bls.G2), "vk_gamma_2": g2(bls.G2),
        "vk_delta_2": g2(bls.G2), "IC": [g1(bls.G1)],
    }  # fmt: skip
    path = tmp_path / "vk.json"
    path.write_text(json.dumps(vk))
    with pytest.raises(FormatError, match="not in the order-r subgroup") as e:
        read_verification_key(path)
    assert e.value.where == "vk_alpha_1"
    vk["vk_alpha_1"], vk["nPublic"] = g1(bls.G1), 3
    path.write_text(json.dumps(vk))
    with pytest.raises(FormatError, match="IC has 1 points") as e:
        read_verification_key(path)
