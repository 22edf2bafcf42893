"""Our .r1cs / .wtns / .zkey / JSON readers against what snarkjs itself reports.

The oracle is snarkjs 0.7.6 (`r1cs export json`, `wtns export json`, `zkey export json`,
`zkey export verificationkey`, `wtns check`) and py_ecc's curve equation and subgroup
check, never our own code.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import py_ecc.optimized_bls12_381 as bls
import pytest
from cuzk_sim.reference.formats import (
    FormatError,
    UnsupportedCurve,
    read_proof,
    read_r1cs,
    read_verification_key,
    read_wtns,
    read_zkey,
    write_verification_key,
    write_wtns,
)
from cuzk_sim.reference.formats.snarkjs_json import g1_json, g2_json
from snarkjs_toolchain import CircuitFiles, export_json, snarkjs_status

pytestmark = pytest.mark.interop

R = bls.curve_order
# big_domain (2^12: its own powers of tau, setup and proofs) is in the slow tier
BIG_DOMAIN = pytest.param("big_domain", marks=pytest.mark.slowtier)
CIRCUITS = ("no_public", "multi_public", "long_lc", BIG_DOMAIN)


def affine(P) -> list[int]:  # noqa: ANN001
    """py_ecc G1/G2 point -> flat affine ints, the shape snarkjs's JSON has."""
    if bls.is_inf(P):
        return []
    x, y = bls.normalize(P)
    if hasattr(x, "coeffs"):
        return [int(c) for c in (*x.coeffs, *y.coeffs)]
    return [int(x), int(y)]


def snark_affine(obj) -> list[int]:  # noqa: ANN001
    """snarkjs JSON point ([x, y, z] or [[x0, x1], [y0, y1], [z0, z1]]) -> flat ints."""
    if isinstance(obj[0], list):
        if obj[2] == ["0", "0"]:
            return []
        assert obj[2] == ["1", "0"]
        return [int(c) for c in (*obj[0], *obj[1])]
    if obj[2] == "0":
        return []
    assert obj[2] == "1"
    return [int(obj[0]), int(obj[1])]


@pytest.mark.parametrize("name", CIRCUITS)
def test_r1cs_matches_snarkjs_export(name: str, circuit: Callable[[str], CircuitFiles]) -> None:
    files = circuit(name)
    want = export_json("r1cs", files.r1cs, files.directory)
    got = read_r1cs(files.r1cs)
    h = got.header
    assert (h.num_wires, h.num_outputs, h.num_public_inputs, h.num_private_inputs) == (
        want["nVars"],
        want["nOutputs"],
        want["nPubInputs"],
        want["nPrvInputs"],
    )
    assert (h.num_labels, h.num_constraints) == (want["nLabels"], want["nConstraints"])
    assert got.r1cs.num_public == want["nOutputs"] + want["nPubInputs"]
    rows = [
        [{str(wire): str(coeff) for wire, coeff in row} for row in (a, b, c)]
        for a, b, c in zip(got.r1cs.A, got.r1cs.B, got.r1cs.C, strict=True)
    ]
    assert rows == want["constraints"]


@pytest.mark.parametrize("name", CIRCUITS)
def test_witness_matches_snarkjs_export_and_satisfies(
    name: str, circuit: Callable[[str], CircuitFiles]
) -> None:
    files = circuit(name)
    want = export_json("wtns", files.wtns, files.directory)
    w = read_wtns(files.wtns)
    assert [str(x) for x in w] == want
    read_r1cs(files.r1cs).r1cs.check(w)  # circom's witness satisfies circom's constraints


def test_written_witness_is_read_by_snarkjs(circuit: Callable[[str], CircuitFiles]) -> None:
    files = circuit("multi_public")
    w = read_wtns(files.wtns)
    ours = files.path("rewritten.wtns")
    write_wtns(ours, w)
    assert snarkjs_status("wtns", "check", files.r1cs, ours, cwd=files.directory) == 0
    assert export_json("wtns", ours, files.directory) == [str(x) for x in w]
    # and a witness we break is refused by snarkjs, as by `cuzk-sim groth16 check`
    broken = files.path("broken.wtns")
    write_wtns(broken, [*w[:-1], (w[-1] + 1) % R])
    assert snarkjs_status("wtns", "check", files.r1cs, broken, cwd=files.directory) != 0


