"""The streamed MSMs (msm_chunk with overlap_uploads), the VRAM budget and the split MSM
in the dry-run plan: orders, buffers and peaks worked out by hand."""

from __future__ import annotations

import dataclasses

import pytest
from cuzk_sim.gpu.flags import ProverFlags
from cuzk_sim.gpu.prover import PartitionShape, dry_run_plan
from cuzk_sim.gpu.schedule import overlap
from cuzk_sim.gpu.streaming import chunk_for_budget, plan_peak
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

GIB = 1 << 30
STREAM = ProverFlags(key_pinned=True, overlap_uploads=True, msm_chunk=1000)


def _names(plan, op):
    return [(i, s) for i, s in enumerate(plan.steps) if s.op == op]


def test_each_chunk_goes_up_beside_the_msm_before_it_into_the_other_buffer():
    """2^11, 1000-point chunks, no budget: the least ring, 2 slots. Every stage in 3 chunks
    (1000, 1000, 48) but B_G2 in 5 (500 x 4, 48): a G2 point takes 192 bytes, twice G1's
    96, so its chunks hold half the points and every slot 96 x 1000 bytes of points."""
    shape = PartitionShape.synthetic(11)
    plan = dry_run_plan(shape, STREAM)
    assert plan.meta["gpu_stream"] == "legacy_default+key_upload+key_upload.0+key_upload.1"
    copies = [(i, s) for i, s in _names(plan, "copy") if s.stream.startswith("key_upload")]
    points = [(i, s) for i, s in copies if s.name.endswith("_points")]
    assert len(points) == 17  # 4 stages x 3 chunks + 5, and no whole-stage upload
    kernels = _names(plan, "kernel")
    msm_at = [i for i, s in kernels if s.name.startswith("msm_") and "." not in s.name]
    assert len(msm_at) == 17
    syncs = [(i, s.stream) for i, s in _names(plan, "sync")]
    for k in range(17):
        # chunk k goes to slot k % 2 on its stream, and its MSM waits for that stream only
        assert points[k][1].stream == f"key_upload.{k % 2}"
        waits = [j for j, name in syncs if name == f"key_upload.{k % 2}" and j < msm_at[k]]
        assert waits and points[k][0] < waits[-1]
        # chunk k + 1's upload is issued after chunk k - 1's MSM and before chunk k's
        if k + 1 < 17:
            assert (msm_at[k - 1] if k else 0) < points[k + 1][0] < msm_at[k]
    allocs = {s.buffer: s.bytes for _, s in _names(plan, "alloc")}
    assert allocs["key_chunk.0"] == allocs["key_chunk.1"] == 96 * 1000
    assert "key_chunk.2" not in allocs
    # the witness streams beside its points (no d_witness); H reads d_a, freed after it
    assert "d_witness" not in allocs
    assert allocs["scalar_chunk.0"] == 32 * 1000
    frees = [s.buffer for _, s in _names(plan, "free")]
    last_h = max(i for i, s in _names(plan, "kernel") if s.name == "msm_h")
    free_a = next(i for i, s in _names(plan, "free") if s.buffer == "d_a")
    after = [s.name for i, s in _names(plan, "kernel") if last_h < i and "." not in s.name]
    assert last_h < free_a and frees.count("d_a") == 1 and "msm_h" not in after


