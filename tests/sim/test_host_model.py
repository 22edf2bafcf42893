"""The host model: cores shared by CPU work (processor sharing) and pinned host memory.

Expected values are hand arithmetic on the toy profile (every kind costs `size` seconds;
a proof's PCE load takes 1 s and the synthesis of the toy circuit 10 s), never read back
from the model. QUIET: a synthesis that asks for almost no cores, so that only the plan's
CPU steps compete.
"""

import dataclasses
import json
from pathlib import Path

import pytest
import simpy
from hypothesis import given
from hypothesis import strategies as st
from sim_toys import run_plan, toy_profile
from test_properties import assert_same_run

from cuzk_sim.io.errors import InputError
from cuzk_sim.model.cores import HostCores
from cuzk_sim.model.fast import FastPaths
from cuzk_sim.model.host import HostMemory
from cuzk_sim.plan.contract import (
    Alloc,
    Cpu,
    Free,
    Kernel,
    Label,
    Lock,
    Plan,
    PlanError,
    Sync,
    Unlock,
)
from cuzk_sim.scenario import load_scenario, scenario_from_dict
from cuzk_sim.simulate.runner import simulate

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
QUIET = dataclasses.replace(toy_profile(), synthesis_threads=0.001)
PLAIN = FastPaths.none()  # the plain interpreter: the reference of every speed-up
READY = 1 + 10  # PCE load + synthesis: when the partitions reach the GPU workers


def done_at(result) -> list[float]:
    return sorted(t for _, _, t in result.proof_done_times)


# --- cores: processor sharing, by hand ---


def test_two_tasks_on_one_core_take_twice_as_long():
    # two workers, each 5 s of work on one thread
    plan = Plan("cpu", (Cpu("c", "assemble", 5),))
    _, one_core = run_plan(plan, workers=2, partitions=2, host_cores=1, profile=QUIET)
    assert done_at(one_core) == pytest.approx([READY + 2 * 5])
    _, two_cores = run_plan(plan, workers=2, partitions=2, host_cores=2, profile=QUIET)
    assert done_at(two_cores) == pytest.approx([READY + 5])


def test_a_task_asking_for_more_threads_than_cores_runs_at_cores_over_threads():
    plan = Plan("cpu", (Cpu("c", "assemble", 3, threads=4),))
    _, result = run_plan(plan, host_cores=2, profile=QUIET)
    assert done_at(result) == pytest.approx([READY + 3 * 4 / 2])


def test_helper_thread_work_shares_cores_and_sync_waits_for_it():
    # side: 4 s on 2 threads; host: 2 s on 2 threads; 2 cores -> both at half speed:
    # host ends at 4 s, side has 2 s left alone -> ends at 6 s; the sync joins it
    plan = Plan(
        "helper",
        (
            Cpu("side", "prep_msm", 4, threads=2, stream="side"),
            Cpu("main", "assemble", 2, threads=2),
            Sync("side"),
        ),
    )
    _, result = run_plan(plan, host_cores=2, profile=QUIET)
    assert done_at(result) == pytest.approx([READY + 6])
    _, roomy = run_plan(plan, host_cores=4, profile=QUIET)  # no contention: max(4, 2)
    assert done_at(roomy) == pytest.approx([READY + 4])


def test_processor_sharing_event_log():
    env = simpy.Environment()
    cores = HostCores(env, 1)
    log = []

    def task(name, start, seconds):
        yield env.timeout(start)
        yield cores.run(seconds, 1)
        log.append((name, env.now))

    env.process(task("a", 0, 4))
    env.process(task("b", 1, 1))
    env.run()
    # a alone for 1 s; then both at 1/2: b's 1 s ends at 3; a's last 2 s alone -> 5
    assert log == [("b", pytest.approx(3)), ("a", pytest.approx(5))]
    assert cores.peak_demand == 2


def test_synthesis_demand_comes_from_the_profile_threads():
    # one partition's synthesis keeps 4 cores busy; 2 cores -> 10 s of work takes 20 s
    profile = dataclasses.replace(toy_profile(), synthesis_threads=4.0)
    plan = Plan("k", (Kernel("k", "ntt", 1),))
    _, result = run_plan(plan, profile=profile, host_cores=2)
    assert done_at(result) == pytest.approx([1 + 20 + 1])
    _, roomy = run_plan(plan, profile=profile, host_cores=4)
    assert done_at(roomy) == pytest.approx([1 + 10 + 1])
    # two partitions of one proof synthesize together: 2 x 4 threads on 4 cores -> 20 s;
    # then the one worker runs the two 1 s partitions back to back
    _, two = run_plan(plan, profile=profile, host_cores=4, partitions=2)
    assert done_at(two) == pytest.approx([1 + 20 + 2])