@pytest.mark.parametrize("name", CIRCUITS)
def test_zkey_matches_snarkjs_export(name: str, circuit: Callable[[str], CircuitFiles]) -> None:
    files = circuit(name)
    want = export_json("zkey", files.zkey, files.directory)
    pk = read_zkey(files.zkey)
    assert (pk.num_vars, pk.num_public, pk.domain_size) == (
        want["nVars"],
        want["nPublic"],
        want["domainSize"],
    )
    assert pk.reduction == "snarkjs" and pk.C is None
    # header points
    for ours, theirs in [
        (pk.alpha_g1, "vk_alpha_1"),
        (pk.beta_g1, "vk_beta_1"),
        (pk.beta_g2, "vk_beta_2"),
        (pk.vk.gamma_g2, "vk_gamma_2"),
        (pk.delta_g1, "vk_delta_1"),
        (pk.delta_g2, "vk_delta_2"),
    ]:
        assert affine(ours) == snark_affine(want[theirs]), theirs
    for vector, key in [
        (pk.vk.ic, "IC"),
        (pk.a_query, "A"),
        (pk.b_g1_query, "B1"),
        (pk.b_g2_query, "B2"),
        (pk.h_query, "hExps"),
    ]:
        assert [affine(P) for P in vector] == [snark_affine(P) for P in want[key]], key
    # C holds the private wires only; snarkjs's export leaves the public slots empty
    assert [affine(P) for P in pk.l_query] == [
        snark_affine(P) for P in want["C"][pk.num_public + 1 :]
    ]
    # coefficients: snarkjs's export has the plain values v (it undoes the v·R^2 storage)
    coeffs = sorted(
        (c["matrix"], c["constraint"], c["signal"], int(c["value"])) for c in want["ccoefs"]
    )
    ours_coeffs = sorted(
        (m, k, wire, v)
        for m, matrix in enumerate((pk.A, pk.B))
        for k, row in enumerate(matrix)
        for wire, v in row
    )
    assert ours_coeffs == coeffs


@pytest.mark.parametrize("name", CIRCUITS)
def test_zkey_matrices_are_the_circuit_plus_input_rows(
    name: str, circuit: Callable[[str], CircuitFiles]
) -> None:
    """A and B of the zkey are circom's A and B, then snarkjs's `1·x_i` row per input."""
    files = circuit(name)
    r1cs = read_r1cs(files.r1cs).r1cs
    pk = read_zkey(files.zkey)
    extra = tuple(((i, 1),) for i in range(r1cs.num_public + 1))
    canon = lambda M: [sorted(row) for row in M]  # noqa: E731
    assert canon(pk.A) == canon(r1cs.A + extra)
    assert canon(pk.B) == canon(r1cs.B + tuple(() for _ in extra))


def test_zkey_points_pass_py_ecc_curve_and_subgroup_checks(
    circuit: Callable[[str], CircuitFiles],
) -> None:
    """The decoding is right if the points land on the curve and in the r-torsion."""
    pk = read_zkey(circuit("multi_public").zkey)
    g1 = [pk.alpha_g1, pk.beta_g1, pk.delta_g1, *pk.vk.ic, pk.a_query[3], pk.h_query[5]]
    g2 = [pk.beta_g2, pk.vk.gamma_g2, pk.delta_g2, pk.b_g2_query[4]]
    for P in g1:
        assert bls.is_on_curve(P, bls.b) and bls.is_inf(bls.multiply(P, R))
    for P in g2:
        assert bls.is_on_curve(P, bls.b2) and bls.is_inf(bls.multiply(P, R))


@pytest.mark.parametrize("name", ["no_public", "multi_public"])
def test_verification_key_json_round_trip(
    name: str, circuit: Callable[[str], CircuitFiles], tmp_path: Path
) -> None:
    files = circuit(name)
    vk = read_verification_key(files.vk_json)
    pk = read_zkey(files.zkey)
    assert (vk.alpha_g1, vk.beta_g2, vk.gamma_g2, vk.delta_g2, vk.ic) == (
        pk.vk.alpha_g1,
        pk.vk.beta_g2,
        pk.vk.gamma_g2,
        pk.vk.delta_g2,
        pk.vk.ic,
    )
    ours = tmp_path / "vk.json"
    write_verification_key(ours, pk.vk)
    # the same document snarkjs wrote, vk_alphabeta_12 (a pairing) included
    assert json.loads(ours.read_text()) == json.loads(files.vk_json.read_text())