def test_a_budget_deepens_the_ring_by_the_slots_it_leaves():
    """2^27 porep within 14 GiB: 2^24 chunks; each slot is 96 x 2^24 bytes of points and
    32 x 2^24 of scalars (2 GiB); the ring takes 2 + (14 GiB - the streamed phase's peak at
    2 slots) // 2 GiB slots, each adding 2 GiB to the streamed phase, and uploads that many
    chunks - 1 ahead of each MSM."""
    shape = PartitionShape.synthetic(27, witness="porep")
    common = {"key_pinned": True, "overlap_uploads": True, "split_msm": True}
    budget = ProverFlags(**common, vram_budget_bytes=14 * GIB)
    plan = dry_run_plan(shape, budget)
    chunk = 1 << 24
    double = dry_run_plan(shape, ProverFlags(**common, msm_chunk=chunk))
    streamed = plan_peak(double, within="key_chunk.0")  # the NTT phase's 12 GiB apart
    slot = 96 * chunk + 32 * chunk
    depth = 2 + (14 * GIB - streamed) // slot
    assert depth >= 3  # the budget leaves room for a deeper ring than double buffering
    allocs = {s.buffer: s.bytes for _, s in _names(plan, "alloc")}
    assert {f"key_chunk.{k}" for k in range(depth)} <= set(allocs)
    assert f"key_chunk.{depth}" not in allocs and allocs["key_chunk.0"] == 96 * chunk
    deep = streamed + (depth - 2) * slot
    assert plan_peak(plan, within="key_chunk.0") == deep
    assert plan_peak(plan) == max(plan_peak(double), deep) <= 14 * GIB
    streams = plan.meta["gpu_stream"].split("+")
    assert streams[2:] == [f"key_upload.{k}" for k in range(depth)]
    # before chunk i's MSM, chunks up to i + depth - 1 are on their way (issued)
    kernels = _names(plan, "kernel")
    msm_at = [i for i, s in kernels if s.name.startswith("msm_") and "." not in s.name]
    points = [i for i, s in _names(plan, "copy") if s.name.endswith("_points")]
    for k, at in enumerate(msm_at):
        assert sum(1 for p in points if p < at) == min(len(points), k + depth)


def test_a_ring_deeper_than_the_chunks_per_stage_wraps_round_its_slots():
    """A budget far above 2^11's bytes: MAX_STREAM_DEPTH = 8 slots; 100-point chunks (G2:
    50), so 21 per G1 stage and 41 for B_G2: chunk k in slot k % 8, 7 chunks ahead."""
    shape = PartitionShape.synthetic(11)
    flags = dataclasses.replace(STREAM, msm_chunk=100, vram_budget_bytes=GIB)
    plan = dry_run_plan(shape, flags)
    points = [s for _, s in _names(plan, "copy") if s.name.endswith("_points")]
    assert len(points) == 4 * 21 + 41
    assert [s.stream for s in points] == [f"key_upload.{k % 8}" for k in range(len(points))]
    allocs = {s.buffer for _, s in _names(plan, "alloc")}
    assert "key_chunk.7" in allocs and "key_chunk.8" not in allocs
    assert plan_peak(plan) <= GIB


def test_h_chunks_are_spread_among_the_witness_chunks():
    """H's 3 chunks and the 14 others (a, b_g1, l: 3 each, b_g2: 5): H, 5 others, H, 4,
    H, 5 (round(j 14 / 3) .. round((j + 1) 14 / 3): 0, 5, 9, 14), so the copies of the
    upload-bound witness MSMs run beside H's compute-bound ones."""
    plan = dry_run_plan(PartitionShape.synthetic(11), STREAM)
    order = [s.name for _, s in _names(plan, "kernel") if s.name.startswith("msm_")]
    order = [n for n in order if "." not in n]
    h = [i for i, n in enumerate(order) if n == "msm_h"]
    assert h == [0, 6, 11] and len(order) == 17


def test_the_overlap_counts_every_upload_but_the_first():
    plan = dry_run_plan(PartitionShape.synthetic(11), STREAM)
    o = overlap(plan)
    # 17 point chunks + 14 scalar chunks (a, b_g1, l 3 each, b_g2 5; H's scalars are d_a);
    # all but chunk 0 ride beside a kernel
    assert (o.copies, o.overlapped) == (31, 30)
    first = 96 * 1000  # msm_h's first chunk of points
    assert o.copy_bytes - o.overlapped_bytes == first


def test_a_14_gib_budget_streams_a_porep_2_27_partition_within_it():
    shape = PartitionShape.synthetic(27, witness="porep")
    flags = ProverFlags(
        key_pinned=True, overlap_uploads=True, split_msm=True, vram_budget_bytes=14 * GIB
    )
    chunk = chunk_for_budget(shape, flags)
    assert chunk is not None and chunk & (chunk - 1) == 0
    plan = dry_run_plan(shape, flags)
    assert 12 * GIB < plan_peak(plan) <= 14 * GIB  # the NTT phase: d_a 4 + d_bc 8 GiB
    bigger = dataclasses.replace(flags, vram_budget_bytes=None, msm_chunk=2 * chunk)
    assert plan_peak(dry_run_plan(shape, bigger)) > 14 * GIB  # the largest that fits


