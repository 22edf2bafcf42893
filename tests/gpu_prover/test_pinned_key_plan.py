"""ProverFlags.key_pinned without a GPU: the flag's validation, the dry-run plan (its meta,
the key copies priced at the pinned rate, one persistent pinned host buffer per stage), the model's
pricing of it, and Device.copy_htod's no-staging path with a stand-in for CuPy."""

from __future__ import annotations

import sys
import textwrap
import types
from dataclasses import replace

import numpy as np
import pytest
from cuzk_sim.gpu.device import Buffer, Device
from cuzk_sim.gpu.flags import ProverFlags
from cuzk_sim.gpu.prover import PartitionShape, dry_run_plan

from cuzk_sim.api import load_scenario, simulate
from cuzk_sim.model.compiled import compile_plan
from cuzk_sim.plan.contract import Alloc, Copy
from cuzk_sim.profiles.profile import load_profile

GIB = 2**30
KEY_COPIES = [f"upload_{s}_points" for s in ("msm_h", "msm_a", "msm_b_g1", "msm_b_g2", "msm_l")]


def _linear_copies_profile(tmp_path) -> str:
    """profiles/h200.toml with its copies as one line each -- pinned 46.9 GiB/s, pageable
    6.3933 GiB/s, latency 0.1577 ms, no per-size points -- so the prices below are
    arithmetic on three figures, whatever the bundled profile's calibration says."""
    from pathlib import Path

    text = (Path(__file__).parents[2] / "cuzk_sim" / "profiles" / "h200.toml").read_text()
    head, sep, tail = text.partition("[copy_engine]\n")
    body, nxt, rest = tail.partition("\n[")
    body = "\n".join(
        line for line in body.splitlines() if not line.startswith(("pinned", "pageable", "latency"))
    )
    body = 'pinned = "46.9 GiB/s"\npageable = "6.3933 GiB/s"\nlatency = "0.1577 ms"\n' + body
    path = tmp_path / "h200-linear-copies.toml"
    path.write_text(head + sep + body + nxt + rest)
    return str(path)


def _key_bytes_by_hand(n: int) -> int:
    # h: n - 1 G1 points, a and b_g1: n each, l: n - 2 (one public input + the one wire),
    # b_g2: n G2 points; affine G1 = 2 x 48 B, G2 = 4 x 48 B
    return 96 * (n - 1) + 96 * n + 96 * n + 96 * (n - 2) + 192 * n


@pytest.mark.parametrize("field", ["key_pinned", "pinned", "prestage"])
@pytest.mark.parametrize("bad", [1, "yes", None])
def test_a_flag_that_is_not_a_bool_is_refused_naming_it(field, bad):
    with pytest.raises(ValueError, match=f"ProverFlags.{field} must be true or false"):
        ProverFlags(**{field: bad})


def test_the_plan_records_the_flag_and_prices_every_key_copy_as_pinned():
    shape = PartitionShape.synthetic(20)
    off = dry_run_plan(shape)
    on = dry_run_plan(shape, ProverFlags(key_pinned=True))
    assert on.meta["flags"]["key_pinned"] is True and off.meta["flags"]["key_pinned"] is False
    copies = {s.name: s for s in on.steps if isinstance(s, Copy) and s.direction == "HtoD"}
    assert all(copies[c].pinned for c in KEY_COPIES)
    # a/b/c, the witness and the NTT tables are not the key: still pageable
    assert not any(s.pinned for name, s in copies.items() if name not in KEY_COPIES)
    assert not any(s.pinned for s in off.steps if isinstance(s, Copy))


def test_one_persistent_pinned_host_buffer_per_stage_holds_the_key_and_device_memory_is_unchanged():
    """The key is page-locked as it is made: one cudaHostAlloc per stage, in stage order
    (keygen.allocate_in_order, pin_points); a capture of the prover sees five host
    allocations, so the plan has five (issue 28, H200 capture 2026-12-03)."""
    n = 1 << 20
    on = dry_run_plan(PartitionShape.synthetic(20), ProverFlags(key_pinned=True))
    off = dry_run_plan(PartitionShape.synthetic(20))
    host = [s for s in on.steps if isinstance(s, Alloc) and s.memory == "host_pinned"]
    # h: n - 1 G1 points, a and b_g1: n G1, b_g2: n G2, l: n - 2 G1 (96 B / 192 B each)
    want = [96 * (n - 1), 96 * n, 96 * n, 192 * n, 96 * (n - 2)]
    assert [s.bytes for s in host] == want
    assert [s.buffer.rsplit(".", 1)[1] for s in host] == [
        "msm_h",
        "msm_a",
        "msm_b_g1",
        "msm_b_g2",
        "msm_l",
    ]
    assert all(s.persistent for s in host)
    assert sum(want) == _key_bytes_by_hand(n) == 603_979_488
    names = {s.buffer for s in host}
    assert not any(getattr(s, "buffer", None) in names for s in on.steps if s.op == "free")
    # the same steps otherwise: drop the host buffers and the copies' pinned mark
    rest = [s for s in on.steps if s not in host]
    rest = [replace(s, pinned=False) if isinstance(s, Copy) else s for s in rest]
    assert rest == list(off.steps)
    # the host buffers are taken before the lock (page-locking is host work)
    lock_at = next(i for i, s in enumerate(on.steps) if s.op == "lock")
    assert max(on.steps.index(s) for s in host) < lock_at


