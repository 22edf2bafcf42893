"""The split MSM and the streamed chunks on the GPU: proofs byte-equal to the reference
prover's for 0/1-heavy witnesses over sparse queries (hypothesis: bit_circuits), the split
against the reference MSM, and dry run == traced."""

from __future__ import annotations

import random

import pytest
from bit_circuits import bit_circuits
from hypothesis import given
from hypothesis import strategies as st

pytestmark = pytest.mark.gpu

R_ORDER = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001

FLAG_SETS = [
    {"split_msm": True},
    {"split_msm": True, "msm_chunk": 5},
    {"key_pinned": True, "overlap_uploads": True, "msm_chunk": 4},
    {"key_pinned": True, "overlap_uploads": True, "msm_chunk": 3, "split_msm": True},
    {"key_pinned": True, "overlap_uploads": True, "msm_chunk": 7, "split_msm": True,
     "pinned": True, "allocator": "sync"},
    # a budget far above these circuits' bytes: the deepest ring, 8 slots, wrapped round
    {"key_pinned": True, "overlap_uploads": True, "msm_chunk": 2, "split_msm": True,
     "vram_budget_bytes": 1 << 30},
]  # fmt: skip


def _setup(r1cs, seed: int, reduction: str = "bellman"):
    from cuzk_sim.reference.setup import setup

    return setup(r1cs, rng=random.Random(seed), reduction=reduction)


@given(
    circuit=bit_circuits(),
    flags_kw=st.sampled_from(FLAG_SETS),
    reduction=st.sampled_from(["bellman", "snarkjs"]),
    rs=st.tuples(st.integers(1, R_ORDER - 1), st.integers(1, R_ORDER - 1)),
)
def test_a_bit_heavy_proof_equals_the_reference(circuit, flags_kw, reduction, rs):
    from cuzk_sim.gpu.flags import ProverFlags
    from cuzk_sim.gpu.prover import PartitionShape, prove
    from cuzk_sim.reference.prove import prove as ref_prove
    from cuzk_sim.reference.serialize import proof_to_bytes

    r1cs, w = circuit
    pk = _setup(r1cs, 7, reduction)
    shape = PartitionShape.of_key(pk, compact=True)
    assert shape.b_count is not None and shape.b_count < pk.num_vars  # sparse B query
    got = prove(pk, w, *rs, flags=ProverFlags(**flags_kw))
    assert proof_to_bytes(got) == proof_to_bytes(ref_prove(pk, w, *rs))


@pytest.mark.parametrize("flags_kw", FLAG_SETS)
def test_dry_run_plan_equals_traced_plan_with_split_and_streaming(flags_kw):
    from cuzk_sim.gpu.flags import ProverFlags
    from cuzk_sim.gpu.prover import PartitionShape, dry_run_plan, prove_partition
    from cuzk_sim.reference.circuits_sha256 import Sha256Builder

    cs = Sha256Builder()
    cs.public(3)
    bits = [cs.bit(v) for v in (1, 0, 1, 1, 0, 0, 1)]
    for x, y in zip(bits, bits[1:], strict=False):
        cs.xor(x, y)
    cs.mul(cs.private(123456789), bits[0].lc + 1, "field")
    r1cs, w = cs.build()
    pk = _setup(r1cs, 3)
    flags = ProverFlags(**flags_kw)
    _, dev = prove_partition(pk, w, 5, 6, flags=flags, mode="traced")
    planned = dry_run_plan(PartitionShape.of_key(pk, compact=True), flags)
    assert dev.plan("traced").steps == planned.steps


@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize(("n", "zeros", "ones"), [(1, 0, 1), (700, 0.5, 0.5), (3000, 0.3, 0.6)])
def test_the_split_msm_equals_the_reference_msm(group, n, zeros, ones):
    import cupy as cp
    import numpy as np
    import py_ecc.optimized_bls12_381 as bls
    from cuzk_sim.gpu import encoding
    from cuzk_sim.gpu.device import Device
    from cuzk_sim.gpu.msm_split import msm_split
    from cuzk_sim.gpu.witness_data import shaped_scalars

    rng = np.random.default_rng(n)
    scal = shaped_scalars(rng, n, zeros, ones)
    ints = encoding.limbs_to_ints(scal)
    gen = bls.G1 if group == "g1" else bls.G2
    base = [bls.multiply(gen, int(k)) for k in rng.integers(1, 2**20, size=min(n, 64))]
    pts = [base[i % len(base)] for i in range(n)]
    limbs = encoding.g1_to_limbs(pts) if group == "g1" else encoding.g2_to_limbs(pts)
    dev = Device("real")
    d_p = dev.alloc("p", limbs.nbytes)
    d_s = dev.alloc("s", scal.nbytes)
    d_p.array[:] = cp.asarray(limbs.reshape(-1))
    d_s.array[:] = cp.asarray(scal.reshape(-1))
    parts = msm_split(dev, "t", group, d_p, d_s, n, 0, (0, 0, n))
    acc = bls.Z1 if group == "g1" else bls.Z2
    dec = encoding.g1_from_limbs if group == "g1" else encoding.g2_from_limbs
    for p in parts:
        acc = bls.add(acc, dec(p.point()))
    # the oracle: point j repeats at i = j mod 64, so the sum is sum_j (sum of its scalars) P_j
    want = bls.Z1 if group == "g1" else bls.Z2
    for j, p in enumerate(base):
        want = bls.add(want, bls.multiply(p, sum(ints[j :: len(base)]) % R_ORDER))
    assert bls.eq(acc, want)