def test_a_budget_below_the_ntt_phase_is_refused_by_name():
    flags = ProverFlags(key_pinned=True, overlap_uploads=True, vram_budget_bytes=10 * GIB)
    with pytest.raises(ValueError, match=r"vram_budget_bytes=10737418240 \(10.00 GiB\)"):
        dry_run_plan(PartitionShape.synthetic(27), flags)


def test_a_budget_the_whole_msms_fit_leaves_them_whole():
    shape = PartitionShape.synthetic(12)
    flags = ProverFlags(vram_budget_bytes=80 * GIB)
    assert chunk_for_budget(shape, flags) is None
    assert [s for s in dry_run_plan(shape, flags).steps] == list(dry_run_plan(shape).steps)


def test_the_split_msm_plan_classifies_sums_the_ones_then_runs_the_rest():
    shape = PartitionShape.synthetic(10, witness="porep")
    plan = dry_run_plan(shape, ProverFlags(split_msm=True))
    kernels = [s for _, s in _names(plan, "kernel")]
    names = [s.name for s in kernels]
    for stage in ("msm_a", "msm_b_g1", "msm_b_g2", "msm_l"):
        at = names.index(f"{stage}.split")
        assert names[at + 1] == f"{stage}.ones" and names[at + 2] == stage
        count = shape.msm_sizes()[stage][1]
        zeros = round(0.5159 * count)
        ones = min(count - zeros, round(0.4841 * count))
        group = shape.msm_sizes()[stage][0]
        assert kernels[at + 1].kind == f"batch_add_{group}"  # one addition per one
        assert kernels[at + 1].size == ones
        assert kernels[at + 2].size == count - zeros - ones  # the rest's Pippenger
        assert kernels[at + 2].zeros is None  # the rest: random scalars
    assert "msm_h.split" not in names  # H's scalars are field elements
    copies = [s.name for _, s in _names(plan, "copy")]
    assert "msm_a.split_counts" in copies and "msm_a.ones.result" in copies


@pytest.mark.parametrize(
    ("kw", "says"),
    [
        ({"split_msm": True, "msm_algo": "unsigned"}, "split_msm needs"),
        ({"vram_budget_bytes": 0}, "vram_budget_bytes must be"),
        ({"vram_budget_bytes": 1 << 34, "key_resident": True}, "vram_budget_bytes does not"),
    ],
)
def test_flags_that_do_not_combine_are_refused_by_name(kw, says):
    with pytest.raises(ValueError, match=says):
        ProverFlags(**kw)


def test_gpu_plan_shows_the_two_streams_and_the_peak_within_the_budget():
    from cuzk_sim.cli import app

    args = ["gpu-plan", "--domain-log2", "27", "--key-pinned", "--overlap-uploads"]
    args += ["--witness", "porep", "--split-msm", "--vram-budget", "14 GiB"]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    peak = int(out.output.split("peak device bytes: ")[1].split()[0])
    assert peak <= 14 * GIB
    assert "stream key_upload.0-" in out.output and "beside a kernel" in out.output
    bad = CliRunner().invoke(app, ["gpu-plan", "--domain-log2", "20", "--witness", "x"])
    assert bad.exit_code == 2 and "--witness" in bad.output


def _model_run(tmp_path, flags: str, record: bool = False):
    from cuzk_sim.api import load_scenario, simulate

    path = tmp_path / f"s{abs(hash(flags))}.toml"
    path.write_text(
        f"""profile = "h200"
[hardware]
gpus = 1
vram = "141 GiB"
[engine.gpus]
gpu_workers_per_device = 1
[engine.pce]
cached = ["porep"]
[plan]
gpu_prover = {{ domain_log2 = 27, witness = "porep", key_pinned = true, {flags} }}
[plan.host]
synthesis = "0 s"
pce = false
[[workload]]
kind = "porep"
count = 1
partitions = 2
"""
    )
    return simulate(load_scenario(path), record=record)


def _model_seconds(tmp_path, flags: str) -> float:
    return _model_run(tmp_path, flags).seconds_per_proof


