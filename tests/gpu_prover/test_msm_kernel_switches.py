"""The kernels that gpu_bench.py compares side by side: the defaults, and the field
product's baseline FIELD_MUL_WIDE=0 (the 64-bit C Montgomery product; `old` in
benchmarks/gpu_bench.py): each gives the MSM that py_ecc computes. GPU tests (marker
`gpu`). The other switches were measured, lost and were retired (issue 29,
docs/benchmarks.md)."""

from __future__ import annotations

import random

import py_ecc.optimized_bls12_381 as bls
import pytest
from cuzk_sim.gpu import encoding
from cuzk_sim.reference.field import R

SWITCHES = [  # compiled modules of msm_signed.cu (NVRTC takes seconds each)
    "",  # the defaults
    "FIELD_MUL_WIDE=0",  # the field product's baseline: the 64-bit C product of commit 6c50516
]


@pytest.mark.gpu
@pytest.mark.parametrize("defines", SWITCHES)
@pytest.mark.parametrize("group, n", [("g1", 300), ("g2", 40)])
def test_msm_matches_py_ecc_under_every_switch(monkeypatch, defines, group, n):
    from cuzk_sim.gpu.device import Device
    from cuzk_sim.gpu.msm import msm

    monkeypatch.setenv("CUZK_KERNEL_DEFINES", defines)
    rng = random.Random(n)
    gen = bls.G1 if group == "g1" else bls.G2
    ks = [rng.randrange(1, 2**20) for _ in range(n)]
    points = [bls.multiply(gen, k) for k in ks]
    scalars = [rng.choice([0, 1, R - 1]) if rng.random() < 0.2 else rng.randrange(R) for _ in ks]
    to_limbs = encoding.g1_to_limbs if group == "g1" else encoding.g2_to_limbs
    from_limbs = encoding.g1_from_limbs if group == "g1" else encoding.g2_from_limbs
    dev = Device("real")
    pts, sc = to_limbs(points), encoding.scalars_to_limbs(scalars)
    dp, ds = dev.alloc("points", pts.nbytes), dev.alloc("scalars", sc.nbytes)
    dev.copy_htod("p", dp, pts, pts.nbytes)
    dev.copy_htod("s", ds, sc, sc.nbytes)
    got = from_limbs(msm(dev, "msm_test", group, dp, ds, n, algo="signed"))
    want = bls.multiply(gen, sum(k * s for k, s in zip(ks, scalars, strict=True)) % R)
    assert bls.eq(got, want)
    dev.free_all()
