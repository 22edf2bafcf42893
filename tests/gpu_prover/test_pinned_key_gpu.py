"""ProverFlags.key_pinned on the GPU: the key pinned once per key, its uploads without a
staging copy, proofs byte-equal to the reference, the traced plan equal to the dry run."""

from __future__ import annotations

import numpy as np
import pytest
from cuzk_sim.reference.field import R
from random_circuits import random_circuit

pytestmark = pytest.mark.gpu


def test_pinned_arrays_are_recognised_and_pageable_ones_are_not():
    import cupyx
    from cuzk_sim.gpu.device import host_is_pinned

    pinned = cupyx.empty_pinned((64, 24), np.uint32)
    assert host_is_pinned(pinned) and host_is_pinned(pinned[3:9])
    assert host_is_pinned(np.ascontiguousarray(pinned[5:]).view(np.uint32).reshape(-1))
    assert not host_is_pinned(np.zeros((64, 24), np.uint32))
    assert not host_is_pinned(np.zeros((64, 24), np.uint32)[3:9])


def test_an_upload_from_pinned_memory_is_not_staged_and_arrives(monkeypatch):
    import cupy
    import cupyx
    from cuzk_sim.gpu.device import Device

    dev = Device("real")
    src = cupyx.empty_pinned((1000, 8), np.uint32)
    src[...] = np.arange(8000, dtype=np.uint32).reshape(1000, 8)
    staged = []
    real_alloc = cupy.cuda.alloc_pinned_memory
    monkeypatch.setattr(
        cupy.cuda, "alloc_pinned_memory", lambda n: staged.append(n) or real_alloc(n)
    )
    buf = dev.alloc("d", 4 * 8000)
    dev.copy_htod("up", buf, src, 4 * 8000, pinned=True)
    assert staged == []
    assert (buf.array.get() == np.arange(8000, dtype=np.uint32)).all()
    pageable = np.arange(8000, dtype=np.uint32)[::-1].copy()
    dev.copy_htod("up2", buf, pageable, 4 * 8000, pinned=True)
    assert staged == [4 * 8000]  # pageable and asked pinned: staged through pinned memory
    assert (buf.array.get() == pageable).all()
    dev.free("d")


def test_the_key_is_pinned_once_per_key():
    from cuzk_sim.gpu.device import host_is_pinned
    from cuzk_sim.gpu.prover import host_key

    pk, _, _ = random_circuit(11, "bellman")
    key = host_key(pk, pinned=True)
    assert host_key(pk, pinned=True) is key  # cached: not pinned again per partition
    plain = host_key(pk)
    assert plain is not key and all(not host_is_pinned(v) for v in plain.points.values())
    for stage, arr in key.points.items():
        assert host_is_pinned(arr)
        assert (arr == plain.points[stage]).all()


@pytest.mark.parametrize("overlap", [False, True])
@pytest.mark.parametrize("reduction", ["bellman", "snarkjs"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_proof_with_the_pinned_key_equals_the_reference(reduction, seed, overlap):
    from cuzk_sim.gpu.flags import ProverFlags
    from cuzk_sim.gpu.prover import prove
    from cuzk_sim.reference.prove import prove as ref_prove
    from cuzk_sim.reference.serialize import proof_to_bytes
    from cuzk_sim.reference.verify import verify

    pk, w, rng = random_circuit(seed, reduction)
    r, s = rng.randrange(R), rng.randrange(R)
    flags = ProverFlags(key_pinned=True, overlap_uploads=overlap)
    first = prove(pk, w, r, s, flags=flags)
    again = prove(pk, w, r, s, flags=flags)  # the second partition reuses the pinned key
    want = proof_to_bytes(ref_prove(pk, w, r, s))
    assert proof_to_bytes(first) == want and proof_to_bytes(again) == want
    assert verify(pk.vk, w[1 : pk.num_public + 1], first)


@pytest.mark.parametrize(
    "flags_kw",
    [
        {"key_pinned": True},
        {"key_pinned": True, "prestage": True, "pinned": True},
        {"key_pinned": True, "msm_chunk": 3, "allocator": "sync"},
        {"key_pinned": True, "overlap_uploads": True},
        {"key_pinned": True, "overlap_uploads": True, "prestage": True, "pinned": True},
    ],
)
def test_dry_run_plan_equals_traced_plan_with_the_pinned_key(flags_kw):
    from cuzk_sim.gpu.flags import ProverFlags
    from cuzk_sim.gpu.prover import PartitionShape, dry_run_plan, prove_partition
    from cuzk_sim.reference.prove import prove as ref_prove
    from cuzk_sim.reference.serialize import proof_to_bytes

    flags = ProverFlags(**flags_kw)
    pk, w, _ = random_circuit(3, "bellman")
    proof, dev = prove_partition(pk, w, 5, 6, flags=flags, mode="traced")
    planned = dry_run_plan(PartitionShape.of_key(pk, compact=True), flags)
    assert dev.plan("traced").steps == planned.steps
    assert any(s.op == "copy" and s.pinned for s in planned.steps)
    assert proof_to_bytes(proof) == proof_to_bytes(ref_prove(pk, w, 5, 6))
