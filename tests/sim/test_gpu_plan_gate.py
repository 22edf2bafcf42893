"""The CI gate: our GPU prover's dry-run plan (cuzk_sim.gpu) replayed on the production
card. Oracle: the plan's peak of live bytes by plain integer arithmetic; a plan whose
peak plus the CUDA context exceeds the card must be predicted to OOM."""

import textwrap

import cuzk_sim.gpu.prover as prover  # no CuPy needed: the dry run is plain Python
import pytest

from cuzk_sim.plan.contract import Alloc, Free, Plan
from cuzk_sim.scenario import load_scenario
from cuzk_sim.simulate.runner import simulate

GIB = 2**30


def live_peak(plan: Plan) -> int:
    live, peak, sizes = 0, 0, {}
    for s in plan.steps:
        if isinstance(s, Alloc) and s.buffer not in sizes:
            sizes[s.buffer] = -(-s.bytes // 512) * 512  # the caching pool's rounding
            live += sizes[s.buffer]
            peak = max(peak, live)
        elif isinstance(s, Free) and s.buffer in sizes:
            live -= sizes.pop(s.buffer)
    return peak


@pytest.mark.parametrize("log2", [16, 27])
def test_dry_run_plan_replays_on_a_16_gib_card(tmp_path, log2):
    plan = prover.dry_run_plan(prover.PartitionShape.synthetic(log2))
    (tmp_path / "plan.json").write_text(plan.to_json())
    (tmp_path / "s.toml").write_text(
        textwrap.dedent("""
        on_oom = "continue"
        [hardware]
        vram = "16 GiB"
        context_overhead = "400 MiB"
        [engine.gpus]
        gpu_workers_per_device = 1
        [engine.pce]
        cached = ["porep"]
        [plan]
        file = "plan.json"
        [[workload]]
        kind = "porep"
        count = 1
        """)
    )
    result = simulate(load_scenario(tmp_path / "s.toml"))  # every step priced, or an error
    must_oom = live_peak(plan) + 400 * 2**20 > 16 * GIB
    assert result.oom == must_oom
    if must_oom:
        first = result.fatal_ooms[0]
        assert first.requested_bytes > first.free_bytes
    else:
        assert result.peak_vram_bytes[0] >= live_peak(plan) + 400 * 2**20
