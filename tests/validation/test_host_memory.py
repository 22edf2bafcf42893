"""Host memory of the real pipeline (issue 24), without a GPU: the estimate gpu-run states
before it starts (hand arithmetic), the one-line refusal, the synthetic key and inputs
made once per process and shared by every worker (constructions counted on the dry-run
device), and the synthetic key's construction (the comb table the GPU kernel reads)."""

from __future__ import annotations

import threading

import numpy as np
import py_ecc.optimized_bls12_381 as bls
import pytest
from cuzk_sim.gpu import backends, hostdata, keygen, partition_data, pipeline
from cuzk_sim.gpu.backends import LedgerBackend
from cuzk_sim.gpu.encoding import g1_from_limbs, g2_from_limbs
from cuzk_sim.gpu.pipeline import RealRun
from cuzk_sim.gpu.run_spec import RunSpec
from typer.testing import CliRunner

from cuzk_sim.cli import app
from cuzk_sim.profiles.profile import load_profile
from cuzk_sim.scenario import load_scenario

GIB = 1 << 30


def _run(path, device="dry-run") -> RealRun:
    spec = RunSpec.from_scenario(load_scenario(path))
    backend = LedgerBackend(spec.vram, spec.context, spec.gpus)
    if device == "real":
        backend = backends.CupyBackend()
    return RealRun(spec, backend)


def _log2(path, log2: int):
    # a dense witness (every query holds every variable): the key's bytes by the arithmetic
    # below; the porep shape's sparse A/B queries are tested in tests/gpu_prover
    body = path.read_text().replace("domain_log2 = 10", f'domain_log2 = {log2}, witness = "dense"')
    path.write_text(body)
    return path


def test_estimate_is_the_key_plus_the_inputs_plus_the_process(scenario_file):
    # a 2^20 synthetic partition: n = m = 2^20 wires, l = 1 public input, h_len = n - 1.
    # Key: H (n - 1) + A (m) + B_G1 (m) + L (m - l - 1 = m - 2) G1 points of 96 bytes and
    # B_G2 (m) G2 points of 192 bytes; inputs: a, b, c (3 n) and the witness (m), 32 bytes
    n = 1 << 20
    key = 96 * (n - 1) + 96 * n + 96 * n + 96 * (n - 2) + 192 * n
    inputs = 32 * (3 * n + n)
    run = _run(_log2(scenario_file(vram="40 GiB", workers=2), 20))
    need = run.memory_need()
    assert need.key_bytes == key == 576 * n - 288
    assert need.inputs_bytes == inputs == 128 * n
    assert need.host_bytes == key + inputs + 4 * GIB  # the process: 4 GiB
    # the bound: 1.2 x (key + each of the 2 workers' partition inputs)
    assert need.bound_bytes == int(1.2 * (key + 2 * inputs))
    context = load_profile("h200").context_overhead
    assert need.device_bytes == {0: 40 * GIB - context}


def test_estimate_at_2_27_two_workers(scenario_file):
    # issue 24's run: the key is 72 GiB (4 G1 queries of 2^27 x 96 B = 48 GiB, B_G2
    # 2^27 x 192 B = 24 GiB, less 3 points), the inputs 16 GiB (4 x 2^27 x 32 B)
    run = _run(_log2(scenario_file(workers=2), 27))
    need = run.memory_need()
    assert need.key_bytes == 72 * GIB - 3 * 96
    assert need.inputs_bytes == 16 * GIB
    assert need.host_bytes == 92 * GIB - 288
    assert need.bound_bytes == int(1.2 * (72 * GIB - 288 + 32 * GIB))
    line = need.line()
    assert "host 92.0 GiB" in line and "key 72.0" in line and "bound 124.8 GiB" in line


def test_refusal_names_what_is_short_in_one_line():
    need = hostdata.MemoryNeed(
        key_bytes=72 * GIB,
        inputs_bytes=16 * GIB,
        held_bytes=0,
        droppable_bytes=0,
        overhead_bytes=4 * GIB,
        device_bytes={0: 139 * GIB},
        bound_bytes=0,
    )
    assert hostdata.refusal(need, 92 * GIB, {0: 139 * GIB}) is None
    why = hostdata.refusal(need, 64 * GIB, {0: 139 * GIB})
    assert why is not None and "\n" not in why
    assert "92.0 GiB of host memory" in why and "64.0 GiB available (MemAvailable)" in why
    # data of other shapes this process drops first counts as available
    dropping = hostdata.MemoryNeed(72 * GIB, 16 * GIB, 0, 30 * GIB, 4 * GIB, {}, 0)
    assert hostdata.refusal(dropping, 64 * GIB, {}) is None
    # the GPU: 139 GiB wanted, 100 free; 2 GiB of slack does not cover 39
    why = hostdata.refusal(need, 100 * GIB, {0: 100 * GIB}, slack=2 * GIB)
    assert why == (
        "the run needs 139.0 GiB free on gpu0 (hardware.vram less the context); it has "
        "100.0 GiB free (cudaMemGetInfo)"
    )
    assert hostdata.refusal(need, 100 * GIB, {0: 138 * GIB}, slack=2 * GIB) is None
    # MemAvailable unreadable: the host is not checked
    assert hostdata.refusal(need, None, {0: 139 * GIB}) is None


