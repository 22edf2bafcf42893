"""compare_plans: buffer for buffer, names aside. The oracle is our prover's dry-run
plan itself, renamed the way an import names buffers (which must compare equal), then
changed by hand: one size, one lifetime, one extra allocation (each must be named)."""

import dataclasses

from cuzk_sim.gpu.flags import ProverFlags
from cuzk_sim.gpu.prover import PartitionShape, dry_run_plan

from cuzk_sim.capture.compare import compare_plans
from cuzk_sim.capture.to_plan import size_tag
from cuzk_sim.plan import Alloc, Free, Plan


def reference() -> Plan:
    flags = ProverFlags(allocator="sync", key_pinned=True)
    return dry_run_plan(PartitionShape.synthetic(10, "bellman"), flags, None)


def renamed(plan: Plan) -> Plan:
    names, steps = {}, []
    for s in plan.steps:
        if isinstance(s, Alloc):
            names[s.buffer] = f"d{len(names)}_{size_tag(s.bytes)}"
            steps.append(dataclasses.replace(s, buffer=names[s.buffer]))
        elif isinstance(s, Free):
            steps.append(dataclasses.replace(s, buffer=names.get(s.buffer, s.buffer)))
        else:
            steps.append(s)
    return Plan("captured", tuple(steps))


def test_renamed_plan_is_equal():
    ref = reference()
    c = compare_plans(renamed(ref), ref)
    assert c.equal and c.differences == ()
    assert c.allocations[0] == c.allocations[1] == len(ref.buffers()) > 10


def test_a_changed_size_is_named():
    ref = reference()
    steps = list(renamed(ref).steps)
    i = next(i for i, s in enumerate(steps) if isinstance(s, Alloc) and s.memory == "device")
    steps[i] = dataclasses.replace(steps[i], bytes=steps[i].bytes + 512)
    c = compare_plans(Plan("c", tuple(steps)), ref)
    assert not c.equal and c.differences[0].startswith(
        f"event {_event_index(steps, i)}: captured alloc"
    )


def test_a_moved_free_is_named():
    ref = reference()
    steps = list(renamed(ref).steps)
    frees = [i for i, s in enumerate(steps) if isinstance(s, Free)]
    j = frees[0]
    late = steps.pop(j)
    steps.append(late)  # the buffer now lives to the end
    c = compare_plans(Plan("c", tuple(steps)), ref)
    assert not c.equal and "captured" in c.differences[0]


def test_an_extra_allocation_is_named():
    ref = reference()
    extra = Plan("c", (*renamed(ref).steps, Alloc("cupy_pool", 2 << 20)))
    c = compare_plans(extra, ref)
    assert not c.equal and c.allocations == (len(ref.buffers()) + 1, len(ref.buffers()))
    assert c.differences[-1].startswith("captured has")


def _event_index(steps, i):
    return sum(isinstance(s, (Alloc, Free)) for s in steps[:i])
