"""The kernel switches that gpu_bench.py compares (old = FIELD_MUL_WIDE=0 FQ2_SQR=0
ACC_FLUSH_SLOTS=0 and the one-thread Horner, CUZK_MSM_TAIL=device; new = the defaults; those
with the Fq square on, the lazy reduction off, or both it and the slot flush off (e4c4b26);
the new kernels with the device Horner; every off-by-default switch together; the affine
batch accumulation, ACC_AFFINE=1, with the divsteps or the binary inverse): each gives the
MSM that py_ecc computes. GPU tests (marker `gpu`) except the option check. Each switch
alone is checked on the host (test_field_host_emulation.py)."""

from __future__ import annotations

import random

import py_ecc.optimized_bls12_381 as bls
import pytest
from cuzk_sim.gpu import encoding
from cuzk_sim.reference.field import R

ALL_OPT_IN = "ACC_XYZZ=1 FQ2_SQR=1 FIELD_MUL_PAIRS=1 ACC_FLUSH_SLOTS=1 G1_ACC_MIN_BLOCKS=3"
SWITCHES = [  # compiled modules of msm_signed.cu (NVRTC takes seconds each)
    ("", "host"),  # the defaults
    ("FQ2_SQR=0", "host"),  # Fq2 squares as products (the default until FQ2_SQR=1)
    ("FIELD_SQR=1", "host"),  # the dedicated Fq square (measured slower: off)
    ("FIELD_LAZY=0", "host"),  # every Fq value below q (the default until FIELD_LAZY=1)
    ("FQ2_LAZY=1", "host"),  # lazy reduction in G2's Fq2 too (measured slower: off)
    ("FIELD_LAZY=0 ACC_FLUSH_SLOTS=0 G1_ACC_MIN_BLOCKS=1", "host"),  # the defaults of e4c4b26
    ("FIELD_MUL_WIDE=0 FQ2_SQR=0 ACC_FLUSH_SLOTS=0", "device"),  # the kernels of 06:33 UTC
    ("", "device"),
    (ALL_OPT_IN, "host"),  # every off-by-default switch at once (each alone: host tests)
    ("ACC_AFFINE=1", "host"),  # affine batch accumulation, divsteps inverse
    ("ACC_AFFINE=1 ACC_AFFINE_INV=1 FQ2_SQR=1", "host"),  # binary inverse, Fq2 squares
]


@pytest.mark.parametrize(
    "defines, on",
    [("", False), ("ACC_AFFINE=1", True), ("FQ2_SQR=1 ACC_AFFINE", True)]
    + [("ACC_AFFINE=1 ACC_AFFINE=0", False), ("ACC_AFFINE_INV=0", False)],
)
def test_affine_switch_is_read_from_the_kernel_defines(monkeypatch, defines, on):
    from cuzk_sim.gpu.msm import SignedShape, affine_accumulation

    monkeypatch.setenv("CUZK_KERNEL_DEFINES", defines)
    assert affine_accumulation() is on
    shape = SignedShape.of("g1", 1 << 20)
    assert ("affine_batch" in shape.scratch()) is on
    # 2^20 points x 16 windows: 2^18 ranges of 64 (balanced) or 2^15 of 512 (affine)
    assert (shape.acc_threads, shape.acc_chunk) == ((1 << 15, 512) if on else (1 << 18, 64))


def test_affine_scratch_is_bounded_at_any_size():
    """2^15 launched threads x (256 points + 128 prefix products): 960 MiB for G1, 1.875
    GiB for G2, at 2^20 points as at 2^27."""
    from cuzk_sim.gpu.msm import SignedShape

    for n in (1 << 20, 1 << 27):
        assert SignedShape.of("g1", n, affine=True).scratch()["affine_batch"] == 2**15 * 30 * 1024
        assert SignedShape.of("g2", n, affine=True).scratch()["affine_batch"] == 2**15 * 60 * 1024
    small = SignedShape.of("g1", 300, affine=True)  # 300 x 52 windows: 488 ranges of 32
    assert (small.acc_threads, small.acc_chunk, small.affine_launch) == (488, 32, 512)
    mid = SignedShape.of("g1", 1 << 18, affine=True)  # 2^18 x 18 windows / 2^15: 144
    assert (mid.acc_threads, mid.acc_chunk) == (32768, 144)


def test_unknown_tail_is_refused(monkeypatch):
    from cuzk_sim.gpu.msm import default_tail

    monkeypatch.setenv("CUZK_MSM_TAIL", "cpu")
    with pytest.raises(ValueError, match="CUZK_MSM_TAIL must be one of"):
        default_tail()


@pytest.mark.gpu
@pytest.mark.parametrize("defines, tail", SWITCHES)
@pytest.mark.parametrize("group, n", [("g1", 300), ("g2", 40)])
def test_msm_matches_py_ecc_under_every_switch(monkeypatch, defines, tail, group, n):
    from cuzk_sim.gpu.device import Device
    from cuzk_sim.gpu.msm import msm

    monkeypatch.setenv("CUZK_KERNEL_DEFINES", defines)
    monkeypatch.setenv("CUZK_MSM_TAIL", tail)
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
    if "ACC_AFFINE=1" in defines:  # long ranges, passes down to 2 pairs: many passes
        import cuzk_sim.gpu.msm as gmsm

        monkeypatch.setattr(gmsm, "AFFINE_THREADS", 64)
        monkeypatch.setattr(gmsm, "AFFINE_MIN_PAIRS", {"g1": 2, "g2": 2})
        got = from_limbs(msm(dev, "msm_test", group, dp, ds, n, algo="signed"))
        assert bls.eq(got, want), "long ranges"
    dev.free_all()
