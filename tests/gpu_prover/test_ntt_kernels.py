"""Every NTT stage-group kernel (gpu/ntt.py NTT_KERNELS: the default fr_ntt_pass and the
baseline fr_ntt_group_tw, with the field product's default and its baseline
FIELD_MUL_WIDE=0, as gpu_bench.py compares them) against the reference domain's NTT, Python
ints. GPU tests, except the option checks."""

from __future__ import annotations

import random

import numpy as np
import pytest
from cuzk_sim.gpu import encoding
from cuzk_sim.gpu.ntt import NTT_KERNELS
from cuzk_sim.reference.domain import Domain
from cuzk_sim.reference.field import R


@pytest.mark.parametrize("retired", ["fr_ntt_radix8", "fr_ntt_reg8", "fr_ntt_pass_c2"])
def test_unknown_kernel_is_refused(monkeypatch, retired):
    from cuzk_sim.gpu.ntt import default_kernel, ntt_launches

    monkeypatch.setenv("CUZK_NTT_KERNEL", retired)
    with pytest.raises(ValueError, match="CUZK_NTT_KERNEL must be one of"):
        default_kernel()
    with pytest.raises(ValueError, match="NTT kernel must be one of"):
        ntt_launches(None, None, 0, kernel_name=retired)  # refused before any launch


@pytest.mark.gpu
@pytest.mark.parametrize("defines", ["", "FIELD_MUL_WIDE=0"])
@pytest.mark.parametrize("name", NTT_KERNELS)
def test_ntt_kernel_matches_reference(monkeypatch, name, defines):
    import cupy as cp
    from cuzk_sim.gpu import ntt as gntt
    from cuzk_sim.gpu.module import launch

    monkeypatch.setenv("CUZK_KERNEL_DEFINES", defines)
    rng = random.Random(len(name) + len(defines))
    for log_n in (1, 2, 3, 5, 11, 13):  # stage groups with k = 1, 2, 3, ...
        n = 1 << log_n
        dom = Domain(n)
        values = [rng.randrange(R) for _ in range(n)]
        values[0] = R - 1
        t = gntt.DeviceTables.from_buffer(
            cp.asarray(gntt.domain_tables(log_n, dom.omega, 7, 1).pack()), log_n
        )
        a = cp.asarray(encoding.ints_to_limbs(values, 8)).reshape(-1)
        launch("field_ops.cu", "fr_convert", n, a, np.int64(n), np.int32(1))
        gntt.ntt(a, t, name)
        launch("field_ops.cu", "fr_convert", n, a, np.int64(n), np.int32(0))
        assert encoding.limbs_to_ints(a.get().reshape(n, 8)) == dom.ntt(values), (name, log_n)


def _gpu_transform(cp, fn, values, t, n):
    from cuzk_sim.gpu.module import launch

    a = cp.asarray(encoding.ints_to_limbs(values, 8)).reshape(-1)
    launch("field_ops.cu", "fr_convert", n, a, np.int64(n), np.int32(1))
    fn(a, t)
    launch("field_ops.cu", "fr_convert", n, a, np.int64(n), np.int32(0))
    return encoding.limbs_to_ints(a.get().reshape(n, 8))


@pytest.mark.gpu
@pytest.mark.parametrize("name", NTT_KERNELS)
@pytest.mark.parametrize("bitrev", ["tiled", "scatter"])
def test_group_kernels_transforms(name, bitrev):
    """The stage-group kernels with the input factor (1/n, g^j) in the tiled bit reversal
    (2^12) or as a pass of its own (2^1, 2^6, and bitrev="scatter"), the output factor
    (g^-j) a pass of its own: inverse and coset transforms against the reference domain."""
    import functools

    import cupy as cp
    from cuzk_sim.gpu import ntt as gntt

    rng = random.Random(len(name))
    for log_n in (1, 6, 12):
        n = 1 << log_n
        dom = Domain(n, "snarkjs")
        g = dom.default_coset
        values = [rng.randrange(R) for _ in range(n)]
        t = gntt.DeviceTables.from_buffer(
            cp.asarray(gntt.domain_tables(log_n, dom.omega, g, 1).pack()), log_n
        )
        for fn, want in (
            (gntt.intt, dom.intt(values)),
            (gntt.coset_ntt, dom.coset_ntt(values, g)),
            (gntt.coset_intt, dom.coset_intt(values, g)),
        ):
            call = functools.partial(fn, kernel_name=name, bitrev=bitrev)
            got = _gpu_transform(cp, call, values, t, n)
            assert got == want, (name, fn.__name__, log_n)


PASS_SWITCHES = ["", "FIELD_MUL_WIDE=0"]


@pytest.mark.gpu
@pytest.mark.parametrize("defines", PASS_SWITCHES)
def test_pass_kernel_three_passes_match_reference(monkeypatch, defines):
    """fr_ntt_pass under each field product with passes of at most 4 stages (PASS_LOG patched), so
    that 2^12 runs three passes (a middle one from the per-pass table, as 2^24's second),
    every transform against the reference domain."""
    import cupy as cp
    from cuzk_sim.gpu import ntt as gntt

    monkeypatch.setenv("CUZK_KERNEL_DEFINES", defines)
    monkeypatch.setenv("CUZK_NTT_KERNEL", "fr_ntt_pass")
    monkeypatch.setattr(gntt, "PASS_LOG", 4)
    log_n = 12
    n = 1 << log_n
    dom = Domain(n)
    g = dom.default_coset
    rng = random.Random(len(defines))
    values = [rng.randrange(R) for _ in range(n)]
    t = gntt.DeviceTables.from_buffer(
        cp.asarray(gntt.domain_tables(log_n, dom.omega, g, 1).pack()), log_n
    )
    assert len(gntt.pass_groups(log_n)) == 3
    for fn, want in (
        (gntt.ntt, dom.ntt(values)),
        (gntt.intt, dom.intt(values)),
        (gntt.coset_intt, dom.coset_intt(values, g)),
    ):
        assert _gpu_transform(cp, fn, values, t, n) == want, (fn.__name__, defines)


@pytest.mark.gpu
@pytest.mark.parametrize("log_n", [19, 20, 24])
def test_pass_kernel_equals_group_kernel_at_size(log_n):
    """fr_ntt_pass at the sizes it was timed (2^19 and up: three passes; 2^24: the second
    pass's twiddles from the 2^15-entry per-pass table) bit-equal to fr_ntt_group_tw (the
    default until then, tested against the reference above), forward and coset inverse."""
    import cupy as cp
    from cuzk_sim.gpu import ntt as gntt

    n = 1 << log_n
    dom = Domain(n)
    t = gntt.DeviceTables.from_buffer(
        cp.asarray(gntt.domain_tables(log_n, dom.omega, dom.default_coset, 1).pack()), log_n
    )
    src = cp.random.default_rng(log_n).integers(0, 2**32, size=8 * n, dtype=cp.uint32)
    src[7::8] &= 0x0FFFFFFF  # below r (r's top limb is 0x73eda753)
    for fn in (gntt.ntt, gntt.coset_intt):
        a, b = src.copy(), src.copy()
        fn(a, t, kernel_name="fr_ntt_pass")
        fn(b, t, kernel_name="fr_ntt_group_tw")
        assert bool((a == b).all()), (fn.__name__, log_n)
        assert not bool((a == src).all())
