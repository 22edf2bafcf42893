"""The model's core pieces on their own: plan analysis, a worker on a bare machine, the
allocators' rounding, and the fast layer against the plain interpreter on richer random
plans and on every bundled scenario. Expected values are hand arithmetic."""

import dataclasses
import glob
import json
import math
from pathlib import Path

import pytest
import simpy
from hypothesis import given
from hypothesis import strategies as st
from sim_toys import MIB, run_plan, toy_profile

from cuzk_sim.model.allocator import ALLOCATORS, DeviceMemory
from cuzk_sim.model.compiled import compile_plan
from cuzk_sim.model.cores import HostCores
from cuzk_sim.model.device import SimDevice
from cuzk_sim.model.fast import FastPaths
from cuzk_sim.model.host import HostMemory
from cuzk_sim.model.interpreter import run_plain
from cuzk_sim.model.machine import Machine, Recorder
from cuzk_sim.model.runtime import Worker
from cuzk_sim.plan.analysis import analyze
from cuzk_sim.plan.contract import (
    Alloc,
    Copy,
    Cpu,
    Free,
    Goto,
    Kernel,
    Label,
    Lock,
    Plan,
    Sync,
    Unlock,
)

ROOT = Path(__file__).resolve().parents[2]

# --- plan analysis ---

FALLBACK = Plan(
    "fallback",
    (
        Kernel("k0", "ntt", 1),  # 0
        Kernel("k1", "ntt", 1),  # 1: merges into k0
        Lock("gpu"),  # 2
        Alloc("a", 8, margin=4, fallback="small"),  # 3
        Kernel("k2", "ntt", 1),  # 4
        Free("a"),  # 5
        Goto("done"),  # 6
        Label("small"),  # 7
        Alloc("b", 4),  # 8
        Free("b"),  # 9
        Label("done"),  # 10
        Unlock("gpu"),  # 11
        Cpu("prep", "prep_msm", 1, threads=3, stream="prep"),  # 12
        Sync("prep"),  # 13
        Cpu("asm", "assemble", 1, threads=2),  # 14
    ),
)


def test_analysis_answers_the_static_questions_in_one_walk():
    a = analyze(FALLBACK)
    assert a.valid and a.labels == {"small": 7, "done": 10}
    assert [bool(h) for h in a.locks_held] == [False] * 3 + [True] * 9 + [False] * 3
    assert a.locks_held[8] == frozenset({"gpu"})  # the fallback path holds it too
    assert a.memory_all_locked
    assert a.section_mutexes == {("gpu", True)}
    assert a.cpu_demand == 3 + 2
    assert [i for i, m in enumerate(a.mergeable) if m] == [1]
    assert [i for i, t in enumerate(a.host_touching) if t] == [12, 13, 14]


def test_analysis_sees_a_free_outside_the_lock_and_an_unjoined_helper():
    plan = Plan(
        "p",
        (Lock("gpu"), Alloc("a", 8), Unlock("gpu"), Free("a"), Cpu("c", "prep_msm", 1, stream="x")),
    )
    a = analyze(plan)
    assert not a.memory_all_locked  # the free at steps[3] runs unlocked
    assert a.cpu_demand == math.inf  # helper stream x never joined by a sync


def test_a_host_pin_under_a_mutex_defeats_the_section_precondition():
    plan = Plan("p", (Lock("gpu"), Alloc("h", 8, memory="host_pinned"), Unlock("gpu")))
    assert not analyze(plan).memory_all_locked


def test_analysis_problems_are_the_validator_messages():
    plan = Plan("p", (Label("x"), Goto("x")))
    assert analyze(plan).problems == (
        "steps[1] (goto): jumps backwards to label 'x' (steps[0]); plans must make forward "
        "progress",
    )


# --- a worker on a bare machine (no engine, no Simulation) ---


def bare_machine(record=True, vram=100 * MIB):
    env = simpy.Environment()
    machine = Machine(env, HostMemory(env, 10**6), HostCores(env, 4), Recorder(record))
    return machine, SimDevice(0, DeviceMemory(0, vram))


def test_a_worker_runs_a_plan_on_a_bare_machine():
    # toy profile: kernel/cpu `size` seconds, copy 1 byte/s
    plan = Plan(
        "p",
        (
            Alloc("x", 10 * MIB),
            Copy("up", 3),  # 0..3
            Kernel("k", "ntt", 2),  # 3..5
            Free("x"),  # at 5
            Cpu("asm", "assemble", 1),  # 5..6
        ),
    )
    m, dev = bare_machine()
    w = Worker("w", dev)
    cp = compile_plan(plan, toy_profile())
    proc = m.env.process(run_plain(m, w, cp, "p/0", cp.seconds))
    m.env.run()
    assert proc.value is True and m.env.now == 6.0
    spans = [(s.name, s.start_s, s.end_s) for s in m.recorder.spans]
    assert spans == [("up", 0.0, 3.0), ("k", 3.0, 5.0), ("asm", 5.0, 6.0)]
    dev.memory.settle(m.env.now, m.recorder.samples)
    assert m.recorder.samples == [(0.0, 0, 10 * MIB), (5.0, 0, 0)]
    assert dev.memory.peak_used == 10 * MIB and not dev.memory.live


