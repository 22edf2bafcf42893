"""Witness shapes (gpu/witness_shape.py): the SHA-256 circuit they are measured on, the
figures recounted here by hand, and what a shape does to the partition's MSM sizes."""

from __future__ import annotations

import hashlib
import random

import numpy as np
import pytest
from cuzk_sim.gpu.prover import PartitionShape, query_index
from cuzk_sim.gpu.witness_data import shaped_scalars, shaped_witness
from cuzk_sim.gpu.witness_shape import DENSE, POREP, SHA256, WitnessShape, measure, witness_shape
from cuzk_sim.reference.circuits_sha256 import sha256_chain


def _padded(msg: bytes) -> bytes:
    """FIPS 180-4 padding of a message of at most 55 bytes: one block."""
    return msg + b"\x80" + b"\x00" * (55 - len(msg)) + (8 * len(msg)).to_bytes(8, "big")


def test_the_circuit_computes_sha256_and_is_satisfied():
    msg = b"a witness shape is measured, not assumed"
    r1cs, w, digest = sha256_chain([_padded(msg)])
    assert digest == int(hashlib.sha256(msg).hexdigest(), 16)  # hashlib is the oracle
    assert r1cs.is_satisfied(w)
    assert w[1] == int(hashlib.sha256(msg).hexdigest()[:8], 16)  # the public word
    # bellman's gadgets make ~27 k constraints per compression; ours the same gadgets
    assert 25_000 < r1cs.num_constraints < 29_000


def test_the_sha256_figures_are_the_measurement_recounted():
    rng = random.Random(1)
    r1cs, w, _ = sha256_chain([rng.randbytes(64) for _ in range(4)])
    first = 1 + r1cs.num_public
    aux = w[first:]
    in_a = {v for row in r1cs.A for v, k in row if k and v >= first}
    in_b = {v for row in r1cs.B for v, k in row if k and v >= first}
    # the counts named in gpu/witness_shape.py's comment, counted here
    assert (len(aux), aux.count(0), aux.count(1), len(in_a), len(in_b)) == (
        106_752,
        55_073,
        51_679,
        61_824,
        27_552,
    )
    for got, want in (
        (SHA256.zero_fraction, 55_073 / 106_752),
        (SHA256.one_fraction, 51_679 / 106_752),
        (SHA256.a_density, 61_824 / 106_752),
        (SHA256.b_density, 27_552 / 106_752),
    ):
        assert got == pytest.approx(want, abs=5e-5)
    m = measure("x", r1cs.num_public, r1cs.num_vars, r1cs.A, r1cs.B, w, "test")
    assert m.a_density == len(in_a) / len(aux) and m.bit_fraction == 1.0


def test_porep_is_the_sha256_proxy_and_dense_is_random():
    assert (POREP.a_density, POREP.b_density, POREP.bit_fraction) == (
        SHA256.a_density,
        SHA256.b_density,
        SHA256.bit_fraction,
    )
    assert (DENSE.a_density, DENSE.b_density, DENSE.bit_fraction) == (1.0, 1.0, 0.0)
    assert "proxy" in POREP.source and "measured" in SHA256.source


def test_a_synthetic_shape_sizes_its_queries_by_the_densities():
    shape = PartitionShape.synthetic(20, witness="porep")
    aux = (1 << 20) - 2  # m = n wires, one public, wire 0
    sizes = shape.msm_sizes()
    assert sizes["msm_a"] == ("g1", 2 + round(0.5791 * aux))
    assert sizes["msm_b_g1"] == ("g1", 2 + round(0.2581 * aux))
    assert sizes["msm_b_g2"] == ("g2", 2 + round(0.2581 * aux))
    assert sizes["msm_l"] == ("g1", aux) and sizes["msm_h"] == ("g1", (1 << 20) - 1)
    assert PartitionShape.synthetic(20).msm_sizes()["msm_a"] == ("g1", 1 << 20)


def test_the_split_of_a_shape_adds_up():
    zeros, ones, rest = SHA256.split(1000)
    assert (zeros, ones, rest) == (516, 484, 0)
    assert WitnessShape("t", 1, 1, 0.25, 0.5, "t").split(10) == (2, 5, 3)  # round half even


def test_shaped_scalars_have_the_shares_asked_for():
    s = shaped_scalars(np.random.default_rng(3), 100_000, 0.3, 0.5)
    zero = (s == 0).all(axis=1)
    one = (s[:, 0] == 1) & (s[:, 1:] == 0).all(axis=1)
    assert zero.mean() == pytest.approx(0.3, abs=0.01)
    assert one.mean() == pytest.approx(0.5, abs=0.01)
    assert (s[:, 7] < 0x40000000).all()  # < 2^254 < r


def test_a_shaped_witness_has_wire_0_one_and_the_gathered_scalars():
    shape = PartitionShape.synthetic(10, witness="porep")
    w, scalars = shaped_witness(shape, np.random.default_rng(1))
    assert w.shape == (1024, 8) and w[0, 0] == 1 and not w[0, 1:].any()
    assert scalars["a"].shape == (shape.a_count, 8) and scalars["b"].shape == (shape.b_count, 8)


def test_a_key_density_is_the_variables_its_rows_touch():
    rows = (((0, 1), (3, 5)), ((3, 2),), ((5, 0),))  # a zero coefficient does not count
    assert query_index(rows, 6) == [0, 3]


@pytest.mark.parametrize(
    ("kw", "says"),
    [({"a_density": 1.5}, "a_density"), ({"zero_fraction": 0.7, "one_fraction": 0.5}, "<= 1")],
)
def test_bad_shapes_are_refused_by_name(kw, says):
    base = {"a_density": 1, "b_density": 1, "zero_fraction": 0, "one_fraction": 0}
    with pytest.raises(ValueError, match=says):
        WitnessShape("bad", **{**base, **kw}, source="test")
    with pytest.raises(ValueError, match="unknown witness shape 'nope'"):
        witness_shape("nope")
