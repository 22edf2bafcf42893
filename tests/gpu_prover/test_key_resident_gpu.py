"""ProverFlags.key_resident and overlap_tails on the GPU: proofs byte-equal to the
reference with each flag (the first partition, which uploads the key, and the later ones,
which find it on the device), the key uploaded once per key, the traced plan equal to the
dry run either way, the resident buffers freed on request."""

from __future__ import annotations

import pytest
from random_circuits import random_circuit

pytestmark = pytest.mark.gpu

FLAGS = {
    "key_resident": {"key_resident": True},
    "overlap_tails": {"overlap_tails": True},
    "all": {
        "key_pinned": True,
        "overlap_uploads": True,
        "key_resident": True,
        "overlap_tails": True,
    },
}
KEY_UPLOADS = {f"upload_{s}_points" for s in ("msm_h", "msm_a", "msm_b_g1", "msm_b_g2", "msm_l")}


@pytest.fixture(autouse=True)
def _no_resident_key_left():
    from cuzk_sim.gpu.device import release_resident

    release_resident()
    yield
    release_resident()


@pytest.mark.parametrize("flags_kw", FLAGS.values(), ids=FLAGS.keys())
@pytest.mark.parametrize("reduction", ["bellman", "snarkjs"])
@pytest.mark.parametrize("seed", [1, 2])
def test_proofs_with_the_flag_equal_the_reference_partition_after_partition(
    flags_kw, reduction, seed
):
    from cuzk_sim.gpu.flags import ProverFlags
    from cuzk_sim.gpu.prover import prove
    from cuzk_sim.reference.prove import prove as ref_prove
    from cuzk_sim.reference.serialize import proof_to_bytes

    pk, w, _ = random_circuit(seed, reduction)
    flags = ProverFlags(**flags_kw)
    for r, s in ((5, 6), (11, 12), (2**200 + 3, 2**190 + 7)):  # 2nd and 3rd: key resident
        got = prove(pk, w, r, s, flags=flags)
        assert proof_to_bytes(got) == proof_to_bytes(ref_prove(pk, w, r, s))


def test_the_key_goes_up_once_and_both_partitions_trace_the_dry_run_plan():
    from cuzk_sim.gpu.device import release_resident, resident_bytes
    from cuzk_sim.gpu.flags import ProverFlags
    from cuzk_sim.gpu.prover import PartitionShape, dry_run_plan, prove_partition

    pk, w, _ = random_circuit(4, "bellman", constraints=12)
    flags = ProverFlags(key_resident=True)
    planned = dry_run_plan(PartitionShape.of_key(pk, compact=True), flags)
    _, first = prove_partition(pk, w, 1, 2, flags=flags, mode="traced")
    _, second = prove_partition(pk, w, 3, 4, flags=flags, mode="traced")
    assert first.plan("t").steps == planned.steps == second.plan("t").steps
    assert {name for name, _ in first.timings_ms} >= KEY_UPLOADS
    assert not KEY_UPLOADS & {name for name, _ in second.timings_ms}  # found on the device
    # affine G1 96 B, G2 192 B: h, a, b_g1, l in G1, b_g2 in G2; the A / B queries hold
    # the points of the variables some A / B row enters (a real key: the others are
    # infinity), counted here from the matrices
    m, l, h = pk.num_vars, pk.num_public, len(pk.h_query)
    a = len({v for row in pk.A for v, k in row if k})
    b = len({v for row in pk.B for v, k in row if k})
    key = 96 * (h + a + b + (m - l - 1)) + 192 * b
    assert resident_bytes(0) == key
    assert release_resident() == key and resident_bytes(0) == 0


def test_another_key_replaces_the_resident_one():
    from cuzk_sim.gpu.device import resident_bytes
    from cuzk_sim.gpu.flags import ProverFlags
    from cuzk_sim.gpu.prover import prove
    from cuzk_sim.reference.prove import prove as ref_prove
    from cuzk_sim.reference.serialize import proof_to_bytes

    flags = ProverFlags(key_resident=True)
    one, w1, _ = random_circuit(7, "bellman", constraints=9)
    two, w2, _ = random_circuit(8, "bellman", constraints=9)
    for pk, w in ((one, w1), (two, w2), (one, w1)):
        got = prove(pk, w, 9, 10, flags=flags)
        assert proof_to_bytes(got) == proof_to_bytes(ref_prove(pk, w, 9, 10))
    assert resident_bytes(0) > 0


def test_overlapped_tails_come_back_as_futures_of_the_same_points():
    from concurrent.futures import Future

    import py_ecc.optimized_bls12_381 as bls
    from cuzk_sim.gpu import encoding
    from cuzk_sim.gpu.device import Device
    from cuzk_sim.gpu.flags import ProverFlags
    from cuzk_sim.gpu.msm_results import msm_results, tail_pool
    from cuzk_sim.gpu.prover import PartitionInput, PartitionShape, host_key, partition
    from cuzk_sim.reference.prove import prove_stages
    from cuzk_sim.reference.qap import evaluate_matrices

    pk, w, _ = random_circuit(5, "bellman", constraints=12)
    n = pk.domain_size
    a, b, c = evaluate_matrices(pk.A, pk.B, pk.C, w, n)
    data = PartitionInput(
        encoding.ints_to_limbs(a + b + c, 8).reshape(3, n, 8),
        encoding.ints_to_limbs(list(w), 8),
        host_key(pk).points,
    )
    dev = Device("real")
    with dev.selected():
        raw = partition(
            dev, PartitionShape.of_key(pk), ProverFlags(overlap_tails=True), data, tail_pool()
        )
    assert all(isinstance(v, Future) for parts in raw.values() for v in parts)
    ref = prove_stages(pk, w, 1, 2)
    for stage, point in msm_results(raw).items():
        assert bls.eq(point, getattr(ref, stage)), stage
