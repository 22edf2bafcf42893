"""An MSM entering one in-order queue as its kernels (the trial rule of
cuzk_sim/steps/kernel.py `MSM_LAUNCHES`; not the model's default). Expected values by
hand: the launch count from gpu/msm.py's launch sequence, the times on the toy profile
(every kernel `size` seconds, copies 1 B/s, no latency; both workers start at 11 s)."""

import pytest
from sim_toys import run_plan

import cuzk_sim.steps.kernel as kernel_step
from cuzk_sim.model.engine import Arrivals
from cuzk_sim.model.fast import FastPaths
from cuzk_sim.plan.contract import Copy, Kernel, Plan
from cuzk_sim.steps.msm_launches import msm_launches

FAST = [FastPaths(), FastPaths.none()]
LEGACY = {"gpu_stream": "legacy_default"}


def test_the_launch_count_follows_the_signed_msm_sequence():
    # 2^18 G1: c = 15, 18 windows, 18 x 2^14 buckets, 2^14 / 16 = 1024 segments.
    # sort 6; accumulation: 18 x 2^18 entries / 32 = 147456 threads, 294912 slots, then
    # 36864, 4608, 576, 72, 10 (<= 16): 6 levels, so 1 + 6 + 1 = 8; set_reduce 1;
    # tree 1024 -> 1 by halves: 10. 6 + 8 + 1 + 10 = 25.
    assert msm_launches("msm_g1", 1 << 18) == 25
    # 5 points: c = 4, 64 windows x 8 buckets, 1 segment (one slice copy); 320 entries
    # / 32 = 10 threads, 20 slots (> 16) then 4: 2 levels. 6 + 4 + 1 + 1 = 12.
    assert msm_launches("msm_g1", 5) == 12
    assert msm_launches("ntt", 1 << 18) == 1


def _ends(result) -> list[float]:
    return sorted(round(s.end_s, 9) for s in result.spans if s.cat == "partition")


@pytest.mark.parametrize("fast", FAST, ids=["fast", "plain"])
@pytest.mark.parametrize(("rule", "expected"), [(None, [24.0, 37.0]), ("spread", [26.0, 37.0]),
                                                ("ahead", [25.0, 37.0])])  # fmt: skip
def test_the_other_workers_work_lands_between_an_msms_kernels(fast, rule, expected, monkeypatch):
    # one plan, an MSM of 12 s (12 kernels of 1 s: msm_launches("msm_g1", 12) == 12) and
    # its result copy (1 s). The one synthesis core makes w0's witness 1-11 and w1's (its
    # proof arrives at 11.5) 11.5-21.5: w0 starts at 11, w1 at 21.5.
    # None, the MSM whole (the model): w0's runs 11-23, its copy (issued at 11 + 0.3 ms)
    # 23-24; w1's MSM 24-36, its copy 36-37.
    # "spread": a worker launches a kernel a second, w0 at 11 .. 22 (each runs at once,
    # the last 22-23), its copy at 23; w1 at 21.5, 22.5, ...: in issue order the queue
    # runs w0's (21) 21-22, w1's (21.5) 22-23, w0's (22) 23-24, w1's (22.5) 24-25, w0's
    # copy (23) 25-26: w0 ends at 26; w1's other 10 run 26-36 (the last one issued at
    # 32.5), its copy (issued at 33.5) 36-37.
    # "ahead": a worker launches its next kernel when the one before starts. w0's kernel
    # i >= 1 is issued at 11 + i - 1, each runs 11 + i .. 12 + i (the last, issued at 21,
    # 22-23); its copy is issued when that one starts (22), after w1's first kernel
    # (21.5, 23-24): 24-25, w0 ends at 25. w1's next is issued at 23, runs 25-26, the
    # others back to back to 36; its copy (issued at 35, the last one's start) 36-37.
    monkeypatch.setattr(kernel_step, "MSM_LAUNCHES", rule)
    assert msm_launches("msm_g1", 12) == 12
    plan = Plan("p", (Kernel("m", "msm_g1", 12), Copy("r", 1, "DtoH")), meta=LEGACY)
    arrivals = (Arrivals("toy", 1), Arrivals("toy", 1, start_s=11.5))
    _, r = run_plan(plan, workers=2, proofs=2, record=True, fast=fast, arrivals=arrivals)
    assert _ends(r) == expected


@pytest.mark.parametrize("fast", FAST, ids=["fast", "plain"])
@pytest.mark.parametrize("rule", [None, "spread", "ahead"])
def test_a_worker_alone_runs_its_msm_as_before(fast, rule, monkeypatch):
    # one worker: its kernels run back to back, 11-23, the copy 23-24, whatever the rule
    monkeypatch.setattr(kernel_step, "MSM_LAUNCHES", rule)
    plan = Plan("p", (Kernel("m", "msm_g1", 12), Copy("r", 1, "DtoH")), meta=LEGACY)
    _, r = run_plan(plan, record=True, fast=fast)
    assert _ends(r) == [24.0]
