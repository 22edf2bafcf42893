"""gpu/blinding.py: the assembly split so that its scalar multiplications run beside the
GPU. The oracle is the reference prover's `assemble` (the proof the differential and
snarkjs tests check), fed the same key points, MSM sums and r, s; and py_ecc's multiply
for a tail's scaled point. No GPU."""

from __future__ import annotations

import pickle
import random

import numpy as np
import py_ecc.optimized_bls12_381 as bls
import pytest
from cuzk_sim.gpu.blinding import SCALED, assemble_blinded, blinding, scale_g1, scales
from cuzk_sim.gpu.msm_results import scaled_points
from cuzk_sim.gpu.msm_stages import finish_tail
from cuzk_sim.gpu.prover import HostKey
from cuzk_sim.reference.field import R
from cuzk_sim.reference.prove import assemble


def _g1(k):
    return bls.multiply(bls.G1, k) if k else bls.Z1


def _g2(k):
    return bls.multiply(bls.G2, k) if k else bls.Z2


@pytest.mark.parametrize(
    "seed, zero",
    [(1, None), (2, "msm_a"), (3, "msm_b_g1"), (4, "msm_h"), (5, "msm_b_g2")],
)
def test_blinded_assembly_is_the_reference_proof(seed, zero):
    """Random key points and MSM sums (one of them the point at infinity in the edge
    cases), full-size r and s: the same A, B, C as the reference assembly."""
    rng = random.Random(seed)
    ends = (_g1(rng.randrange(R)), _g1(rng.randrange(R)), _g2(rng.randrange(R)))
    ends += (_g1(rng.randrange(R)), _g2(rng.randrange(R)))
    msm = {st: _g1(rng.randrange(R)) for st in ("msm_h", "msm_a", "msm_b_g1", "msm_l")}
    msm["msm_b_g2"] = _g2(rng.randrange(R))
    if zero:
        msm[zero] = bls.Z2 if zero == "msm_b_g2" else bls.Z1
    r, s = rng.randrange(1, R), rng.randrange(1, R)
    expected = assemble(HostKey({}, *ends), msm, r, s)
    k = scales(r, s)
    scaled = {st: scale_g1(msm[st], k[st]) for st in SCALED}
    got = assemble_blinded(ends, msm, scaled, pickle.loads(pickle.dumps(blinding(ends, r, s))))
    for name in ("a", "b", "c"):
        assert bls.eq(getattr(got, name), getattr(expected, name)), name


def test_scales_are_s_for_a_and_r_for_b1():
    assert scales(3, 4) == {"msm_a": 4, "msm_b_g1": 3}


def test_a_tail_with_a_scalar_returns_the_point_and_its_multiple():
    """finish_tail(sums, k): the limbs as without k, and k P as py_ecc multiplies; chunks
    of one stage add up in scaled_points (k P1 + k P2 = k (P1 + P2)), and a stage whose
    results came back finished is multiplied there."""
    from cuzk_sim.gpu import encoding, msm_tail
    from cuzk_sim.gpu.msm import WindowSums

    rng = random.Random(9)
    c, parts, total = 5, [], 0
    for _ in range(2):
        ks = [rng.randrange(1, 2**20) for _ in range(3)]
        total += sum(kk << (j * c) for j, kk in enumerate(ks))
        words = [
            msm_tail._words_from_point("g1", (int(x.n), int(y.n), 1))
            for x, y in (bls.normalize(bls.multiply(bls.G1, kk)) for kk in ks)
        ]
        parts.append(WindowSums("g1", c, np.concatenate(words)))
    k = rng.randrange(1, R)
    done = [finish_tail(p, k) for p in parts]
    for p, (limbs, scaled) in zip(parts, done, strict=True):
        assert np.array_equal(limbs, finish_tail(p))
        assert bls.eq(scaled, bls.multiply(encoding.g1_from_limbs(limbs), k))
    # msm_a from its scaled chunks; msm_b_g1 came back finished (the unsigned MSM): its
    # sum is multiplied on the host
    b1 = bls.multiply(bls.G1, 777)
    raw = {"msm_a": done, "msm_b_g1": [np.zeros(24, np.uint32)]}
    got = scaled_points(raw, {"msm_a": None, "msm_b_g1": b1}, r=k, s=k)
    assert set(got) == {"msm_a", "msm_b_g1"}
    assert bls.eq(got["msm_a"], bls.multiply(bls.G1, total * k % R))
    assert bls.eq(got["msm_b_g1"], bls.multiply(b1, k))
