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


def test_the_compare_script_matches_times_by_copies():
    """benchmarks/capture_compare.py's time matching, by hand: a reference upload,
    two kernel steps, a result copy; the capture has the upload, three kernels and a
    memset for those two steps, and the result copy."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import capture_compare

    from cuzk_sim.plan import Copy, Kernel

    MiB = 1 << 20
    ref = Plan("ref", (Copy("u1", 8 * MiB, "HtoD", True), Kernel("k1", "ntt", 1),
                       Kernel("k2", "msm_g1", 1), Copy("r1", 2048, "DtoH", False)))  # fmt: skip
    cap = Plan("cap", (Copy("c0", 8 * MiB, "HtoD", True, seconds=1.0e-3),
                       Kernel("a", "captured", 0, seconds=0.3e-3),
                       Kernel("b", "captured", 0, seconds=0.3e-3),
                       Kernel("memset", "memset", 64, seconds=0.05e-3),
                       Kernel("c", "captured", 0, seconds=0.2e-3),
                       Copy("c1", 2048, "DtoH", False, seconds=0.01e-3)))  # fmt: skip
    ms = {"u1": 1.02, "k1": 0.5, "k2": 0.36, "r1": 0.0102}
    details = {"steps": {k: {"n": 1, "gpu_ms": v} for k, v in ms.items()}}
    rows = capture_compare.timing_rows(cap, ref, details)
    got = [(w, round(a * 1e3, 6), round(b * 1e3, 6)) for w, a, b in rows]
    assert got == [
        ("copy u1", 1.0, 1.02),
        ("kernels k1 .. k2 (2 steps)", 0.85, 0.86),  # 0.3 + 0.3 + 0.05 + 0.2; 0.5 + 0.36
        ("copy r1", 0.01, 0.0102),
    ]