def test_proof_json_reads_snarkjs_points(circuit: Callable[[str], CircuitFiles]) -> None:
    files = circuit("multi_public")
    from snarkjs_toolchain import snarkjs

    snarkjs("groth16", "prove", files.zkey, files.wtns, "sj_proof.json", "sj_public.json",
            cwd=files.directory)  # fmt: skip
    raw = json.loads(files.path("sj_proof.json").read_text())
    proof = read_proof(files.path("sj_proof.json"))
    assert g1_json(proof.a) == raw["pi_a"] and g1_json(proof.c) == raw["pi_c"]
    assert g2_json(proof.b) == raw["pi_b"]


def test_real_bn128_files_are_refused_by_name(
    toolchain: None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """circom's default prime and a snarkjs bn128 setup: each file names its curve."""
    from snarkjs_toolchain import CIRCOM2, CIRCUITS, run_node, snarkjs

    d = tmp_path_factory.mktemp("bn128")
    run_node(CIRCOM2, CIRCUITS / "multi_public.circom", "--r1cs", "--wasm", "-o", d, cwd=d)
    snarkjs("powersoftau", "new", "bn128", "4", "p0.ptau", cwd=d)
    snarkjs("powersoftau", "prepare", "phase2", "p0.ptau", "p.ptau", cwd=d)
    snarkjs("groth16", "setup", "multi_public.r1cs", "p.ptau", "c.zkey", cwd=d)
    snarkjs("wtns", "calculate", d / "multi_public_js" / "multi_public.wasm",
            CIRCUITS / "multi_public.input.json", "w.wtns", cwd=d)  # fmt: skip
    for path, reader in [
        (d / "multi_public.r1cs", read_r1cs),
        (d / "w.wtns", read_wtns),
        (d / "c.zkey", read_zkey),
    ]:
        with pytest.raises(UnsupportedCurve, match="curve bn128 not supported") as e:
            reader(path)
        assert str(path) in str(e.value) and e.value.where.startswith("byte ")


def test_zkey_point_outside_the_subgroup_is_refused(
    circuit: Callable[[str], CircuitFiles], tmp_path: Path
) -> None:
    """Put (0, 2), on E1 but of order 3, where [alpha]_1 is; with subgroup_checks the
    same point in the A query is refused too. Offsets from snarkjs's zkey layout."""
    files = circuit("multi_public")
    pk = read_zkey(files.zkey, subgroup_checks=True)  # a genuine key passes every check
    assert pk.num_vars == 10
    data = bytearray(files.zkey.read_bytes())
    q, r_mont = bls.field_modulus, 2**384
    point = (0).to_bytes(48, "little") + (2 * r_mont % q).to_bytes(48, "little")
    starts = section_starts(bytes(data))
    alpha_at = starts[2] + 4 + 48 + 4 + 32 + 12  # n8q, q, n8r, r, nVars/nPublic/domainSize
    bad = bytearray(data)
    bad[alpha_at : alpha_at + 96] = point
    (tmp_path / "alpha.zkey").write_bytes(bytes(bad))
    with pytest.raises(FormatError, match="not in the order-r subgroup") as e:
        read_zkey(tmp_path / "alpha.zkey")
    assert e.value.where == f"byte {alpha_at}"
    bad = bytearray(data)
    bad[starts[5] : starts[5] + 96] = point  # A[0]
    (tmp_path / "a.zkey").write_bytes(bytes(bad))
    read_zkey(tmp_path / "a.zkey")  # on the curve: accepted without the query checks
    with pytest.raises(FormatError, match=r"A\[0\]: point is not in the order-r subgroup"):
        read_zkey(tmp_path / "a.zkey", subgroup_checks=True)


def section_starts(data: bytes) -> dict[int, int]:
    """Section type -> offset of its content, walking the iden3 container here."""
    starts, pos = {}, 12
    for _ in range(int.from_bytes(data[8:12], "little")):
        kind = int.from_bytes(data[pos : pos + 4], "little")
        size = int.from_bytes(data[pos + 4 : pos + 12], "little")
        starts[kind] = pos + 12
        pos += 12 + size
    return starts