cpu_plans = st.lists(
    st.tuples(st.integers(1, 5), st.integers(1, 3), st.sampled_from(["host", "p", "q"])),
    min_size=1,
    max_size=4,
).map(
    lambda specs: Plan(
        "cpus",
        (
            Cpu("early", "prep_msm", 2, threads=2, stream="p"),
            Alloc("pin", 1000, memory="host_pinned"),
            Lock("gpu"),
            Alloc("x", 1),
            *(
                Cpu(f"c{i}", "assemble", sz, threads=th, stream=st_)
                for i, (sz, th, st_) in enumerate(specs)
            ),
            Sync("p"),
            Free("x"),
            Unlock("gpu"),
            Sync("q"),
            Free("pin", memory="host_pinned"),
        ),
    )
)


@given(cpu_plans, st.integers(1, 3), st.integers(1, 6))
def test_shared_cores_fast_path_equals_the_plain_interpreter(plan, workers, cores):
    _, fast = run_plan(plan, workers=workers, proofs=3, partitions=2, host_cores=cores)
    _, slow = run_plan(
        plan, workers=workers, proofs=3, partitions=2, host_cores=cores, fast=PLAIN, record=True
    )
    assert_same_run(fast, slow)


@given(cpu_plans, st.integers(1, 3))
def test_cores_never_oversubscribed_change_nothing(plan, workers):
    """With cores to spare, sharing never slows anyone: the arithmetic path and the
    processor-sharing path agree."""
    sim_a, a = run_plan(plan, workers=workers, proofs=2, host_cores=10**4)
    assert not sim_a.cores_shared
    sim_b, b = run_plan(plan, workers=workers, proofs=2, host_cores=10**4, force_shared=True)
    assert sim_b.cores_shared
    assert_same_run(a, b)


# --- pinned host memory ---

PIN = 600_000  # bytes; the toy budget is 10**6 and synthesis reserves 1 byte per partition


def test_pinned_bytes_appear_in_the_host_ledger_of_a_host_oom():
    plan = Plan(
        "pins",
        (
            Alloc("h1", PIN, memory="host_pinned"),
            Alloc("h2", PIN, memory="host_pinned"),
            Free("h2", memory="host_pinned"),
            Free("h1", memory="host_pinned"),
        ),
    )
    sim, result = run_plan(plan)
    (event,) = result.oom_events
    assert (event.where, event.buffer, event.fatal) == ("host", "h2", True)
    assert event.requested_bytes == PIN
    assert event.free_bytes == 10**6 - 1 - PIN
    assert event.ledger["gpu0-w0"] == {"h1": PIN}
    assert event.ledger["synthesis"] == {"toy-0": 1}
    assert result.proofs_failed == 1
    assert sim.ram.pinned == 0 and not sim.ram.live  # the panic unpinned h1
    assert result.to_dict()["first_oom_where"] == "host"


def test_host_oom_with_a_fallback_takes_it_and_logs_like_cuzk():
    plan = Plan(
        "pins",
        (
            Alloc("h1", PIN, memory="host_pinned"),
            Alloc("h2", PIN, memory="host_pinned", fallback="pageable", note="prestage_pin"),
            Kernel("staged", "ntt", 1),
            Label("pageable"),
            Free("h2", memory="host_pinned"),
            Free("h1", memory="host_pinned"),
        ),
    )
    sim, result = run_plan(plan)
    assert not result.oom and result.proofs_completed == 1
    (event,) = result.oom_events
    assert (event.where, event.fatal) == ("host", False)
    assert any("prestage_pin=fallback err=2" in line for _, line in result.log)
    assert sim.ram.used == 0 and result.peak_host_bytes == 1 + PIN


def test_memory_aware_pin_checks_the_host_free_bytes():
    plan = Plan(
        "pins",
        (
            Alloc("h", PIN, memory="host_pinned", margin=10**6, fallback="skip", note="pin"),
            Label("skip"),
            Free("h", memory="host_pinned"),
        ),
    )
    _, result = run_plan(plan)
    assert result.oom_events[0].reason == "skip_ram"
    assert any("pin=skip_ram" in line for _, line in result.log)


