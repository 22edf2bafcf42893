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


def test_the_priced_plan_at_2_20_agrees_with_the_measured_full_prove():
    """Consistency of profile + live plan: our prover's 2^20 partition priced step by step
    vs the measured full prove at 2^20, 365.0 ms (uploads and host assembly included, host
    synthesis not). The profile was fitted to kernel rows, not to this figure."""
    prover = pytest.importorskip("cuzk_sim.gpu.prover")
    from cuzk_sim.plan import Copy, Cpu, Kernel
    from cuzk_sim.plans.gpu_prover import engine_partition_plan

    profile = load_profile("h200")
    plan = engine_partition_plan(prover.dry_run_plan(prover.PartitionShape.synthetic(20)))
    seconds = 0.0
    for s in plan.steps:
        if isinstance(s, Kernel):
            seconds += profile.kernel_seconds(s.kind, s.size, s.name)
        elif isinstance(s, Copy):
            seconds += profile.copy_seconds(s.bytes, s.pinned)
        elif isinstance(s, Cpu):
            seconds += profile.cpu_seconds(s.kind, s.size, s.name)
    assert seconds * 1e3 == pytest.approx(365.0, rel=0.10)
