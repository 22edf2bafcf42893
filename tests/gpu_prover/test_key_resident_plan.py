"""ProverFlags.key_resident and overlap_tails without a GPU: the flags' validation, the
dry-run plan (one persistent per-device buffer per MSM's points, the uploads that fill
them, nothing else moved), the model's figures on a two-partition run against hand
arithmetic from the profile, the OOM it predicts at 2^27 on cards the key does not fit,
the scenario and CLI errors, gpu-run's refusal, and the tails' executor path."""

from __future__ import annotations

import textwrap
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace

import numpy as np
import py_ecc.optimized_bls12_381 as bls
import pytest
from cuzk_sim.gpu.device import Device
from cuzk_sim.gpu.flags import ProverFlags
from cuzk_sim.gpu.msm import SignedShape, WindowSums
from cuzk_sim.gpu.msm_results import msm_results, tail_pool
from cuzk_sim.gpu.msm_stages import finish_tail
from cuzk_sim.gpu.msm_tail import _words_from_point
from cuzk_sim.gpu.prover import PartitionShape, dry_run_plan, partition
from test_pinned_key_plan import KEY_COPIES, _key_bytes_by_hand, _linear_copies_profile
from typer.testing import CliRunner

from cuzk_sim.api import load_scenario, simulate
from cuzk_sim.cli import app
from cuzk_sim.io.errors import InputError
from cuzk_sim.plan.contract import Alloc, Copy, Free

GIB = 2**30
STAGES = ("msm_h", "msm_a", "msm_b_g1", "msm_b_g2", "msm_l")
POINTS = {f"{s}.points" for s in STAGES}


@pytest.mark.parametrize("field", ["key_resident", "overlap_tails"])
@pytest.mark.parametrize("bad", [1, "yes", None])
def test_a_flag_that_is_not_a_bool_is_refused_naming_it(field, bad):
    with pytest.raises(ValueError, match=f"ProverFlags.{field} must be true or false"):
        ProverFlags(**{field: bad})


def test_a_resident_key_is_not_streamed_in_chunks():
    with pytest.raises(ValueError, match="key_resident does not combine with msm_chunk"):
        ProverFlags(key_resident=True, msm_chunk=1000)


def test_the_plan_keeps_one_buffer_per_msm_on_the_device_and_fills_it():
    n = 1 << 20
    shape = PartitionShape.synthetic(20)
    plan = dry_run_plan(shape, ProverFlags(key_resident=True))
    allocs = {s.buffer: s for s in plan.steps if isinstance(s, Alloc) and s.buffer in POINTS}
    assert set(allocs) == POINTS
    for stage in STAGES:
        a = allocs[f"{stage}.points"]
        # plain cudaMalloc, never freed, one for the device (all its workers)
        assert (a.allocator, a.persistent, a.per_device) == ("sync", True, True)
        assert a.note == f"key_resident.{stage}"
    assert not [s for s in plan.steps if isinstance(s, Free) and s.buffer in POINTS]
    copies = {s.name: s for s in plan.steps if isinstance(s, Copy) and s.name in KEY_COPIES}
    assert {c.fills for c in copies.values()} == POINTS
    assert all(copies[f"upload_{st}_points"].fills == f"{st}.points" for st in STAGES)
    # by hand: h n - 1, a and b_g1 n, l n - 2 G1 points (96 B); b_g2 n G2 points (192 B)
    assert sum(a.bytes for a in allocs.values()) == _key_bytes_by_hand(n) == 603_979_488
    # nothing else moved: with the points steps as the default plan has them, the same plan
    default = dry_run_plan(shape)
    back = []
    for s in plan.steps:
        if isinstance(s, Alloc) and s.buffer in POINTS:
            s = replace(s, allocator="caching", persistent=False, per_device=False, note="")
        elif isinstance(s, Copy):
            s = replace(s, fills=None)
        back.append(s)
    rest = [s for s in default.steps if not (isinstance(s, Free) and s.buffer in POINTS)]
    assert back == rest
    assert plan.meta["flags"]["key_resident"] is True


