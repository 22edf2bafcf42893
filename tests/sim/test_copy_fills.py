"""A copy that `fills` a persistent per-device buffer (plan.Copy.fills): charged by the
first partition on a device, skipped by every later one there, with the fast layer (its
section replay too) and with the plain interpreter alike; refused by the plan checks when
it names no such buffer. Expected times by hand on the toy profile (every kernel `size`
seconds, copies 1 B/s, synthesis of the toy shape ends at 11 s)."""

import pytest
from sim_toys import MIB, run_plan

from cuzk_sim.model.fast import FastPaths
from cuzk_sim.plan.contract import Alloc, Copy, Kernel, Lock, Plan, PlanError, Unlock

FAST = [FastPaths(), FastPaths.none()]


def _resident_plan(copy_bytes: int = 3) -> Plan:
    return Plan(
        "p",
        (
            Lock("gpu", "device"),
            Alloc("key", MIB, "sync", persistent=True, per_device=True, note="key_resident"),
            Copy("up_key", copy_bytes, "HtoD", fills="key"),
            Kernel("k", "ntt", 2),
            Unlock("gpu", "device"),
        ),
    )


def _partition_spans(result) -> list[tuple[float, float]]:
    return sorted((s.start_s, s.end_s) for s in result.spans if s.cat == "partition")


@pytest.mark.parametrize("fast", FAST, ids=["fast", "plain"])
def test_the_first_partition_on_a_device_pays_the_copy_and_the_later_ones_do_not(fast):
    # one worker, 3 partitions from 11 s: 11-14 copy + 14-16 kernel; then 16-18, 18-20
    _, r = run_plan(_resident_plan(), workers=1, partitions=3, record=True, fast=fast)
    assert [e for _, e in _partition_spans(r)] == [16.0, 18.0, 20.0]
    assert [s.name for s in r.spans if s.cat == "copy"] == ["up_key"]
    _, one = run_plan(_resident_plan(), workers=1, partitions=1, fast=fast)
    assert r.peak_vram_bytes[0] == one.peak_vram_bytes[0] > 0  # one buffer, kept
    assert sum("key_resident allocated" in line for _, line in r.log) == 1


@pytest.mark.parametrize("fast", FAST, ids=["fast", "plain"])
def test_two_workers_of_one_device_share_the_filled_buffer(fast):
    # w0 11-14 copy, 14-16 kernel; w1 waits for the lock, finds the key filled: 16-18
    _, r = run_plan(_resident_plan(), workers=2, partitions=2, record=True, fast=fast)
    assert [e for _, e in _partition_spans(r)] == [16.0, 18.0]
    assert len([s for s in r.spans if s.cat == "copy"]) == 1


@pytest.mark.parametrize("fast", FAST, ids=["fast", "plain"])
def test_each_device_fills_its_own_copy(fast):
    # two GPUs, one worker each, 4 partitions: each device's first pays 3 s, its second not
    _, r = run_plan(_resident_plan(), workers=1, partitions=4, gpus=2, record=True, fast=fast)
    assert [e for _, e in _partition_spans(r)] == [16.0, 16.0, 18.0, 18.0]
    assert len([s for s in r.spans if s.cat == "copy"]) == 2


def test_section_replay_charges_the_same_as_the_plain_interpreter():
    # no trace: the fast layer may replay the sections that start with the key resident
    times = []
    for fast in FAST:
        _, r = run_plan(_resident_plan(5), workers=1, partitions=6, fast=fast)
        times.append(r.sim_time_s)
    assert times == [pytest.approx(11 + 5 + 6 * 2)] * 2


def test_without_fills_every_partition_pays_the_copy():
    steps = list(_resident_plan().steps)
    steps[2] = Copy("up_key", 3, "HtoD")
    _, r = run_plan(Plan("p", tuple(steps)), workers=1, partitions=3, record=True)
    assert [e for _, e in _partition_spans(r)] == [16.0, 21.0, 26.0]


@pytest.mark.parametrize(
    "alloc",
    [
        Alloc("key", MIB, "sync", persistent=True),  # not per device
        Alloc("key", MIB, "sync", per_device=True),  # not persistent
        Alloc("other", MIB, "sync", persistent=True, per_device=True),  # another buffer
    ],
)
def test_a_copy_that_fills_no_persistent_per_device_buffer_is_refused(alloc):
    plan = Plan("bad", (alloc, Copy("up", 3, "HtoD", fills="key")))
    with pytest.raises(PlanError, match=r"steps\[1\] \(copy\)\.fills names 'key'"):
        plan.validate("bad.json")


def test_fills_round_trips_through_json_and_a_bad_type_is_named():
    plan = _resident_plan()
    assert Plan.from_json(plan.to_json()).steps == plan.steps
    data = plan.to_dict()
    data["steps"][2]["fills"] = 7
    with pytest.raises(ValueError, match=r"steps\[2\] \(copy\)\.fills"):
        Plan.from_dict(data, "p.json")
