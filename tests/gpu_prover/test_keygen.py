"""Synthetic keys made on the GPU (gpu/keygen.py, kernels/keygen.cu): every stage's points
are k-th multiples s_k G with s_k = key_scalar(seed, k) (py_ecc's multiply: the oracle),
across chunk boundaries, in pinned or pageable host memory. Marker `gpu`."""

from __future__ import annotations

import py_ecc.optimized_bls12_381 as bls
import pytest

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("pinned", [True, False])
def test_points_are_the_scalar_multiples_across_chunks(monkeypatch, pinned):
    from cuzk_sim.gpu import keygen
    from cuzk_sim.gpu.device import host_is_pinned
    from cuzk_sim.gpu.encoding import g1_from_limbs, g2_from_limbs

    monkeypatch.setattr(keygen, "CHUNK_POINTS", 1000)  # 3 chunks of G1, 2 of G2, ragged
    sizes = {"msm_a": ("g1", 2501), "msm_b_g2": ("g2", 1003)}
    seen = []
    points, stats = keygen.make_key_points(sizes, pinned, seen.append)
    assert sum(seen) == 2501 + 1003 and stats.bytes == 2501 * 96 + 1003 * 192
    for stage, (group, count) in sizes.items():
        arr = points[stage]
        assert arr.shape == (count, keygen.POINT_WORDS[group])
        assert host_is_pinned(arr) == pinned
        decode, gen = (g1_from_limbs, bls.G1) if group == "g1" else (g2_from_limbs, bls.G2)
        seed = keygen.STAGE_SEEDS[stage]
        for k in (0, 7, 999, 1000, 1001, count - 1):  # both sides of each chunk boundary
            want = bls.multiply(gen, keygen.key_scalar(seed, k))
            assert bls.eq(decode(arr[k]), want), (stage, k)
        assert len({arr[k].tobytes() for k in range(count)}) == count  # all distinct
