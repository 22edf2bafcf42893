"""The timeline of two workers sharing one device mutex, asserted tuple by tuple
(SimPy's own test style). Toy profile: a kernel or cpu step of size s takes s seconds,
a copy of b bytes takes b seconds; synthesis of the toy circuit takes 10 s, the PCE load 1 s.
"""

from sim_toys import run_plan

from cuzk_sim.model.fast import FastPaths
from cuzk_sim.plan.contract import Alloc, Copy, Cpu, Free, Kernel, Lock, Plan, Unlock

MIB = 2**20

PLAN = Plan(
    "two-step",
    (
        Lock("gpu"),
        Alloc("x", 10 * MIB),
        Copy("c", 3),
        Kernel("k", "ntt", 2),
        Free("x"),
        Unlock("gpu"),
        Cpu("assemble", "assemble", 1),
    ),
)


def test_two_workers_serialise_on_the_device_mutex():
    _, result = run_plan(PLAN, workers=2, proofs=1, partitions=2, record=True)
    log = sorted((s.start_s, s.end_s, s.track, s.name) for s in result.spans)
    # PCE load 0..1 s, synthesis 1..11 s; both partitions handed out at t = 11
    assert log == [
        (1.0, 11.0, "synth0", "toy-0"),
        (11.0, 14.0, "gpu0-w0", "c"),
        (11.0, 16.0, "gpu0-w0", "hold gpu"),
        (11.0, 16.0, "gpu0-w1", "wait gpu"),
        (11.0, 17.0, "gpu0-w0", "toy-0/0"),
        (11.0, 22.0, "gpu0-w1", "toy-0/1"),
        (14.0, 16.0, "gpu0-w0", "k"),
        (16.0, 17.0, "gpu0-w0", "assemble"),
        (16.0, 19.0, "gpu0-w1", "c"),
        (16.0, 21.0, "gpu0-w1", "hold gpu"),
        (19.0, 21.0, "gpu0-w1", "k"),
        (21.0, 22.0, "gpu0-w1", "assemble"),
    ]
    assert result.vram_samples == [
        (11.0, 0, 10 * MIB),
        (16.0, 0, 0),
        (16.0, 0, 10 * MIB),
        (21.0, 0, 0),
    ]
    assert result.proof_done_times == [("toy-0", "toy", 22.0)]
    assert result.seconds_per_proof == 22.0  # one proof: submitted at 0, done at 22


def test_fast_path_gives_the_same_result_as_the_plain_interpreter():
    """With the fast layer, critical sections run without wake-ups and are replayed once
    learnt; nothing observable moves against the plain interpreter."""
    _, fast = run_plan(PLAN, workers=2, proofs=3, partitions=2)
    _, slow = run_plan(PLAN, workers=2, proofs=3, partitions=2, fast=FastPaths.none())
    assert fast.proof_done_times == slow.proof_done_times
    assert fast.peak_vram_bytes == slow.peak_vram_bytes


def test_the_plain_interpreter_gives_the_exact_timeline():
    """The same hand-computed timeline with every speed-up off."""
    _, result = run_plan(
        PLAN, workers=2, proofs=1, partitions=2, record=True, fast=FastPaths.none()
    )
    assert result.proof_done_times == [("toy-0", "toy", 22.0)]
    holds = sorted((s.start_s, s.end_s, s.track) for s in result.spans if s.cat == "lock")
    assert holds == [(11.0, 16.0, "gpu0-w0"), (11.0, 16.0, "gpu0-w1"), (16.0, 21.0, "gpu0-w1")]


def test_without_mutex_both_workers_allocate_at_once_and_the_second_ooms():
    plan = Plan("nolock", (Alloc("x", 60 * MIB), Kernel("k", "ntt", 2), Free("x")))
    _, result = run_plan(plan, workers=2, partitions=2)
    assert result.oom
    [event] = result.oom_events
    assert (event.time_s, event.worker, event.buffer) == (11.0, "gpu0-w1", "x")
    assert event.free_bytes == 40 * MIB and event.requested_bytes == 60 * MIB
    assert event.ledger["gpu0-w0"] == {"x": 60 * MIB}
    assert result.partitions_failed == 1 and result.proofs_failed == 1


def test_fallback_is_taken_and_logged_like_cuzk():
    plan = Plan.from_dict(
        {
            "steps": [
                {
                    "op": "alloc",
                    "buffer": "stage",
                    "bytes": 200 * MIB,
                    "fallback": "slow",
                    "note": "prestage_setup",
                },
                {"op": "goto", "label": "done"},
                {"op": "label", "name": "slow"},
                {"op": "alloc", "buffer": "small", "bytes": MIB},
                {"op": "free", "buffer": "small"},
                {"op": "label", "name": "done"},
                {"op": "free", "buffer": "stage"},
            ]
        }
    )
    _, result = run_plan(plan)
    assert not result.oom
    assert [line for _, line in result.log if "prestage" in line] == [
        "CUZK_TIMING: prestage_setup=fallback err=2"
    ]
    assert result.peak_vram_bytes == {0: 2 * MIB}  # 1 MiB rounded up to the 2 MiB granule


def test_memory_aware_margin_skips_before_allocating():
    plan = Plan(
        "aware",
        (
            Alloc("stage", 90 * MIB, margin=20 * MIB, fallback="skip", note="prestage_setup"),
            Free("stage"),
        )
        + (Plan.from_dict({"steps": [{"op": "label", "name": "skip"}]}).steps),
    )
    _, result = run_plan(plan)
    assert [line for _, line in result.log if "prestage" in line] == [
        "CUZK_TIMING: prestage_setup=skip_vram"
    ]
    assert result.peak_vram_bytes == {0: 0} and not result.oom
    assert result.oom_events[0].reason == "skip_vram"


def test_fast_path_panics_at_the_same_time_as_the_traced_run():
    plan = Plan(
        "oom-in-lock",
        (
            Lock("gpu"),
            Alloc("x", 60 * MIB),
            Kernel("k", "ntt", 2),
            Alloc("y", 60 * MIB),
            Free("y"),
            Free("x"),
            Unlock("gpu"),
        ),
    )
    _, fast = run_plan(plan, workers=2, proofs=2, partitions=2)
    _, slow = run_plan(plan, workers=2, proofs=2, partitions=2, record=True)
    assert [(e.time_s, e.worker, e.buffer) for e in fast.oom_events] == [
        (e.time_s, e.worker, e.buffer) for e in slow.oom_events
    ]
    assert fast.oom_events[0].time_s == 13.0  # 11 (synthesis done) + the 2 s kernel
    assert fast.sim_time_s == slow.sim_time_s
