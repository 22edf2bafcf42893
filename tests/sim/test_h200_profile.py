"""The h200 profile against the H200 rows it was fitted to (docs/benchmarks.md, GPU prover
(H200), 2026-11-30 ~17:43 UTC, copied here by hand): the fit must stay within 10 % of
every row from 2^18 up (the sizes that decide the extrapolation to 2^27)."""

import pytest

from cuzk_sim.calibration import load_profile

MEASURED_MS = [
    ("ntt", 2**20, 0.96),
    ("ntt", 2**22, 3.97),
    ("ntt", 2**24, 15.4),
    ("msm_g1", 2**18, 16.2),
    ("msm_g1", 2**20, 35.8),
    ("msm_g1", 2**22, 94.7),
    ("msm_g2", 2**18, 52.6),
    ("msm_g2", 2**20, 120.9),
]


@pytest.mark.parametrize("kind, size, ms", MEASURED_MS)
def test_fit_is_close_to_the_measured_row(kind, size, ms):
    profile = load_profile("h200")
    assert profile.kernel_seconds(kind, size, "test") * 1e3 == pytest.approx(ms, rel=0.10)


def test_card_and_copy_rates_are_the_measured_ones():
    profile = load_profile("h200")
    assert profile.vram == 143771 * 2**20  # nvidia-smi on the device machine
    abc = 3 * 2**20 * 32  # a, b, c at 2^20: 96 MiB
    assert profile.copy_seconds(abc, pinned=False) == pytest.approx(11.9e-3, rel=0.01)
    assert profile.copy_seconds(abc, pinned=True) == pytest.approx(2.0e-3, rel=0.01)