def test_a_worker_panics_on_a_bare_machine_and_unwinds():
    plan = Plan("p", (Lock("gpu"), Alloc("a", 60 * MIB), Alloc("b", 60 * MIB), Unlock("gpu")))
    m, dev = bare_machine()
    w = Worker("w", dev)
    cp = compile_plan(plan, toy_profile())
    proc = m.env.process(run_plain(m, w, cp, "p/0", cp.seconds))
    m.env.run()
    assert proc.value is False
    [oom] = m.recorder.oom_events
    assert (oom.buffer, oom.free_bytes, oom.fatal) == ("b", 40 * MIB, True)
    assert not dev.memory.live and not w.held  # unwound: buffer freed, mutex released
    assert m.mutexes[("gpu", 0)].owner is None


# --- allocators: rounding is a parameter; one class per allocator ---


@pytest.mark.parametrize(
    ("allocator", "granularity", "ask", "charged", "used"),
    [
        ("sync", 2 * MIB, 1, 2 * MIB, 2 * MIB),  # cudaMalloc's 2 MiB default
        ("async", 32 * MIB, 33 * MIB, 64 * MIB, 64 * MIB),  # e.g. a measured 32 MiB granule
        # CuPy's 512 B chunks; the chunk's segment is a cudaMalloc of 2 MiB granules (the
        # granule measured on the H200, docs/validation.md): the device gives 2 MiB
        ("caching", 512, 513, 1024, 2 * MIB),
        ("caching", MIB, 513, MIB, 2 * MIB),
    ],
)
def test_each_allocator_rounds_to_its_granularity(allocator, granularity, ask, charged, used):
    mem = DeviceMemory(0, total=1024 * MIB, granularity={allocator: granularity})
    buf = mem.try_alloc("w", "x", ask, allocator)
    assert buf.bytes == charged and mem.used == used
    mem.release("w", "x")
    mem.check_ledger()


def test_an_unknown_allocator_granularity_is_refused():
    with pytest.raises(ValueError, match="unknown allocator"):
        DeviceMemory(0, total=MIB, granularity={"bogus": 1})


def test_the_allocators_are_registered_by_the_plan_names():
    assert set(ALLOCATORS) == {"sync", "async", "caching"}


def test_host_memory_renames_a_leaked_pin():
    env = simpy.Environment()
    ram = HostMemory(env, 100)
    assert ram.try_pin("w", "h", 10, False)
    ram.rename("w", "h", "h#leak1")
    assert ram.ledger()["w"] == {"h#leak1": 10} and ram.used == 10


# --- the fast layer equals the plain interpreter ---


