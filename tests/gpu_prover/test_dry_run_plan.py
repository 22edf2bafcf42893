"""The dry-run plan of the GPU prover: no GPU, no CuPy; sizes from the shape alone."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from cuzk_sim.gpu.device import Device, DeviceOutOfMemory, NotEnoughFreeMemory
from cuzk_sim.gpu.flags import ProverFlags
from cuzk_sim.gpu.msm import MsmShape
from cuzk_sim.gpu.prover import MAX_DRY_RUN_CHUNKS, PartitionShape, dry_run_plan
from typer.testing import CliRunner

from cuzk_sim.cli import app
from cuzk_sim.plan.contract import Alloc, Copy, Free, Kernel, Lock, Plan, Unlock


def _peak(plan: Plan) -> int:
    sizes, live, peak = dict(plan.buffers()), 0, 0
    for s in plan.steps:
        if isinstance(s, Alloc):
            live += s.bytes
            peak = max(peak, live)
        elif isinstance(s, Free):
            live -= sizes[s.buffer]
    return peak


def test_dry_run_at_domain_2_27_imports_no_cupy():
    code = (
        "import sys; from cuzk_sim.gpu.prover import PartitionShape, dry_run_plan;"
        "p = dry_run_plan(PartitionShape.synthetic(27)); print(len(p.steps));"
        "print('cupy' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-P", "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.split()[1] == "False"


def test_plan_sizes_follow_the_domain():
    n = 1 << 27
    plan = dry_run_plan(PartitionShape.synthetic(27))
    bufs = dict(plan.buffers())
    assert bufs["d_a"] == 32 * n  # 4 GiB, as cuzk's d_a at 2^27
    assert bufs["d_bc"] == 64 * n
    assert bufs["msm_b_g2.points"] == 192 * n  # affine G2 points
    assert bufs["msm_h.points"] == 96 * (n - 1)
    # every buffer is freed, each exactly once, and nothing leaks past the plan
    allocs = [s.buffer for s in plan.steps if isinstance(s, Alloc)]
    frees = [s.buffer for s in plan.steps if isinstance(s, Free)]
    assert sorted(allocs) == sorted(frees) and len(set(allocs)) == len(allocs)
    kinds = {s.kind for s in plan.steps if isinstance(s, Kernel)}
    assert kinds == {"ntt", "pointwise", "msm_g1", "msm_g2"}
    assert [s.name for s in plan.steps if isinstance(s, Kernel) and s.kind.startswith("msm")] == [
        "msm_h",
        "msm_a",
        "msm_b_g1",
        "msm_b_g2",
        "msm_l",
    ]


def test_msm_scratch_bytes_by_hand():
    # 2^20 points: target window 16 -> 16 windows of 15-16 bits, 2^16 buckets each
    s = MsmShape.of("g1", 1 << 20)
    assert (s.c, s.windows) == (16, 16)
    assert s.scratch()["order"] == 4 * (1 << 20) * 16
    assert s.scratch()["buckets"] == 4 * (16 << 16) * 36  # Jacobian G1 = 3 x 12 words


def test_free_bc_early_lowers_the_peak():
    early = dry_run_plan(PartitionShape.synthetic(20), ProverFlags(free_bc_early=True))
    late = dry_run_plan(PartitionShape.synthetic(20), ProverFlags(free_bc_early=False))
    assert _peak(late) - _peak(early) == 64 << 20  # d_bc = 2 x 32 B x 2^20 stays alive


def test_prestage_allocates_and_uploads_before_the_lock():
    plan = dry_run_plan(PartitionShape.synthetic(16), ProverFlags(prestage=True, pinned=True))
    lock = next(i for i, s in enumerate(plan.steps) if isinstance(s, Lock))
    d_a = next(i for i, s in enumerate(plan.steps) if isinstance(s, Alloc) and s.buffer == "d_a")
    up = next(s for s in plan.steps if isinstance(s, Copy) and s.name == "upload_bc")
    assert d_a < lock and up.pinned and up.stream == "upload"
    assert isinstance(plan.steps[-2], Unlock)


def test_memory_aware_prestage_falls_back_inside_the_lock():
    shape = PartitionShape.synthetic(16)
    flags = ProverFlags(prestage=True, memory_aware=True, margin_bytes=512 << 20)
    from cuzk_sim.gpu.prover import partition

    dev = Device("dry-run", assume_free_bytes=100 << 20)  # less than the margin
    partition(dev, shape, flags, None)
    lock = next(i for i, s in enumerate(dev.steps) if isinstance(s, Lock))
    d_a = next(i for i, s in enumerate(dev.steps) if isinstance(s, Alloc) and s.buffer == "d_a")
    assert d_a > lock
    dev2 = Device("dry-run", assume_free_bytes=8 << 30)
    partition(dev2, shape, flags, None)
    first = dev2.steps[0]
    assert isinstance(first, Alloc) and first.buffer == "d_a" and first.margin == 512 << 20


def test_device_layer_errors_are_typed():
    dev = Device("dry-run")
    dev.alloc("x", 64)
    with pytest.raises(RuntimeError, match="'x' allocated twice"):
        dev.alloc("x", 64)
    with pytest.raises(RuntimeError, match="'y' that is not allocated"):
        dev.free("y")
    with pytest.raises(ValueError, match="Device.mode"):
        Device("fast")  # type: ignore[arg-type]
    e = NotEnoughFreeMemory("d_a", 10, 5, 1)
    assert isinstance(e, DeviceOutOfMemory) and "d_a" in str(e) and "gpu 1" in str(e)


def test_cli_gpu_plan_json_round_trips():
    res = CliRunner().invoke(app, ["gpu-plan", "--domain-log2", "27", "--json"])
    assert res.exit_code == 0, res.output
    plan = Plan.from_json(res.output)
    assert dict(plan.buffers())["d_a"] == 4 << 30
    text = CliRunner().invoke(app, ["gpu-plan", "--domain-log2", "10"])
    assert text.exit_code == 0 and "peak device bytes" in text.output
    bad = CliRunner().invoke(app, ["gpu-plan", "--domain-log2", "40"])
    assert bad.exit_code != 0 and "domain-log2" in bad.output
    assert json.loads(res.output)["meta"]["domain_size"] == 1 << 27


def test_msm_chunks_lower_the_peak_and_repeat_the_uploads():
    shape = PartitionShape.synthetic(20)
    whole = dry_run_plan(shape)
    chunked = dry_run_plan(shape, ProverFlags(msm_chunk=1 << 18))
    assert dict(chunked.buffers())["msm_b_g2.points"] == 192 << 18
    # G2 points 192 MiB -> 48 MiB, and the G2 MSM's order buffer shrinks with the chunk
    assert _peak(chunked) < _peak(whole) - (144 << 20)
    g2_kernels = [s for s in chunked.steps if isinstance(s, Kernel) and s.name == "msm_b_g2"]
    assert [k.size for k in g2_kernels] == [1 << 18] * 4
    uploads = [s for s in chunked.steps if isinstance(s, Copy) and s.name == "upload_msm_l_points"]
    assert sum(u.bytes for u in uploads) == 96 * ((1 << 20) - 2)  # every point exactly once


def test_flag_errors_name_the_field():
    with pytest.raises(ValueError, match="msm_chunk"):
        ProverFlags(msm_chunk=0)
    res = CliRunner().invoke(app, ["gpu-plan", "--domain-log2", "12", "--msm-chunk", "-1"])
    assert res.exit_code != 0 and "msm-chunk" in res.output


def test_dry_run_refuses_a_chunk_count_no_plan_can_hold(monkeypatch):
    """msm_chunk = 1 at 2^27 would mean 5 x 2^27 chunk uploads and MSMs: the dry run used
    to build that plan for ever. It now refuses at once and names the smallest chunk it
    accepts; that chunk, and one below it, are checked against the bound by hand (under a
    bound of 2^10 chunks, so that the accepted plan is small enough to build in a test;
    the CLI below runs with the real bound)."""
    import cuzk_sim.gpu.prover as prover

    bound = 1 << 10
    monkeypatch.setattr(prover, "MAX_DRY_RUN_CHUNKS", bound)
    shape = PartitionShape.synthetic(27)
    with pytest.raises(ValueError, match=r"msm_chunk=1 .* at least (\d+)") as refused:
        dry_run_plan(shape, ProverFlags(msm_chunk=1))
    smallest = int(re.search(r"at least (\d+)", str(refused.value)).group(1))
    counts = [(1 << 27) - 1] + [1 << 27] * 3 + [(1 << 27) - 2]  # h, a, b_g1, b_g2, l

    def chunks(c: int) -> int:
        return sum(-(-n // c) for n in counts)

    assert chunks(smallest) <= bound < chunks(smallest - 1)
    plan = dry_run_plan(shape, ProverFlags(msm_chunk=smallest))
    uploads = [s for s in plan.steps if isinstance(s, Copy) and s.name.endswith("_points")]
    assert len(uploads) == chunks(smallest)
    monkeypatch.undo()
    real = -(-sum(counts) // MAX_DRY_RUN_CHUNKS)  # about the smallest chunk the real bound takes
    res = CliRunner().invoke(app, ["gpu-plan", "--domain-log2", "27", "--msm-chunk", "1"])
    assert res.exit_code == 2 and "--msm-chunk" in res.output
    named = int(re.search(r"at least (\d+)", res.output.replace("\n", " ")).group(1))
    assert chunks(named) <= MAX_DRY_RUN_CHUNKS < chunks(named - 1) and named >= real


def test_cli_gpu_plan_shows_the_memory_aware_fallback():
    """`gpu-plan --memory-aware` alone prints the plan with enough free memory; with
    --assume-free-bytes below the margin the pre-staged d_a moves inside the lock."""

    def d_a_after_lock(*args: str) -> bool:
        res = CliRunner().invoke(app, ["gpu-plan", "--domain-log2", "16", "--json", *args])
        assert res.exit_code == 0, res.output
        steps = Plan.from_json(res.output).steps
        lock = next(i for i, s in enumerate(steps) if isinstance(s, Lock))
        d_a = next(i for i, s in enumerate(steps) if isinstance(s, Alloc) and s.buffer == "d_a")
        return d_a > lock

    aware = ("--prestage", "--memory-aware", "--margin-bytes", str(512 << 20))
    assert not d_a_after_lock(*aware)
    assert not d_a_after_lock(*aware, "--assume-free-bytes", str(8 << 30))
    assert d_a_after_lock(*aware, "--assume-free-bytes", str(100 << 20))
    bad = CliRunner().invoke(app, ["gpu-plan", "--domain-log2", "16", "--assume-free-bytes", "-1"])
    assert bad.exit_code == 2 and "--assume-free-bytes" in bad.output
    bad = CliRunner().invoke(app, ["gpu-plan", "--domain-log2", "16", "--margin-bytes", "-1"])
    assert bad.exit_code == 2 and "--margin-bytes" in bad.output


def _path(plan: Plan, refused: set[str]) -> list:
    """The steps a worker executes along `plan` when the memory-aware allocations of the
    buffers in `refused` are declined: jumps taken, labels and no-op frees (of a buffer
    that is not live) dropped, the `fallback` field cleared. A plain walk by hand."""
    import dataclasses

    from cuzk_sim.plan.contract import Goto, Label

    at = {s.name: i for i, s in enumerate(plan.steps) if isinstance(s, Label)}
    out, live, i = [], set(), 0
    while i < len(plan.steps):
        s = plan.steps[i]
        i += 1
        if isinstance(s, Goto):
            i = at[s.label]
        elif isinstance(s, Alloc) and s.fallback and s.buffer in refused:
            i = at[s.fallback]
        elif isinstance(s, Alloc):
            live.add(s.buffer)
            out.append(dataclasses.replace(s, fallback=None))
        elif isinstance(s, Free):
            if s.buffer in live:
                live.discard(s.buffer)
                out.append(s)
        elif not isinstance(s, Label):
            out.append(s)
    return out


@pytest.mark.parametrize("early", [True, False])
def test_one_dry_run_records_both_branches_of_the_memory_aware_prestage(early):
    """Each path through the both-branch plan is exactly the plan of a dry run whose
    assumed free memory takes that path: enough; not enough for d_a + margin; enough for
    d_a + margin (32 B x 2^12 + 512 MiB) but not for d_bc (twice that) + margin."""
    shape = PartitionShape.synthetic(12)
    flags = ProverFlags(prestage=True, pinned=True, memory_aware=True, free_bc_early=early)
    both = dry_run_plan(shape, flags, both_branches=True)
    d_a_plus_margin = 32 * 4096 + (512 << 20)
    for refused, free in [
        (set(), None),
        ({"d_a", "d_bc"}, 0),
        ({"d_bc"}, d_a_plus_margin),
    ]:
        one = dry_run_plan(shape, flags, assume_free_bytes=free)
        assert not any(isinstance(s, Alloc) and s.fallback for s in one.steps)
        assert _path(both, refused) == list(one.steps), refused
    margin_allocs = [s for s in both.steps if isinstance(s, Alloc) and s.margin is not None]
    assert [(s.buffer, s.fallback) for s in margin_allocs] == [
        ("d_a", "prestage_declined"),
        ("d_bc", "prestage_declined"),
    ]
    msm_h = [s for s in both.steps if isinstance(s, Kernel) and s.name == "msm_h"]
    assert len(msm_h) == 1  # the branches join: the rest of the partition is recorded once


def test_both_branches_only_where_an_allocation_is_memory_aware():
    shape = PartitionShape.synthetic(12)
    flags = ProverFlags(prestage=True)  # pre-stage, no margin: nothing can fall back
    assert dry_run_plan(shape, flags, both_branches=True) == dry_run_plan(shape, flags)


def test_attempt_refuses_branches_that_end_apart_and_a_run_with_both():
    from cuzk_sim.gpu.device import Buffer

    dev = Device("dry-run", both_branches=True)

    def first() -> Buffer:
        return dev.alloc("x", 64, margin=0)

    def otherwise() -> Buffer:  # forgets x and allocates y: the paths would disagree
        return dev.alloc("y", 64)

    with pytest.raises(RuntimeError, match="'t': the branches end in different states"):
        dev.attempt("t", first, otherwise)
    with pytest.raises(ValueError, match="both_branches needs mode='dry-run'"):
        Device("real", both_branches=True)


def test_a_declined_attempt_frees_what_the_first_branch_allocated():
    dev = Device("dry-run", assume_free_bytes=60)  # the dry run does not subtract

    def first() -> str:
        dev.alloc("a", 40, margin=0)  # 40 + 0 <= 60 free: allocated
        dev.alloc("b", 80, margin=0)  # 80 + 0 > 60 free: declined
        return "first"

    assert dev.attempt("t", first, lambda: "otherwise") == "otherwise"
    assert [(s.op, getattr(s, "buffer", None)) for s in dev.steps] == [
        ("alloc", "a"),
        ("free", "a"),
    ]
    assert dev.live == {}


def test_the_signed_msm_buffers_at_2_27_by_hand():
    """The default (signed) MSM's buffers in the 2^27 plan, sizes by hand: G2, 2^27 points,
    c = 16 -> 16 windows x 2^15 buckets; Jacobian G2 = 3 x 24 words = 288 B; accumulation
    threads capped at 2^18 (2^31 entries / 2^18 = 8192 points each), 2 slots per thread;
    the first level's 2^19 slots / 16 per thread -> 2^15 threads -> 2^16 slots."""
    plan = dry_run_plan(PartitionShape.synthetic(27))
    sizes = {s.buffer: s.bytes for s in plan.steps if isinstance(s, Alloc)}
    assert sizes["msm_b_g2.buckets"] == 16 * 2**15 * 288 == 144 << 20
    assert sizes["msm_b_g2.counts"] == 4 * (16 * 2**15 + 1)
    assert sizes["msm_b_g2.order"] == 4 * 2**27 * 16 == 8 << 30
    assert sizes["msm_b_g2.slots"] == 2 * 2**18 * 288 == 144 << 20
    assert sizes["msm_b_g2.slot_keys"] == 2 * 2**18 * 8
    assert sizes["msm_b_g2.slots2"] == 2**16 * 288 == 18 << 20
    assert sizes["msm_b_g2.result"] == 288  # Jacobian; made affine on the host
    assert sizes["msm_b_g2.tree"] == 16 * 1024 * 288  # 2048 segments per set, fan-in 2
    assert not any(name.endswith(".table") for name in sizes)  # no precomputed bases
    assert sizes["msm_a.slots"] == 2 * 2**18 * 144  # G1 Jacobian = 144 B
    # peak during msm_b_g2: d_a, d_witness 4 GiB each, points 24 GiB, order 8 GiB, then the
    # scratch: counts, starts, buckets, slots, slot keys, slots2, their keys, segments
    # (16 x 2048 x 288 B), tree (its first level, fan-in 2: 16 x 1024 x 288 B), windows,
    # result
    scratch = 2 * 4 * (2**19 + 1) + 2 * (144 << 20) + (4 << 20) + (18 << 20) + (1 << 19)
    scratch += 16 * 2048 * 288 + 16 * 1024 * 288 + 16 * 288 + 288
    assert _peak(plan) == (40 << 30) + scratch


def test_the_earlier_msm_stays_selectable_in_the_plan():
    plan = dry_run_plan(PartitionShape.synthetic(20), ProverFlags(msm_algo="unsigned"))
    names = {s.buffer for s in plan.steps if isinstance(s, Alloc)}
    assert "msm_a.slots" not in names and "msm_a.buckets" in names
    with pytest.raises(ValueError, match="msm_algo"):
        ProverFlags(msm_algo="fast")