def test_pinning_costs_the_profile_page_locking_time():
    profile = dataclasses.replace(toy_profile(), pin_rate=1000.0, pin_fixed=0.5)
    plan = Plan("pin", (Alloc("h", 3000, memory="host_pinned"), Free("h", memory="host_pinned")))
    _, result = run_plan(plan, profile=profile)
    assert done_at(result) == pytest.approx([READY + 0.5 + 3000 / 1000])


def test_pins_and_reservations_share_one_budget():
    env = simpy.Environment()
    ram = HostMemory(env, budget=5)
    assert ram.try_pin("w0", "h", 4, persistent=False)
    waiting = ram.reserve("synthesis", "p1", 2)  # 4 + 2 > 5: waits (cuzk's budget.acquire)
    assert not waiting.triggered
    assert ram.try_pin("w1", "g", 1, persistent=False)  # a pin never queues: 1 <= 5 - 4
    assert not ram.try_pin("w1", "g2", 1, persistent=False)  # and fails at once when full
    assert ram.unpin("w0", "h")  # 4 back: the waiting reservation fits now (1 + 2 <= 5)
    assert waiting.triggered and ram.used == 1 + 2
    assert ram.ledger()["synthesis"] == {"p1": 2} and ram.ledger()["w1"] == {"g": 1}
    assert not ram.unpin("w1", "nope")  # freeing what is not pinned is a no-op


host_plans = st.lists(
    st.tuples(st.sampled_from(["h0", "h1", "h2"]), st.integers(1, 400_000), st.booleans()),
    min_size=1,
    max_size=6,
).map(
    lambda specs: Plan(
        "host",
        tuple(
            step
            for name, size, lock in specs
            for step in ([Lock("gpu")] if lock else [])
            + [Alloc(name, size, memory="host_pinned"), Kernel("k", "ntt", 1)]
            + ([Unlock("gpu")] if lock else [])
        )
        + tuple(Free(n, memory="host_pinned") for n in ("h0", "h1", "h2")),
    )
)


@given(host_plans, st.integers(1, 3), st.integers(1, 4), st.integers(0, 2**16))
def test_host_bytes_are_conserved(plan, workers, proofs, seed):
    sim, result = run_plan(plan, workers=workers, proofs=proofs, seed=seed)
    _, traced = run_plan(plan, workers=workers, proofs=proofs, seed=seed, fast=PLAIN, record=True)
    assert_same_run(result, traced)  # shortcuts around host steps change nothing
    ram = sim.ram
    assert ram.used == sum(n for n, _ in ram.live.values()) + sum(ram.reserved.values())
    assert ram.pinned == sum(n for n, _ in ram.live.values())
    # every pin is freed at the end of its plan or by a panic, except those allocated
    # again while live (leaked, as on the device)
    assert all("#leak" in buffer for _, buffer in ram.live)
    assert 0 <= ram.used <= ram.budget and result.peak_host_bytes <= ram.budget
    for e in result.oom_events:
        if e.where == "host":
            held = sum(
                v for owner, bufs in e.ledger.items() if owner != "(host)" for v in bufs.values()
            )
            assert held + e.free_bytes == ram.budget
            assert e.requested_bytes > e.free_bytes


def test_same_seed_same_json_with_shared_cores_and_pins():
    scn = load_scenario(SCENARIOS / "host-synthesis-bound-32-cores.toml")
    a, b = simulate(scn), simulate(scn)
    assert json.dumps(a.to_dict()) == json.dumps(b.to_dict())
    assert a.peak_core_demand > scn.config.host_cores  # the contended path ran


# --- input validation ---

BASE = {"hardware": {"gpus": 1}, "workload": [{"kind": "porep", "count": 1}]}


@pytest.mark.parametrize(
    ("patch", "key"),
    [
        ({"hardware": {"host_cores": 0}}, "hardware.host_cores"),
        ({"hardware": {"host_cores": "many"}}, "hardware.host_cores"),
        ({"engine": {"gpus": {"gpu_threads": -1}}}, "engine.gpus.gpu_threads"),
        ({"expect": {"first_oom_where": "gpu"}}, "expect.first_oom_where"),
    ],
)
def test_new_scenario_keys_are_validated_by_path(patch, key):
    with pytest.raises(InputError) as e:
        scenario_from_dict({**BASE, **patch}, "s.toml")
    assert str(e.value).startswith(f"s.toml: {key}")