def test_meminfo_and_status_are_read(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:  131072000 kB\nMemAvailable:   1000 kB\n")
    assert hostdata.host_available(str(meminfo)) == 1024000
    assert hostdata.host_available(str(tmp_path / "absent")) is None
    status = tmp_path / "status"
    status.write_text("VmPeak:  9 kB\nVmHWM:     2048 kB\nVmRSS: 1 kB\n")
    assert hostdata.peak_rss(str(status)) == 2 << 20


def test_gpu_run_refuses_in_one_line_before_it_starts(scenario_file, monkeypatch):
    # the real device, with no GPU asked: the host check comes first and refuses
    monkeypatch.setattr(backends, "gpu_missing", lambda: None)
    monkeypatch.setattr(pipeline, "host_available", lambda: 3 * GIB)
    monkeypatch.setattr(partition_data, "SYNTHETIC", hostdata.SyntheticStore(_never))
    path = _log2(scenario_file(workers=2), 27)
    res = CliRunner().invoke(app, ["gpu-run", str(path), "--device", "real"])
    assert res.exit_code == 2, res.output
    err = [line for line in res.output.splitlines() if line.startswith("error")]
    assert len(err) == 1, res.output
    assert "92.0 GiB of host memory" in err[0] and "3.0 GiB available (MemAvailable)" in err[0]
    assert "memory needed: host 92.0 GiB" in res.output  # said before it refused


def _never(sizes, pinned):
    raise AssertionError("no key may be made when the run is refused")


def test_dry_run_states_the_estimate_and_runs(scenario_file):
    path = _log2(scenario_file(workers=2, count=1, partitions=2), 27)
    res = CliRunner().invoke(app, ["gpu-run", str(path), "--device", "dry-run"])
    assert res.exit_code == 0, res.output
    assert "memory needed: host 92.0 GiB (key 72.0 + inputs 16.0 + process 4.0 GiB" in res.output
    assert "bound 124.8 GiB" in res.output


def test_key_and_inputs_made_once_per_process_and_shared(scenario_file, monkeypatch):
    store = hostdata.SyntheticStore(_never, real=False)
    monkeypatch.setattr(partition_data, "DRY_SYNTHETIC", store)
    path = scenario_file(workers=3, count=4, partitions=4)  # 16 partitions, 3 workers
    run = _run(path)
    asked = []
    original = pipeline.synthetic_data

    def spy(shape, real, key_pinned=False, inputs_pinned=False):
        asked.append(shape)
        return original(shape, real, key_pinned, inputs_pinned)

    monkeypatch.setattr(pipeline, "synthetic_data", spy)
    res = run.execute()
    assert res.partitions_completed == 16
    assert store.made == {"key": 1, "inputs": 1}
    assert len(asked) == 1  # once, up front: the workers share what it made
    # a second run in the process makes nothing new
    _run(path).execute()
    assert store.made == {"key": 1, "inputs": 1}
    # a run of another shape makes its own
    _run(_log2(scenario_file(workers=1), 12)).execute()
    assert store.made == {"key": 2, "inputs": 2}


def test_pinned_inputs_are_their_own_entry_and_counted_once(scenario_file, monkeypatch):
    # plan.gpu_prover.pinned: a/b/c and the witness in page-locked memory, a store entry
    # apart from the pageable ones of the same shape (a later run with pageable inputs
    # cannot be handed pinned ones, nor the reverse); the estimate counts each entry once
    store = hostdata.SyntheticStore(_never, real=False)
    monkeypatch.setattr(partition_data, "DRY_SYNTHETIC", store)
    path = _log2(scenario_file(workers=2), 20)
    pageable = _run(path)
    pageable.execute()
    assert store.made == {"key": 1, "inputs": 1}
    text = path.read_text()
    path.write_text(text.replace('witness = "dense"', 'witness = "dense", pinned = true'))
    pinned = _run(path)
    (work,) = pinned.spec.work.values()
    assert work.flags.pinned
    pinned.execute()
    assert store.made == {"key": 1, "inputs": 2}  # the key is shared, the inputs are not
    n = 1 << 20
    need = pinned.memory_need()
    assert need.inputs_bytes == 32 * (3 * n + n)  # one partition shape's a, b, c, witness


def test_store_makes_a_key_once_under_concurrent_requests():
    calls = []

    def make(sizes, pinned):
        calls.append(sizes)
        return {st: np.zeros((n, 4), np.uint32) for st, (_, n) in sizes.items()}, keygen.KeyStats(1)

    store = hostdata.SyntheticStore(make)
    sizes = {"msm_a": ("g1", 8), "msm_b_g2": ("g2", 8)}
    got = []
    threads = [
        threading.Thread(target=lambda: got.append(store.key(sizes, True))) for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(got) == 8 and all(g is got[0] for g in got)
    assert store.key(sizes, False) is not got[0] and len(calls) == 2  # pageable: another
    # 8 G1 points of 96 bytes + 8 G2 points of 192, for each of the two keys
    assert store.held(list(store.nbytes)) == 2 * (8 * 96 + 8 * 192)
    assert store.retain([]) == 2 * (8 * 96 + 8 * 192) and not store.keys


def test_splitmix64_matches_the_published_sequence():
    # SplitMix64 seeded with 0: its first outputs (the reference implementation by Vigna,
    # prng.di.unimi.it/splitmix64.c; state advances by the golden gamma each call)
    assert keygen.splitmix64(0) == 0xE220A8397B1DCDAF
    assert keygen.splitmix64(0x9E3779B97F4A7C15) == 0x6E789E6AA1B965F4
    s = keygen.key_scalar(0x1000, 5)
    assert s & 1 and 0 < s < 1 << 128


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_comb_table_sums_to_the_scalar_multiple(group):
    """What kernels/keygen.cu computes, done on the host from the same table: the table
    entry of each byte of s, summed, is s G (py_ecc's multiply: the oracle)."""
    table = keygen.table_limbs(group)
    decode = g1_from_limbs if group == "g1" else g2_from_limbs
    gen, zero = (bls.G1, bls.Z1) if group == "g1" else (bls.G2, bls.Z2)
    assert bls.is_inf(decode(table[0])) and bls.eq(decode(table[1]), gen)
    assert bls.eq(decode(table[256 * 3 + 7]), bls.multiply(gen, 7 << 24))
    for k in (0, 1, 1 << 20):
        s = keygen.key_scalar(keygen.STAGE_SEEDS["msm_a"], k)
        acc = zero
        for w in range(16):
            d = (s >> (8 * w)) & 0xFF
            if d:
                acc = bls.add(acc, decode(table[256 * w + d]))
        assert bls.eq(acc, bls.multiply(gen, s))


def test_random_scalars_are_below_2_254():
    from cuzk_sim.gpu.witness_data import random_scalars

    rng = np.random.default_rng(3)
    a = random_scalars(rng, 1000)
    assert a.shape == (1000, 8) and a.dtype == np.uint32
    assert (a[:, 7] < 1 << 30).all() and a[:, 0].std() > 2**30  # top limb masked, low random
    assert (random_scalars(np.random.default_rng(3), 1000) == a).all()  # seeded


def test_stage_arrays_are_allocated_in_order_beside_the_caller():
    """allocate_in_order: every stage's array, in stage order, each allocated on the helper
    thread (the caller fills one while the next is page-locked)."""
    threads = []

    def alloc(rows, words):
        threads.append(threading.current_thread().name)
        return np.zeros((rows, words), np.uint32)

    sizes = {"msm_h": ("g1", 3), "msm_b_g2": ("g2", 2), "msm_l": ("g1", 1)}
    got = [(st, a.shape) for st, a, _ in keygen.allocate_in_order(sizes, alloc)]
    assert got == [("msm_h", (3, 24)), ("msm_b_g2", (2, 48)), ("msm_l", (1, 24))]
    assert all(t.startswith("keygen-alloc") for t in threads) and len(threads) == 3


def test_without_the_kernel_the_key_falls_back_to_tiled_valid_points(monkeypatch):
    # the fixed-base fill fails at its first stage (as without CuPy, or where the kernel
    # does not compile; forced here, so the test means the same on a GPU machine) and
    # every stage is the comb table's points tiled -- valid points, reported as such
    def fail(self, *args, **kwargs):
        raise RuntimeError("no fixed-base kernel here")

    monkeypatch.setattr(keygen._FixedBase, "stage", fail)
    sizes = {"msm_a": ("g1", 5000), "msm_b_g2": ("g2", 300)}
    seen = []
    points, stats = keygen.make_key_points(sizes, False, seen.append)
    assert stats.method == "tiled" and "fixed-base generation failed" in stats.notes[0]
    assert points["msm_a"].shape == (5000, 24) and points["msm_b_g2"].shape == (300, 48)
    g1 = keygen.table_limbs("g1")
    assert (points["msm_a"][4096 + 7] == g1[7]).all()
    p = g1_from_limbs(points["msm_a"][4096 + 300])  # row 300 = 256 w + d: w 1, d 44
    assert bls.is_on_curve(p, bls.b) and bls.eq(p, bls.multiply(bls.G1, 44 << 8))
    q = g2_from_limbs(points["msm_b_g2"][299])  # 43 * 2^8 G2 (row 256 + 43)
    assert bls.eq(q, bls.multiply(bls.G2, 43 << 8))