@st.composite
def rich_plans(draw):
    """Plans with fallbacks (memory-aware allocations), gotos, helper-thread CPU steps
    joined by syncs, async allocations and trimming syncs, per-device caches, optionally
    every memory step inside one device mutex."""
    locked = draw(st.booleans())
    allocator = draw(st.sampled_from(["sync", "async", "caching"]))
    steps: list = []
    for i in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["buffer", "fallback", "cache", "helper", "kernels"]))
        size = draw(st.integers(1, 50)) * MIB
        body: list = []
        if kind == "buffer":
            body = [Alloc(f"b{i}", size, allocator=allocator), Kernel("k", "ntt", 1), Free(f"b{i}")]
        elif kind == "fallback":
            body = [
                Alloc(f"f{i}", size, margin=draw(st.integers(0, 20)) * MIB, fallback=f"L{i}"),
                Kernel("k", "msm_g1", 2),
                Free(f"f{i}"),
                Goto(f"E{i}"),
                Label(f"L{i}"),
                Alloc(f"s{i}", size // 4, allocator=allocator),
                Free(f"s{i}"),
                Label(f"E{i}"),
            ]
        elif kind == "cache":
            body = [Alloc("cache", size, persistent=True, per_device=True)]
        elif kind == "helper":
            body = [Cpu("prep", "prep_msm", 1, threads=2, stream="prep"), Kernel("k", "ntt", 1)]
            body += [Sync("prep")]
        else:
            body = [Kernel("a", "ntt", 1), Kernel("b", "ntt", 2), Copy("c", 1, stream="up")]
            body += [Sync("up"), Sync("compute")]
        memory = any(isinstance(s, (Alloc, Free)) for s in body)
        steps += [Lock("gpu"), *body, Unlock("gpu")] if locked and memory else body
    return Plan("rich", tuple(steps))


rich_configs = st.fixed_dictionaries(
    {
        "workers": st.integers(1, 3),
        "gpus": st.integers(1, 2),
        "partitions": st.integers(1, 3),
        "vram": st.integers(30, 150).map(lambda m: m * MIB),
        "routing": st.sampled_from(["assigned", "device0"]),
        "pool_release_threshold": st.sampled_from([0, 2**64 - 1]),
        "host_cores": st.sampled_from([1, 3, 10**4]),
    }
)
EXACT_OFF = FastPaths(
    merge_kernels=True,
    inline_steps=False,
    section_stamping=False,
    section_replay=False,
    helper_without_process=False,
    arithmetic_cpu=True,
)


# The plain interpreter with the engine's choice of CPU model left as it is: pricing CPU
# steps through the shared cores (at full speed) instead of arithmetically moves where
# workers yield, and engine slots go in the order workers reach them (docs/simulator.md,
# "Engines"), so that choice is checked apart, where no engine is shared outside a mutex.
PLAIN = dataclasses.replace(FastPaths.none(), arithmetic_cpu=True)


@given(rich_plans(), rich_configs, st.booleans())
def test_fast_layer_equals_the_plain_interpreter_on_rich_plans(plan, cfg, record):
    plan.validate()
    fast = run_plan(plan, proofs=4, record=record, **cfg)[1]
    exact = run_plan(plan, proofs=4, record=record, fast=EXACT_OFF, **cfg)[1]
    assert json.dumps(fast.to_dict()) == json.dumps(exact.to_dict())
    plain = run_plan(plan, proofs=4, record=record, fast=PLAIN, **cfg)[1]
    assert_close(fast.to_dict(), plain.to_dict())


def assert_close(a, b, path="result"):
    """Equal, floats up to rounding (merged kernels and arithmetic CPU sum in another
    order); log lines compared by text and time; peak core demand is only counted when
    cores are shared."""
    if isinstance(a, float) or isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-9), path
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            if k != "peak_core_demand":
                assert_close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_close(x, y, f"{path}[{i}]")
    elif isinstance(a, str) and path.startswith("result.log"):
        (ta, _, la), (tb, _, lb) = a.partition(" "), b.partition(" ")
        assert la == lb and float(ta) == pytest.approx(float(tb), abs=2e-3), path
    else:
        assert a == b, path


BUNDLED = sorted(
    p
    for p in glob.glob(str(ROOT / "scenarios" / "*.toml"))
    + glob.glob(str(ROOT / "scenarios" / "gate" / "*.toml"))
    if "farm" not in p  # a day of 8 GPUs: benchmarks/sim_farm.py
)


@pytest.mark.slow
@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: Path(p).stem)
def test_fast_layer_equals_the_plain_interpreter_on_every_bundled_scenario(path):
    from cuzk_sim.results.recording import Timeline
    from cuzk_sim.scenario import load_scenario
    from cuzk_sim.simulate.runner import simulate, simulate_recorded

    scn = load_scenario(path)
    fast = simulate(scn).to_dict()
    assert json.dumps(fast) == json.dumps(simulate(scn, record=True).to_dict())
    traced = simulate_recorded(scn, Timeline()).to_dict()  # what --trace / --plot run
    assert json.dumps(fast) == json.dumps(traced)
    assert json.dumps(fast) == json.dumps(simulate(scn, fast=EXACT_OFF).to_dict())
    assert_close(fast, simulate(scn, fast=FastPaths.none()).to_dict())


def test_a_thousand_fallbacks_keep_a_bounded_number_of_ledger_copies():
    """Issue 15: 1,000 fallback allocations in one plan reached 8 GiB (each fallback event
    kept a copy of the ledger). The first FALLBACK_LEDGERS keep one, later ones `{}`."""
    from cuzk_sim.plan.contract import Label
    from cuzk_sim.steps.alloc import FALLBACK_LEDGERS

    steps = [Alloc(f"live{i}", 2 * MIB) for i in range(20)]  # 20 live buffers, 40 MiB
    for i in range(1000):  # each asks for more than the card, then falls back past itself
        steps += [Alloc(f"big{i}", 10**6 * MIB, fallback=f"after{i}"), Label(f"after{i}")]
    m, dev = bare_machine(record=False, vram=100 * MIB)
    cp = compile_plan(Plan("p", tuple(steps)), toy_profile())
    proc = m.env.process(run_plain(m, Worker("w", dev), cp, "p/0", cp.seconds))
    m.env.run()
    assert proc.value is True
    events = m.recorder.oom_events
    assert len(events) == 1000 and not any(e.fatal for e in events)
    kept = [e for e in events if e.ledger]
    assert len(kept) == FALLBACK_LEDGERS == 16
    assert events[0].ledger["w"] == {f"live{i}": 2 * MIB for i in range(20)}
    assert all(e.ledger == {} for e in events[FALLBACK_LEDGERS:])