def _first_partition(result, leave_out: str = "") -> tuple[float, float]:
    """(the first partition's span, the summed durations of its kernels and copies but
    those named `leave_out`)."""
    part = min((s for s in result.spans if s.cat == "partition"), key=lambda s: s.start_s)
    busy = sum(
        s.end_s - s.start_s
        for s in result.spans
        if s.cat in ("kernel", "copy")
        and s.name != leave_out
        and part.start_s <= s.start_s < part.end_s
    )
    return part.end_s - part.start_s, busy


def test_the_model_runs_the_streamed_uploads_beside_the_msms(tmp_path):
    """The same chunks with and without the upload stream, the witness page-locked: with
    it, every copy issued just before one of msm_h's MSMs (random scalars: ~1.5 ms per
    2^20 points on the H200 profile, 2^24-point chunks) ends before that MSM does, so at
    least those copies' time (bytes / 46.9 GiB/s, the profile's pinned rate) is off each
    partition's time."""
    chunk = 1 << 24
    flags = ProverFlags(
        key_pinned=True, overlap_uploads=True, split_msm=True, msm_chunk=chunk, pinned=True
    )
    plan = dry_run_plan(PartitionShape.synthetic(27, witness="porep"), flags)
    steps = list(plan.steps)
    beside_h = 0
    for i, s in enumerate(steps):
        if s.op == "kernel" and s.name == "msm_h":
            copies = [c for c in steps[:i] if c.op == "copy" and c.stream.startswith("key_up")]
            syncs = [j for j, c in enumerate(steps[:i]) if c.op == "sync"]
            last_sync = syncs[-1]
            beside_h += sum(c.bytes for c in steps[last_sync:i] if c.op == "copy")
            assert copies  # the chunk after it is on its way
    hidden_s = beside_h / (46.9 * GIB)
    common = f"split_msm = true, msm_chunk = {chunk}, pinned = true"
    serial = _model_seconds(tmp_path, common)
    streamed = _model_seconds(tmp_path, common + ", overlap_uploads = true")
    assert serial - streamed >= 2 * hidden_s * 0.99  # two partitions


def test_pageable_streamed_scalars_hold_the_host_and_nothing_overlaps(tmp_path):
    """The real pipeline at 2^27 (docs/validation.md, production grid): with the witness
    in pageable memory each streamed chunk's scalar upload waits for the MSM before it
    (its stream waits on the queue) and holds the worker's host until it ends (the
    driver stages it), so the next MSM is issued after it: a partition takes the sum of
    its kernels and copies, but the page-locked points of msm_h's chunks (no scalars go
    with them: the next MSM is issued at once, beside them). Page-locked, the uploads run
    beside the MSMs: the partition is shorter than that sum."""
    common = "split_msm = true, msm_chunk = 16777216, overlap_uploads = true"
    r = _model_run(tmp_path, common, record=True)
    span, busy = _first_partition(r, leave_out="upload_msm_h_points")
    assert span >= busy * 0.9999  # serial: every other kernel and copy one after another
    assert span < _first_partition(r)[1]  # some of msm_h's points did overlap
    span_p, busy_p = _first_partition(_model_run(tmp_path, common + ", pinned = true", True))
    assert span_p < busy_p * 0.97  # overlapped: 3 % of the busy time at least hidden


