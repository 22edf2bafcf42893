"""Throughput, latency, utilization and the bottleneck verdict, by hand.

Toy profile (tests/sim/sim_toys.py): a kernel or CPU step of size s takes s seconds, a
copy of b bytes b seconds, synthesis of the toy shape (10 constraints) 10 s, the PCE load
1 s (once, before the first synthesis). One synthesizer, lookahead 8, proofs at t = 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuzk_sim import api
from cuzk_sim.cli import app
from cuzk_sim.metrics import bottleneck, percentile
from cuzk_sim.model.compiled import compile_plan
from cuzk_sim.model.engine import Arrivals, EngineConfig, Simulation
from cuzk_sim.plan import Alloc, Copy, Cpu, Free, Kernel, Lock, Plan, Unlock
from cuzk_sim.plans.circuits import CircuitShape
from cuzk_sim.runner import simulate
from tests.sim.sim_toys import MIB, run_plan, toy_profile

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def locked(*steps) -> Plan:
    return Plan("locked", (Lock("gpu", "device"), *steps, Unlock("gpu", "device")))


def test_synthesis_bound_by_hand():
    # synthesis 1-11, 11-21, 21-31 (PCE load 0-1); GPU 2 s each: 11-13, 21-23, 31-33
    _, r = run_plan(locked(Kernel("k", "ntt", 2)), proofs=3)
    m = r.metrics
    assert r.sim_time_s == 33.0
    assert m.synthesis_busy == pytest.approx(30 / 33)
    assert m.devices[0].compute_utilization == pytest.approx(6 / 33)
    assert m.devices[0].mutex_held == pytest.approx(6 / 33)
    assert m.bottleneck == "synthesis"
    (k,) = m.kinds
    assert (k.completed, k.failed) == (3, 0)
    # completions at 13, 23, 33: (33 - 13) / 2 = 10 s per proof, 3600 / 10 = 360 per hour
    assert k.seconds_per_proof == 10.0 and k.proofs_per_hour == pytest.approx(360.0)
    assert r.seconds_per_proof == 10.0 and r.proofs_per_hour == pytest.approx(360.0)
    # latencies 13, 23, 33: p50 = 2nd of 3 (nearest rank), p95 = 3rd
    assert (k.latency_p50_s, k.latency_p95_s, k.latency_max_s) == (23.0, 33.0, 33.0)
    # 3 synthesis partitions x 10 s x 1 thread on the default 96 cores
    assert m.host_core_utilization == pytest.approx(30 / (96 * 33))


def test_gpu_bound_by_hand():
    # synthesis as above; GPU 20 s each, back to back: 11-31, 31-51, 51-71
    _, r = run_plan(locked(Kernel("k", "ntt", 20)), proofs=3)
    m = r.metrics
    assert r.sim_time_s == 71.0
    assert m.devices[0].compute_utilization == pytest.approx(60 / 71)
    assert m.synthesis_busy == pytest.approx(30 / 71)
    assert m.bottleneck == "gpu"
    assert [m.kinds[0].latency_p50_s, m.kinds[0].latency_max_s] == [51.0, 71.0]
    assert r.seconds_per_proof == 20.0


def test_copy_bound_and_mutex_bound_by_hand():
    # a 20-byte HtoD copy at 1 B/s under the lock: 11-31, 31-51, 51-71
    _, r = run_plan(locked(Copy("up", 20, "HtoD", pinned=True)), proofs=3)
    assert r.metrics.devices[0].copy_utilization["HtoD"] == pytest.approx(60 / 71)
    assert r.metrics.devices[0].compute_utilization == 0.0
    assert r.metrics.bottleneck == "copy"
    # 18 s of host CPU and a 2 s kernel under the lock, two workers: the lock is held
    # 11-31, 31-51, 51-71 (60 s of 71) while the GPU computes 6 s: the mutex binds
    _, r = run_plan(locked(Cpu("prep", "assemble", 18), Kernel("k", "ntt", 2)), 2, proofs=3)
    m = r.metrics
    assert r.sim_time_s == 71.0
    assert m.devices[0].mutex_held == pytest.approx(60 / 71)
    assert m.devices[0].compute_utilization == pytest.approx(6 / 71)
    # w1 asks at 21 and gets it at 31, w0 asks at 31 (p2, synthesized at 31) and gets it at 51
    assert m.mutex_waits == 2 and m.mutex_wait_s == pytest.approx(10 + 20)
    assert m.bottleneck == "mutex"


def test_failed_proofs_do_not_count_in_the_throughput():
    """Proof 0 has 2 partitions, synthesized together (1-11): both workers allocate 60 MiB
    of 100 at t = 11, the second fails (no mutex) and the proof fails. Proofs 1 and 2
    arrive at 50 and 100, are synthesized in 10 s and take the GPU 5 s: done at 65 and 115.
    The arrival stream waits one more gap (50 s) before it closes, so the run ends at 150."""
    profile = toy_profile()
    plan = Plan(
        "two-fit-one",
        (Alloc("buf", 60 * MIB, "sync"), Kernel("k", "ntt", 5), Free("buf")),
    )
    config = EngineConfig(
        gpus=1,
        vram=100 * MIB,
        context_overhead=0,
        host_ram_budget=10**6,
        gpu_workers_per_device=2,
        on_oom="continue",
        pce_on_disk=("toy",),
        synthesis_lookahead=8,
        arrivals=(
            Arrivals("toy", 1, partitions=2),
            Arrivals("toy", 2, start_s=50.0, every_s=50.0),
        ),
    )
    shapes = {"toy": CircuitShape("toy", 10, 4, 1, 2, 1)}
    sim = Simulation("fail", config, {"toy": compile_plan(plan, profile)}, shapes, profile)
    r = sim.run()
    m = r.metrics
    assert (r.proofs_completed, r.proofs_failed, r.sim_time_s) == (2, 1, 150.0)
    assert m.kinds[0].latency_max_s == 15.0  # each completed proof: 10 s synthesis + 5 s GPU
    # completions at 65 and 115: 50 s per proof, 3600 / 50 = 72 per hour; the failed
    # proof (done fast, at 11) counts in neither
    assert r.seconds_per_proof == 50.0
    assert r.proofs_per_hour == pytest.approx(72.0)
    assert m.kinds[0].seconds_per_proof == 50.0
    assert m.kinds[0].proofs_per_hour == pytest.approx(72.0)


def test_percentile_is_nearest_rank():
    values = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]
    assert percentile(values, 50) == 5.0  # ceil(5) = 5th
    assert percentile(values, 95) == 10.0  # ceil(9.5) = 10th
    assert percentile([], 50) is None


def test_bottleneck_rules():
    args = dict(gpu=0.1, copy=0.1, mutex=0.1, synthesis=0.2, host_ram=0.0, host_cores=0.1)
    assert bottleneck(**args)[0] == "none"
    assert bottleneck(**{**args, "host_ram": 0.7})[0] == "host-ram"
    assert bottleneck(**{**args, "gpu": 0.9, "mutex": 0.95})[0] == "gpu"  # GPU work in the lock
    assert bottleneck(**{**args, "gpu": 0.5, "mutex": 0.95})[0] == "mutex"
    # an open stream the farm keeps up with: the arrivals set the pace, however busy
    busy = {**args, "synthesis": 0.9}
    assert bottleneck(**busy)[0] == "synthesis"
    verdict, evidence = bottleneck(**busy, keeps_up="5 of 16292 proofs unfinished at the end")
    assert verdict == "none" and "keeps up with its arrivals" in evidence


def test_json_carries_the_metrics_and_fallbacks_taken():
    path = SCENARIOS / "phase9-dual-worker-prestage-under-mutex.toml"
    result = CliRunner().invoke(app, ["run", str(path), "--json"])
    data = json.loads(result.output)
    fallbacks = sum("=fallback err=2" in line or "=skip_" in line for line in data["log"])
    assert fallbacks >= 1 and data["fallbacks_taken"] == fallbacks
    # every proof failed: no throughput at all, not a fast one
    assert data["proofs_failed"] == 3 and data["proofs_completed"] == 0
    assert data["seconds_per_proof"] is None and data["proofs_per_hour"] is None
    assert set(data["devices"]["0"]) >= {"compute_utilization", "copy_utilization"}
    assert data["bottleneck"] in (
        "synthesis",
        "gpu",
        "copy",
        "mutex",
        "host-ram",
        "cpu-pool",
        "none",
    )


def test_run_table_shows_failures_next_to_seconds_per_proof():
    # proofs done at 11, 21, 31 (synthesis-paced): 10 s per proof; then failures added
    from cuzk_sim.report import _spp

    _, r = run_plan(Plan("p", (Alloc("b", 60 * MIB, "sync"), Free("b"))), proofs=3)
    assert _spp(r) == "10.0"
    r.proofs_failed, r.proofs_completed = 6, 2
    assert _spp(r) == "10.0 (6 of 8 failed)"
    r.seconds_per_proof = None
    assert _spp(r) == "-"
    path = SCENARIOS / "phase9-dual-worker-prestage-outside-mutex.toml"
    result = CliRunner().invoke(app, ["run", str(path)])
    assert "bottleneck" in result.output


def test_the_metric_keys_are_documented():
    docs = (Path(__file__).resolve().parents[2] / "docs" / "simulator.md").read_text()
    result = CliRunner().invoke(
        app, ["run", str(SCENARIOS / "phase9-single-worker.toml"), "--json"]
    )
    data = json.loads(result.stdout)
    keys = (
        "proofs_per_hour",
        "kinds",
        "devices",
        "mutex_wait_s",
        "mutex_waits",
        "host_core_utilization",
        "synthesis_busy",
        "host_ram_wait",
        "fallbacks_taken",
        "bottleneck",
        "bottleneck_evidence",
        "warnings",
    )
    for key in keys:
        assert key in data and f"`{key}`" in docs, key
    for key in data["kinds"]["porep"]:
        assert f"`{key}`" in docs, key
    for key in data["devices"]["0"]:
        assert f"`{key}`" in docs, key


def test_bottleneck_names_the_cpu_pool_when_it_binds():
    """cards-porep on an H100 (B_G2 MSM on the CPU): the host's 20 syntheses would allow
    ~19 s/proof, but each partition's prep_msm (1.6 s) and B_G2 MSM (1.0 s) run one after
    another in the device's groth16_pool: >= 10 x 2.6 = 26 s/proof, while the H100's
    kernels take well under that. So the pool is busy nearly all the run, the GPU workers
    never wait for a partition (the channel is full), the synthesizers stay busy behind
    it, and the verdict must be the pool, not synthesis."""
    path = SCENARIOS / "sweeps" / "cards-porep.toml"
    r = simulate(api.load(path, {"hardware.card": "h100-80gb"}))
    m = r.metrics
    assert r.seconds_per_proof >= 10 * (1.6 + 1.0)  # the pool's chain, by hand
    assert m.synthesis_busy > 0.9 and m.gpu_starved < 0.05
    assert m.cpu_pool_busy > 0.85 > max(d.compute_utilization for d in m.devices)
    assert m.bottleneck == "cpu-pool"
    assert "CPU pool busy" in m.evidence


def test_bottleneck_stays_synthesis_where_synthesis_binds():
    """host-synthesis-bound-32-cores: 32 cores hold 5 syntheses of 6.4 threads at once, a
    partition every ~29 / 5 = 5.8 s at best against a GPU section of ~2-3 s: the GPU
    workers wait for partitions, so synthesis is the bound."""
    r = simulate(api.load(SCENARIOS / "host-synthesis-bound-32-cores.toml"))
    m = r.metrics
    assert m.gpu_starved > 0.05
    assert m.bottleneck == "synthesis"


def test_bottleneck_rules_starved_and_pool():
    args = dict(gpu=0.3, copy=0.1, mutex=0.9, synthesis=1.0, host_ram=0.0, host_cores=0.4)
    # synthesizers busy and GPU workers starved: synthesis
    assert bottleneck(**args, starved=0.3)[0] == "synthesis"
    # synthesizers busy but the GPU side never waited for them: the GPU side
    assert bottleneck(**args, starved=0.0)[0] == "mutex"  # engines 0.3 < 0.8 x 0.9
    assert bottleneck(**args, starved=0.0, pool=0.95)[0] == "cpu-pool"
    # a pool less busy than the GPU engines is not the bound
    assert bottleneck(**{**args, "gpu": 0.9}, starved=0.0, pool=0.6)[0] == "gpu"