def test_chunked_uploads_of_a_pinned_key_are_all_pinned():
    plan = dry_run_plan(PartitionShape.synthetic(12), ProverFlags(key_pinned=True, msm_chunk=1000))
    key = [s for s in plan.steps if isinstance(s, Copy) and s.name in KEY_COPIES]
    assert len(key) == 5 * 5  # 4096 points (h: 4095, l: 4094) in chunks of 1000: 5 each
    assert all(s.pinned for s in key)
    assert sum(s.bytes for s in key) == _key_bytes_by_hand(1 << 12)


def test_the_profile_prices_the_key_copies_at_its_pinned_rate(tmp_path):
    plan = dry_run_plan(PartitionShape.synthetic(20), ProverFlags(key_pinned=True))
    compiled = compile_plan(plan, load_profile(_linear_copies_profile(tmp_path)), merge=False)
    priced = {
        s.name: t
        for s, t in zip(compiled.steps, compiled.seconds, strict=True)
        if isinstance(s, Copy)
    }
    # the profile: pinned 46.9 GiB/s, latency 0.1577 ms
    assert priced["upload_msm_a_points"] == pytest.approx(0.1577e-3 + 96 * 2**20 / (46.9 * GIB))
    assert priced["upload_msm_b_g2_points"] == pytest.approx(0.1577e-3 + 192 * 2**20 / (46.9 * GIB))
    key_s = sum(priced[c] for c in KEY_COPIES)
    assert key_s == pytest.approx(5 * 0.1577e-3 + 603_979_488 / (46.9 * GIB))  # ~12.8 ms


def _scenario(tmp_path, flags: str, workers: int = 1, proofs: int = 1):
    """`proofs` proofs of two 2^10 partitions, `workers` workers, our prover with `flags`."""
    path = tmp_path / f"s{abs(hash((flags, workers, proofs)))}.toml"
    profile = _linear_copies_profile(tmp_path)
    path.write_text(
        textwrap.dedent(f"""
        profile = "{profile}"
        [engine.gpus]
        gpu_workers_per_device = {workers}
        [engine.pce]
        cached = ["porep"]
        [plan]
        gpu_prover = {{ domain_log2 = 10, witness = "dense", {flags} }}
        [[workload]]
        kind = "porep"
        count = {proofs}
        partitions = 2
        """)
    )
    return load_scenario(path)


def test_the_model_pins_the_key_once_and_charges_the_copies_at_the_pinned_rate(tmp_path):
    off = simulate(_scenario(tmp_path, "key_pinned = false"))
    on = simulate(_scenario(tmp_path, "key_pinned = true"))
    key = _key_bytes_by_hand(1 << 10)
    # host RAM: the two partitions' reservations, plus the key's pinned buffer once (the
    # second partition finds it live: persistent)
    assert on.peak_host_bytes - off.peak_host_bytes == key
    # one proof, one worker: both partitions' key copies at 46.9 instead of 6.3933 GiB/s
    # (latencies cancel); the key's page-locking at the profile's 20 GiB/s is the run's
    # setup phase, before the first proof (issue 24), not part of its s/proof
    saved = 2 * key * (1 / (6.3933 * GIB) - 1 / (46.9 * GIB))
    assert off.seconds_per_proof - on.seconds_per_proof == pytest.approx(saved, rel=1e-6)
    assert (off.setup_s, on.setup_s) == (0.0, pytest.approx(key / (20 * GIB), rel=1e-9))


class _Pinned(bytearray):
    """Stand-in for cupy.cuda.PinnedMemoryPointer: a buffer numpy can view."""


def _stand_in_cupy(staged: list[int]) -> types.SimpleNamespace:
    def alloc_pinned_memory(nbytes):
        staged.append(nbytes)
        return _Pinned(nbytes)

    cuda = types.SimpleNamespace(
        PinnedMemoryPointer=_Pinned, PinnedMemory=_Pinned, alloc_pinned_memory=alloc_pinned_memory
    )
    return types.SimpleNamespace(cuda=cuda)


class _DeviceArray:
    def __init__(self, words: int) -> None:
        self.data = np.zeros(words, np.uint32)
        self.sources: list[np.ndarray] = []

    def __getitem__(self, sl):
        outer = self

        class View:
            def set(self, host):
                outer.sources.append(host)
                outer.data[sl] = host

        return View()