@given(
    log2=st.integers(2, 12),
    witness=st.sampled_from(["dense", "sha256", "porep"]),
    chunk_log=st.integers(0, 12),
    split=st.booleans(),
    stream=st.booleans(),
)
def test_every_size_plans_whole_chunks_and_frees_what_it_allocates(
    log2, witness, chunk_log, split, stream
):
    """At any size, shape and chunk: the plan validates, every MSM's points are covered by
    its chunks exactly once, and nothing but the persistent buffers is live at its end."""
    shape = PartitionShape.synthetic(log2, witness=witness)
    chunk = 1 << chunk_log
    flags = ProverFlags(key_pinned=True, overlap_uploads=stream, msm_chunk=chunk, split_msm=split)
    plan = dry_run_plan(shape, flags)
    live: dict[str, int] = {}
    for s in plan.steps:
        if s.op == "alloc" and s.memory == "device":
            assert s.buffer not in live
            live[s.buffer] = s.bytes
        elif s.op == "free":
            assert live.pop(s.buffer, None) is not None
    assert not live
    msm_kernels = [s for s in plan.steps if s.op == "kernel" and s.name.startswith("msm_")]
    for stage, (group, count) in shape.msm_sizes().items():
        pieces = [s for s in msm_kernels if s.name == stage]
        step = max(1, chunk // 2) if stream and group == "g2" else chunk  # streamed: bytes
        assert len(pieces) == max(1, -(-count // step))  # one Pippenger per chunk
        uploads = [s for s in plan.steps if s.op == "copy" and s.name == f"upload_{stage}_points"]
        per_point = 192 if stage == "msm_b_g2" else 96
        assert sum(c.bytes for c in uploads) == per_point * count  # every point once


@pytest.mark.parametrize("log2", [16, 20, 24, 27])
def test_a_budget_holds_at_every_size(log2):
    shape = PartitionShape.synthetic(log2, witness="porep")
    stream = ProverFlags(key_pinned=True, overlap_uploads=True, split_msm=True)
    whole = plan_peak(dry_run_plan(shape, stream))
    ntt = 3 * 32 * (1 << log2)  # d_a and d_bc: the floor no chunk lowers
    budget = (ntt + whole) // 2  # between the NTT phase and the whole MSMs
    flags = dataclasses.replace(stream, vram_budget_bytes=budget)
    assert ntt <= plan_peak(dry_run_plan(shape, flags)) <= budget < whole


def test_the_chunk_bound_counts_a_streamed_plans_halved_g2_chunks(monkeypatch):
    """MAX_DRY_RUN_CHUNKS (here 2^8) counts B_G2's streamed chunks at half the points: the
    smallest msm_chunk it names gives a plan of at most that many point uploads."""
    import re

    import cuzk_sim.gpu.prover as prover

    monkeypatch.setattr(prover, "MAX_DRY_RUN_CHUNKS", 1 << 8)
    shape = PartitionShape.synthetic(12)
    with pytest.raises(ValueError, match=r"at least (\d+)") as refused:
        dry_run_plan(shape, dataclasses.replace(STREAM, msm_chunk=1))
    smallest = int(re.search(r"at least (\d+)", str(refused.value)).group(1))

    def uploads(chunk: int) -> int:
        plan = dry_run_plan(shape, dataclasses.replace(STREAM, msm_chunk=chunk))
        return sum(1 for s in plan.steps if s.op == "copy" and s.name.endswith("_points"))

    counts = {st: n for st, (_, n) in shape.msm_sizes().items()}
    by_hand = sum(-(-n // smallest) for st, n in counts.items() if st != "msm_b_g2")
    by_hand += -(-counts["msm_b_g2"] // max(1, smallest // 2))
    assert uploads(smallest) == by_hand <= 1 << 8
    with pytest.raises(ValueError, match="at least"):
        dry_run_plan(shape, dataclasses.replace(STREAM, msm_chunk=smallest - 1))


def _bench():
    import importlib
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
    try:
        return importlib.import_module("production_bench")
    finally:
        sys.path.pop(0)


def test_the_pool_replay_splits_merges_and_stops_at_its_limit():
    """benchmarks/production_bench.replay_pool on a plan made by hand (bytes: a multiple
    of CuPy's 512): a 1024 block freed and split for a 512 one leaves a 512 remainder
    that no 1024 request fits, so the pool grows to 1024 + 512 + 1024 = 2560; under a
    2048 limit that remainder is split (not given back) and the request fails; freed
    whole, a block is merged and reused: no growth past the first partition."""
    from cuzk_sim.gpu.device import Device

    bench = _bench()
    dev = Device("dry-run")
    dev.alloc("a", 1024)
    dev.alloc("b", 512)
    dev.free("a")
    dev.alloc("c", 512)  # from a's block, split
    dev.alloc("d", 1024)  # a's remainder (512) is too small: the pool grows
    dev.free_all()
    plan = dev.plan("hand")
    assert bench.replay_pool(plan, 1, None) == 2560
    assert bench.replay_pool(plan, 3, None) == 2560  # every later partition reuses it
    with pytest.raises(MemoryError, match="over the pool limit 2048"):
        bench.replay_pool(plan, 1, 2048)