def test_with_overlap_uploads_the_ahead_uploads_fill_the_resident_buffers():
    flags = ProverFlags(key_pinned=True, overlap_uploads=True, key_resident=True)
    plan = dry_run_plan(PartitionShape.synthetic(12), flags)
    copies = [s for s in plan.steps if isinstance(s, Copy) and s.name in KEY_COPIES]
    assert [(c.stream, c.fills) for c in copies] == [("compute", "msm_h.points")] + [
        ("key_upload", f"{s}.points") for s in STAGES[1:]
    ]
    assert all(c.pinned for c in copies)


def test_overlap_tails_leaves_the_plan_as_it_is():
    shape = PartitionShape.synthetic(16)
    on = dry_run_plan(shape, ProverFlags(overlap_tails=True))
    assert on.steps == dry_run_plan(shape).steps and on.meta["flags"]["overlap_tails"] is True


def _scenario(tmp_path, gpu_prover: str, vram: str | None = None, profile: str | None = None):
    path = tmp_path / f"s{abs(hash((gpu_prover, vram)))}.toml"
    hardware = f'vram = "{vram}"' if vram else ""
    path.write_text(
        textwrap.dedent(f"""
        profile = "{profile or "h200"}"
        on_oom = "continue"
        [hardware]
        gpus = 1
        {hardware}
        [engine.gpus]
        gpu_workers_per_device = 1
        [engine.pce]
        cached = ["porep"]
        [plan]
        gpu_prover = {{ witness = "dense", {gpu_prover} }}
        [[workload]]
        kind = "porep"
        count = 1
        partitions = 2
        """)
    )
    return path


def test_the_model_uploads_the_key_once_in_a_two_partition_run(tmp_path):
    profile = _linear_copies_profile(tmp_path)
    off = simulate(load_scenario(_scenario(tmp_path, "domain_log2 = 10", profile=profile)))
    on = simulate(
        load_scenario(
            _scenario(tmp_path, "domain_log2 = 10, key_resident = true", profile=profile)
        ),
        record=True,
    )
    assert not on.oom_events and on.proofs_completed == 1
    key = _key_bytes_by_hand(1 << 10)  # 983,040 B: h 1023, a 1024, b_g1 1024, l 1022 x 96 B
    assert key == 96 * (1023 + 1024 + 1024 + 1022) + 192 * 1024
    # one proof, one worker: the second partition skips the five key copies, each one
    # priced by the profile at latency 0.1577 ms + bytes / 6.3933 GiB/s (pageable)
    saved = 5 * 0.1577e-3 + key / (6.3933 * GIB)
    assert off.seconds_per_proof - on.seconds_per_proof == pytest.approx(saved, rel=1e-6)
    copied = [s for s in on.spans if s.cat == "copy" and s.name in KEY_COPIES]
    assert len(copied) == 5  # the first partition's, not the second's
    assert {p for p in {s.track for s in copied}} == {"gpu0-w0"}
    allocated = [line for _, line in on.log if line.startswith("key_resident.")]
    assert len(allocated) == 5  # each buffer allocated once, logged like cuzk's d_a cache


@pytest.mark.parametrize("vram", ["16 GiB", "80 GiB"])
def test_at_2_27_the_model_predicts_the_oom_of_a_key_that_does_not_fit(tmp_path, vram):
    r = simulate(load_scenario(_scenario(tmp_path, "domain_log2 = 27, key_resident = true", vram)))
    assert r.proofs_failed == 1 and r.oom_events
    first = r.oom_events[0]
    assert first.fatal and first.buffer in POINTS and first.allocator == "sync"
    # 80 GiB: the key's first three G1 buffers (3 x 12 GiB) are resident when the 24 GiB
    # G2 one is asked for, beside d_a and d_witness (4 GiB each) and the pool's cache
    if vram == "80 GiB":
        assert first.buffer == "msm_b_g2.points" and first.requested_bytes == 24 * GIB
        # (msm_h's (2^27 - 1) x 96 B charged as cudaMalloc rounds it: 12 GiB)
        assert first.ledger["gpu0"] == {f"{s}.points": 12 * GIB for s in STAGES[:3]}


