"""A kernel that `fills` a persistent per-device buffer (plan.Kernel.fills), beside the copy
that fills it first: the partition that begins the fill runs both, every later one on that
device skips both (plain interpreter and fast layer alike; a fills kernel never merges
into a kernel run); refused by the plan checks when it names no such buffer. Expected
times by hand on the toy profile (every kernel `size` seconds, copies 1 B/s, synthesis of
the toy shape ends at 11 s). Then our prover's key_tables plan over partitions."""

import pytest
from cuzk_sim.gpu.flags import ProverFlags
from cuzk_sim.gpu.msm_tables import TABLE_BUILD_MSM_POINTS
from cuzk_sim.gpu.prover import PartitionShape, dry_run_plan
from sim_toys import MIB, run_plan

from cuzk_sim.model.fast import FastPaths
from cuzk_sim.plan.contract import Alloc, Copy, Kernel, Lock, Plan, PlanError, Unlock

FAST = [FastPaths(), FastPaths.none()]


def _table_plan() -> Plan:
    return Plan(
        "p",
        (
            Lock("gpu", "device"),
            Alloc("table", MIB, "sync", persistent=True, per_device=True, note="key_tables"),
            Kernel("before", "ntt", 1),
            Copy("up_points", 3, "HtoD", fills="table"),
            Kernel("build", "msm_g1", 5, fills="table"),
            Kernel("msm", "msm_g1", 2),
            Unlock("gpu", "device"),
        ),
    )


def _ends(plan: Plan, **kw) -> tuple[list[float], object]:
    _, r = run_plan(plan, workers=kw.pop("workers", 1), record=True, **kw)
    return sorted(s.end_s for s in r.spans if s.cat == "partition"), r


@pytest.mark.parametrize("fast", FAST, ids=["fast", "plain"])
def test_the_first_partition_pays_the_copy_and_the_build_and_the_later_ones_neither(fast):
    # from 11 s: 1 + 3 + 5 + 2 = 11 s, then 1 + 2 = 3 s each
    ends, r = _ends(_table_plan(), partitions=3, fast=fast)
    assert ends == [22.0, 25.0, 28.0]
    assert [s.name for s in r.spans if s.cat == "kernel"].count("build") == 1


@pytest.mark.parametrize("fast", FAST, ids=["fast", "plain"])
def test_two_workers_of_a_device_share_the_build_and_each_device_builds_its_own(fast):
    ends, _ = _ends(_table_plan(), partitions=2, workers=2, fast=fast)
    assert ends == [22.0, 25.0]  # the second worker waits for the lock, finds it built
    ends, r = _ends(_table_plan(), partitions=4, gpus=2, fast=fast)
    assert ends == [22.0, 22.0, 25.0, 25.0]
    assert [s.name for s in r.spans if s.cat == "kernel"].count("build") == 2


def test_without_record_the_fast_layer_charges_what_the_interpreter_does():
    times = []
    for fast in FAST:
        _, r = run_plan(_table_plan(), workers=1, partitions=5, fast=fast)
        times.append(r.sim_time_s)
    assert times == [pytest.approx(11 + 11 + 4 * 3)] * 2


def test_without_fills_every_partition_pays_the_build():
    steps = list(_table_plan().steps)
    steps[4] = Kernel("build", "msm_g1", 5)
    ends, _ = _ends(Plan("p", tuple(steps)), partitions=2)
    assert ends == [22.0, 30.0]  # 1 + 5 + 2: the copy still skipped


def test_a_kernel_that_fills_no_persistent_per_device_buffer_is_refused():
    plan = Plan("bad", (Alloc("t", MIB, "sync", persistent=True), Kernel("b", "ntt", 1, fills="t")))
    with pytest.raises(PlanError, match=r"steps\[1\] \(kernel\)\.fills names 't'"):
        plan.validate("bad.json")


def test_kernel_fills_round_trips_through_json_and_a_bad_type_is_named():
    plan = _table_plan()
    assert Plan.from_json(plan.to_json()).steps == plan.steps
    data = plan.to_dict()
    data["steps"][4]["fills"] = 7
    with pytest.raises(ValueError, match=r"steps\[4\] \(kernel\)\.fills"):
        Plan.from_dict(data, "p.json")


@pytest.mark.parametrize("fast", FAST, ids=["fast", "plain"])
def test_the_provers_tables_are_uploaded_and_built_once_per_device(fast):
    # our prover's key_tables plan at 2^4 on the toy profile: the first partition pays the
    # five point uploads (1 s per byte) and the five builds (TABLE_BUILD_MSM_POINTS x the
    # points, in seconds), the later ones neither
    n = 1 << 4
    plan = dry_run_plan(
        PartitionShape.synthetic(4), ProverFlags(key_resident=True, key_tables=True)
    )
    ends, r = _ends(plan, partitions=3, fast=fast, vram=1000 * MIB)
    g1 = (n - 1) + n + n + (n - 2)  # h, a, b_g1, l
    uploads, builds = 96 * g1 + 192 * n, 35 * g1 + 18 * n
    assert (uploads, builds) == (8928, 2423)
    assert TABLE_BUILD_MSM_POINTS == {"g1": 35, "g2": 18}  # the prices the line above uses
    first, steady = ends[0] - 11.0, ends[1] - ends[0]
    assert ends[2] - ends[1] == steady
    assert first - steady == uploads + builds
    assert sum(s.name.endswith(".table.build") for s in r.spans if s.cat == "kernel") == 5
    assert sum(line.startswith("key_tables.") for _, line in r.log) == 5  # allocated once
    _, two = _ends(plan, partitions=4, gpus=2, fast=fast, vram=1000 * MIB)
    assert sum(s.name.endswith(".table.build") for s in two.spans if s.cat == "kernel") == 10
