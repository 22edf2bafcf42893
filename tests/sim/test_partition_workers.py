"""cuzk's per-partition synthesis pool (`[engine.synthesis] partition_workers`), by hand.

Toy profile: the toy circuit's synthesis takes 10 s per partition, its PCE load 1 s
(engine.rs Phase 7: each partition is synthesized on its own under a semaphore of N
permits; a permit is held through the send into a channel of max(lookahead, N))."""

import pytest
from sim_toys import toy_scenario

from cuzk_sim.io.errors import InputError
from cuzk_sim.plan.contract import Cpu, Kernel, Plan
from cuzk_sim.scenario import scenario_from_dict
from cuzk_sim.simulate.runner import simulate

FAST_GPU = Plan("fast", (Cpu("prove", "assemble", 1),))  # 1 s per partition, no engine
SLOW_GPU = Plan("slow", (Kernel("prove", "ntt", 30),))  # 30 s per partition on the GPU


@pytest.mark.parametrize(("workers", "done"), [(1, 42.0), (2, 22.0), (4, 12.0)])
def test_synthesis_bound_proof_time_follows_the_permits(workers, done):
    # 4 partitions, 4 GPU workers (never the bottleneck): ceil(4 / N) rounds of 10 s after
    # the PCE load, then the last partition's 1 s: 1 + 10 * ceil(4 / N) + 1
    scn = toy_scenario(FAST_GPU, workers=4, partitions=4, partition_workers=workers)
    result = simulate(scn)
    assert result.proof_done_times[0][2] == done


def test_whole_proof_synthesis_is_the_default():
    result = simulate(toy_scenario(FAST_GPU, workers=4, partitions=4))
    assert result.proof_done_times[0][2] == 12.0  # one round of 4 in parallel: 1 + 10 + 1


def test_a_permit_is_held_through_the_send_into_the_full_channel():
    # one GPU worker, 30 s per partition; N = 1, lookahead 1: channel of 1
    # p0: synth 1..11, sent (the worker takes it at 11); p1: 11..21, sent (channel 1/1);
    # p2: 21..31, its send waits for the worker to take p1 at 41; only then p3 starts
    scn = toy_scenario(
        SLOW_GPU, workers=1, partitions=4, partition_workers=1, synthesis_lookahead=1
    )
    result = simulate(scn, record=True)
    synth = sorted(
        (s.start_s, s.end_s) for s in result.spans if s.cat == "synthesis" and "/" in s.name
    )
    assert synth == [(1.0, 11.0), (11.0, 21.0), (21.0, 31.0), (41.0, 51.0)]
    assert result.proof_done_times[0][2] == 11 + 4 * 30  # the GPU is the bottleneck


def test_each_in_flight_partition_holds_its_host_memory():
    # toy: 1 byte per partition. N = 2, one slow GPU worker, channel max(1, 2) = 2: at
    # t = 11 p0 and p1 are sent and p2, p3 get permits and reserve: 4 in flight at once
    kw = {"workers": 1, "partitions": 4, "synthesis_lookahead": 1}
    scn = toy_scenario(SLOW_GPU, partition_workers=2, **kw)
    assert simulate(scn).peak_host_bytes == 4
    one = toy_scenario(SLOW_GPU, partition_workers=1, **kw)
    assert simulate(one).peak_host_bytes == 3  # p0 with the GPU, p1 sent, p2 waiting


def test_the_scenario_key_reaches_the_engine_and_is_bounded():
    raw = {
        "profile": "h200",
        "engine": {"synthesis": {"partition_workers": 6}},
        "workload": [{"kind": "porep", "count": 1}],
    }
    scn = scenario_from_dict(raw, "t.toml")
    assert scn.config.partition_workers == 6
    raw["engine"]["synthesis"]["partition_workers"] = -1
    with pytest.raises(InputError, match="engine.synthesis.partition_workers"):
        scenario_from_dict(raw, "t.toml")