def test_at_2_27_the_key_fits_the_h200_and_stays(tmp_path):
    r = simulate(load_scenario(_scenario(tmp_path, "domain_log2 = 27, key_resident = true")))
    assert not r.oom_events and r.proofs_completed == 1
    # 72 GiB of key kept, plus one partition's working memory, under 140.4 GiB
    assert 72 * GIB < r.peak_vram_bytes[0] < r.vram_total_bytes[0]


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ('"yes"', "plan.gpu_prover.key_resident"),
        ("1", "plan.gpu_prover.key_resident"),
        ("true, msm_chunk = 4096", "key_resident does not combine with msm_chunk"),
    ],
)
def test_a_bad_key_resident_in_a_scenario_is_one_line_naming_it(tmp_path, value, says):
    path = _scenario(tmp_path, f"domain_log2 = 10, key_resident = {value}")
    with pytest.raises(InputError) as e:
        load_scenario(path)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_gpu_run_refuses_the_flags_in_one_line(tmp_path):
    for flag in ("key_resident", "overlap_tails"):
        path = _scenario(tmp_path, f"domain_log2 = 10, {flag} = true")
        out = CliRunner().invoke(app, ["gpu-run", str(path), "--device", "dry-run"])
        assert out.exit_code == 2, out.output
        lines = [line for line in out.output.splitlines() if line.strip()]
        assert len(lines) == 1 and f"plan.gpu_prover.{flag} = true" in lines[0]


def test_gpu_plan_says_what_stays_on_the_device_at_2_27():
    out = CliRunner().invoke(app, ["gpu-plan", "--domain-log2", "27", "--key-resident"])
    assert out.exit_code == 0, out.output
    kept = 96 * ((2**27 - 1) + 3 * 2**27 - 2) + 192 * 2**27  # 72 GiB less 288 B
    assert f"kept on the device across partitions (persistent, per device): {kept} " in (out.output)
    assert "(72.00 GiB)" in out.output
    plain = CliRunner().invoke(app, ["gpu-plan", "--domain-log2", "27"])
    assert "kept on the device" not in plain.output


def test_gpu_plan_names_the_option_that_does_not_combine():
    out = CliRunner().invoke(
        app, ["gpu-plan", "--domain-log2", "12", "--key-resident", "--msm-chunk", "100"]
    )
    assert out.exit_code == 2
    text = " ".join(out.output.replace("│", " ").split())  # the error box, unwrapped
    assert "--key-resident" in text and "does not combine with msm_chunk" in text


def _window_sums(group: str, seed: int) -> tuple[WindowSums, object]:
    """Window sums of k_j G and their sum sum_j 2^(j c) k_j G (py_ecc) by hand."""
    shape = SignedShape.of(group, 1 << 12)
    gen = bls.G1 if group == "g1" else bls.G2
    ks = [seed * 1000 + j for j in range(shape.windows)]
    words = []
    for k in ks:
        x, y = bls.normalize(bls.multiply(gen, k))  # affine: Jacobian with Z = 1
        if group == "g1":
            coords = (int(x.n), int(y.n), 1)
        else:
            coords = tuple((int(c.coeffs[0]), int(c.coeffs[1])) for c in (x, y)) + ((1, 0),)
        words.append(_words_from_point(group, coords))
    total = bls.multiply(gen, sum(k << (j * shape.c) for j, k in enumerate(ks)))
    return WindowSums(group, shape.c, np.concatenate(words)), total


def test_tails_finished_by_an_executor_give_the_same_points():
    raw = {"msm_a": [_window_sums("g1", 1)[0]], "msm_b_g2": [_window_sums("g2", 2)[0]]}
    with ThreadPoolExecutor(1) as pool:
        futures = {k: [pool.submit(finish_tail, v) for v in vs] for k, vs in raw.items()}
        got = msm_results(futures)
    assert bls.eq(got["msm_a"], _window_sums("g1", 1)[1])
    assert bls.eq(got["msm_b_g2"], _window_sums("g2", 2)[1])
    assert all(bls.eq(got[k], v) for k, v in msm_results(raw).items())


def test_the_tail_process_finishes_a_tail():
    sums, total = _window_sums("g1", 3)
    pool = tail_pool()
    assert tail_pool() is pool  # one per process, started once
    limbs = pool.submit(finish_tail, sums).result(timeout=60)
    assert bls.eq(msm_results({"msm_h": [limbs]})["msm_h"], total)


def test_a_dry_run_with_a_tails_executor_submits_nothing():
    with ThreadPoolExecutor(1) as pool:
        raw = partition(Device("dry-run"), PartitionShape.synthetic(8), ProverFlags(), None, pool)
    assert all(v is None for parts in raw.values() for v in parts)
    assert not any(isinstance(v, Future) for parts in raw.values() for v in parts)