def test_copy_htod_sends_a_pinned_array_as_it_is_and_stages_a_pageable_one(monkeypatch):
    staged: list[int] = []
    monkeypatch.setitem(sys.modules, "cupy", _stand_in_cupy(staged))
    dev = Device("real")
    words = 24
    pinned = np.frombuffer(_Pinned(4 * words), np.uint32).reshape(2, 12)
    pinned[...] = np.arange(words, dtype=np.uint32).reshape(2, 12)
    pageable = np.arange(words, dtype=np.uint32) + 100
    dst = Buffer("d", 4 * words, _DeviceArray(words))
    dev.copy_htod("key", dst, pinned[1:], 4 * 12, pinned=True)  # a slice of pinned memory
    assert staged == [] and np.shares_memory(dst.array.sources[-1], pinned)
    assert list(dst.array.data[:12]) == list(range(12, 24))
    dev.copy_htod("abc", dst, pageable, 4 * words, pinned=True)  # pageable: staged first
    assert staged == [4 * words] and not np.shares_memory(dst.array.sources[-1], pageable)
    assert list(dst.array.data) == list(range(100, 124))
    dev.copy_htod("w", dst, pageable, 4 * words)  # not asked pinned: no staging, no check
    assert staged == [4 * words]
    assert [s.pinned for s in dev.steps] == [True, True, False]


def test_overlap_uploads_needs_the_pinned_key():
    # with msm_chunk it streams the chunks (tests/gpu_prover/test_streaming_plan.py)
    with pytest.raises(ValueError, match="ProverFlags.overlap_uploads .*needs key_pinned=True"):
        ProverFlags(overlap_uploads=True)


def _device_peak(plan) -> int:
    sizes, live, peak = dict(plan.buffers()), 0, 0
    for s in plan.steps:
        if s.op in ("alloc", "free") and s.memory == "device":
            live += s.bytes if s.op == "alloc" else -sizes[s.buffer]
            peak = max(peak, live)
    return peak


def test_overlap_uploads_each_next_key_upload_before_the_msm_it_runs_beside():
    flags = ProverFlags(key_pinned=True, overlap_uploads=True)
    plan = dry_run_plan(PartitionShape.synthetic(12), flags)
    # the legacy default stream, and one stream of its own whose copies overlap kernels
    assert plan.meta["gpu_stream"] == "legacy_default+key_upload"
    steps = list(plan.steps)
    at = {getattr(s, "name", None): i for i, s in enumerate(steps) if s.op in ("copy", "kernel")}
    stages = ["msm_h", "msm_a", "msm_b_g1", "msm_b_g2", "msm_l"]
    assert steps[at["upload_msm_h_points"]].stream == "compute"
    for prev, stage in zip(stages, stages[1:], strict=False):
        copy = steps[at[f"upload_{stage}_points"]]
        assert copy.stream == "key_upload" and copy.pinned
        assert at[f"upload_{stage}_points"] < at[prev] < at[stage]  # issued before prev's MSM
        # the MSM waits for its points: a sync of the upload stream after the MSM before
        between = steps[at[prev] : at[stage]]
        assert any(s.op == "sync" and s.stream == "key_upload" for s in between)


def test_overlap_uploads_costs_one_more_points_buffer_at_2_27_by_hand():
    shape = PartitionShape.synthetic(27)
    alone = dry_run_plan(shape, ProverFlags(key_pinned=True))
    overlap = dry_run_plan(shape, ProverFlags(key_pinned=True, overlap_uploads=True))
    # the peak is at msm_b_g2 (its 2^27 G2 points, 24 GiB, and its scratch) either way;
    # with overlap msm_l's 2^27 - 2 G1 points (96 B each) are on their way beside it
    assert _device_peak(overlap) - _device_peak(alone) == 96 * (2**27 - 2)


def test_the_model_hides_the_overlapped_uploads_behind_the_msms(tmp_path):
    def seconds(extra: str) -> float:
        return simulate(_scenario(tmp_path, f"key_pinned = true{extra}")).seconds_per_proof

    n = 1 << 10
    # the uploads of a, b_g1, b_g2 and l (0.16-0.18 ms each) run beside the MSM before
    # them (~5 ms at 2^10): each one's time is saved, in both partitions
    hidden = [96 * n, 96 * n, 192 * n, 96 * (n - 2)]
    saved = 2 * sum(0.1577e-3 + b / (46.9 * GIB) for b in hidden)
    assert seconds("") - seconds(", overlap_uploads = true") == pytest.approx(saved, rel=1e-6)


def test_two_workers_share_the_pinned_key_as_one_process_does(tmp_path):
    """Two workers, two proofs of two partitions each: the key is pinned once for the
    process (the model's persistent pinned host buffers belong to it), not once per
    worker: the host RAM peak grows by the key's bytes once."""
    off = simulate(_scenario(tmp_path, "key_pinned = false", workers=2, proofs=2))
    on = simulate(_scenario(tmp_path, "key_pinned = true", workers=2, proofs=2))
    assert on.peak_host_bytes - off.peak_host_bytes == _key_bytes_by_hand(1 << 10)