def test_host_cores_default_from_the_profile_and_gpu_threads_reach_the_plan():
    scn = scenario_from_dict(BASE, "s.toml")
    assert scn.config.host_cores == 96  # the published 96-core host
    b_g2 = next(s for s in scn.plans["porep"].steps if getattr(s, "name", "") == "b_g2_msm")
    assert b_g2.threads == 32  # gpus.gpu_threads default (cuzk.example.toml)
    all_cores = scenario_from_dict(
        {**BASE, "hardware": {"host_cores": 48}, "engine": {"gpus": {"gpu_threads": 0}}}, "s"
    )
    b_g2 = next(s for s in all_cores.plans["porep"].steps if getattr(s, "name", "") == "b_g2_msm")
    assert b_g2.threads == 48  # 0 = all cores


@pytest.mark.parametrize(
    ("step", "needle"),
    [
        ({"op": "alloc", "buffer": "h", "bytes": 1, "memory": "hbm"}, "steps[0] (alloc).memory"),
        (
            {"op": "alloc", "buffer": "h", "bytes": 1, "memory": "host_pinned", "per_device": True},
            "steps[0] (alloc).per_device",
        ),
        ({"op": "free", "buffer": "h", "memory": 3}, "steps[0] (free).memory"),
    ],
)
def test_plan_memory_field_is_validated(step, needle):
    with pytest.raises(
        PlanError, match=needle.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")
    ):
        Plan.from_dict({"steps": [step]}, "p.json")


def test_pinned_alloc_round_trips_through_json():
    plan = Plan("p", (Alloc("h", 8, memory="host_pinned"), Free("h", memory="host_pinned")))
    assert Plan.from_json(plan.to_json()) == plan
    legacy = Plan.from_dict({"steps": [{"op": "alloc", "buffer": "d", "bytes": 8}]})
    assert legacy.steps[0].memory == "device"  # plans written before the field still load


@pytest.mark.parametrize(
    ("edit", "key"),
    [
        (("\ncores = 96\n", "\ncores = 0\n"), "host.cores"),
        (("threads = 6.4", "threads = 0"), "cpu.synthesis.threads"),
        (('pin_rate = "20 GiB/s"', 'pin_rate = "fast"'), "host.pin_rate"),
    ],
)
def test_profile_host_keys_are_validated(tmp_path, edit, key):
    from cuzk_sim.profiles.profile import load_profile

    text = (Path(__file__).resolve().parents[2] / "cuzk_sim/profiles/rtx5070ti.toml").read_text()
    assert edit[0] in text
    (tmp_path / "p.toml").write_text(text.replace(edit[0], edit[1], 1))
    with pytest.raises(InputError, match=key.replace(".", r"\.")):
        load_profile(str(tmp_path / "p.toml"))


def test_trace_carries_host_counters_and_the_host_oom():
    from cuzk_sim.results.run_trace import HOST_PID, chrome_trace

    scn = load_scenario(SCENARIOS / "host-pinned-prestage-two-workers-small-ram.toml")
    events = chrome_trace(simulate(scn, record=True))["traceEvents"]
    (oom,) = [e for e in events if e["ph"] == "i"]
    assert oom["pid"] == HOST_PID and oom["name"] == "OOM pinned_bc"
    host = [e["args"] for e in events if e.get("name") == "host RAM budget used (GiB)"]
    # 140 GiB reserved for the proof, then two 4 GiB pins (hand arithmetic in the scenario)
    # 140 GiB for the proof + 69.7 GiB resident (SRS 44 + PCE 25.7, model/host_side.py)
    assert any(
        h["pinned"] == 8.0 and h["reserved"] == pytest.approx(140.0 + 44 + 25.7) for h in host
    )


def test_an_unjoined_helper_thread_makes_the_engine_count_cores():
    # the step may still run beside the next partition's: no static bound holds
    joined = Plan("j", (Cpu("c", "prep_msm", 1, stream="p"), Sync("p")))
    unjoined = Plan("u", (Cpu("c", "prep_msm", 1, stream="p"),))
    sim_j, _ = run_plan(joined, host_cores=10**4, proofs=0)
    sim_u, _ = run_plan(unjoined, host_cores=10**4, proofs=0)
    assert not sim_j.cores_shared and sim_u.cores_shared


def test_host_post_mortem_names_the_host_budget_and_the_holders():
    from cuzk_sim.results.tables import post_mortem

    scn = load_scenario(SCENARIOS / "host-pinned-prestage-two-workers-small-ram.toml")
    text = post_mortem(simulate(scn).fatal_ooms[0])
    assert "on host RAM budget" in text and "pinned alloc of pinned_bc (2.00 GiB)" in text
    assert "synthesis: 140.00 GiB" in text and "1.00 GiB free" in text
