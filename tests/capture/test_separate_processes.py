"""`[engine.gpus] separate_processes = true`: N copies of a program on one card are N
processes, each with its own CUDA context, allocators and mutexes (issue 28 item 3).

Expected figures by hand. The plan: under a device mutex, 64 MiB and 32 MiB from the
async pool (multiples of its 2 MiB granule, so charged as asked), a 10 ms kernel, a sync,
both freed. Three workers start one partition each at t = 0 (synthesis takes 0 s):

- separate processes: 3 × (500 MiB context + 96 MiB) = 1788 MiB at the peak; no worker
  waits for another's mutex, so the three 10 ms kernels run back to back on the one
  compute engine: 30 ms;
- threads of one daemon: the mutex serialises the three partitions (each holds it
  through its kernel and sync: the second waits 10 ms, the third 20 ms, 30 ms of
  waiting in all), and the shared pool hands the 96 MiB one frees to the next: 500 + 96
  = 596 MiB.
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cuzk_sim.cli import app
from cuzk_sim.model.allocator import DeviceMemory

MiB = 1 << 20
PLAN = {
    "name": "two buffers under a mutex",
    "steps": [
        {"op": "lock", "mutex": "gpu"},
        {"op": "alloc", "buffer": "a", "bytes": 64 * MiB, "allocator": "async"},
        {"op": "alloc", "buffer": "b", "bytes": 32 * MiB, "allocator": "async"},
        {"op": "kernel", "name": "k", "kind": "captured", "size": 1, "seconds": 0.01},
        {"op": "sync", "stream": "compute"},
        {"op": "free", "buffer": "b"},
        {"op": "free", "buffer": "a"},
        {"op": "unlock", "mutex": "gpu"},
    ],
    "meta": {},
}
SCENARIO = """
name = "processes"
seed = 1
profile = "h200"
on_oom = "continue"
[hardware]
gpus = 1
vram = "{vram}"
{context}
[engine.gpus]
gpu_workers_per_device = {workers}
separate_processes = {separate}
[engine.pce]
cached = ["porep"]
[plan]
file = "plan.json"
[plan.host]
synthesis = "0 s"
partition_bytes = "1 MiB"
pce = false
[[workload]]
kind = "porep"
count = 1
partitions = {workers}
"""


CTX = 'context_overhead = "500 MiB"'


def _run(tmp_path, vram, separate=True, workers=3, context=CTX, meta=None):
    plan = dict(PLAN, meta=meta or {})
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    toml = SCENARIO.format(
        vram=vram, workers=workers, separate=str(separate).lower(), context=context
    )
    (tmp_path / "s.toml").write_text(toml)
    r = CliRunner().invoke(app, ["run", str(tmp_path / "s.toml"), "--json"])
    assert r.exit_code in (0, 1), r.output
    return json.loads(r.stdout[: r.stdout.rindex("}") + 1])


def test_three_processes_hold_three_contexts(tmp_path):
    res = _run(tmp_path, "1788 MiB")
    assert not res["oom"] and res["partitions_completed"] == 3
    assert res["peak_vram_bytes"]["0"] == 3 * (500 + 96) * MiB
    assert res["mutex_wait_s"] == 0.0  # each process's mutex is its own
    assert abs(res["sim_time_s"] - 0.030) < 1e-9


def test_one_mebibyte_short_of_three_processes_is_an_oom(tmp_path):
    res = _run(tmp_path, "1787 MiB")
    assert res["oom"]


def test_the_same_card_holds_three_threads(tmp_path):
    res = _run(tmp_path, "1787 MiB", separate=False)
    assert not res["oom"]
    assert res["peak_vram_bytes"]["0"] == (500 + 96) * MiB
    assert abs(res["mutex_wait_s"] - 0.030) < 1e-9  # 10 ms + 20 ms


def test_two_processes_at_the_boundary(tmp_path):
    # 2 x (500 + 96) = 1192 MiB: +2 % fits, -2 % does not (the device script's caps)
    assert not _run(tmp_path, f"{int(1192 * 1.02)} MiB", workers=2)["oom"]
    assert _run(tmp_path, f"{int(1192 * 0.98)} MiB", workers=2)["oom"]


def test_the_captured_context_counts_per_process(tmp_path):
    # no hardware.context_overhead: the plan's measured context (meta context_bytes)
    res = _run(tmp_path, "2000 MiB", context="", meta={"context_bytes": 300 * MiB})
    assert res["peak_vram_bytes"]["0"] == 3 * (300 + 96) * MiB
    # a stated context_overhead wins over the plan's
    res = _run(tmp_path, "2000 MiB", meta={"context_bytes": 300 * MiB})
    assert res["peak_vram_bytes"]["0"] == 3 * (500 + 96) * MiB


def test_a_process_pool_serves_only_its_own_process():
    """Process A frees 64 MiB into its async pool; process B's 64 MiB must come from the
    card: 128 MiB reserved, and a card with 100 MiB beyond the contexts refuses it. One
    process (shared pool): B's allocation reuses A's idle bytes, 64 MiB reserved."""
    shared = DeviceMemory(0, 1000 * MiB, context=0)
    shared.try_alloc("A", "x", 64 * MiB, "async")
    shared.release("A", "x")
    assert shared.try_alloc("B", "x", 64 * MiB, "async") is not None
    assert shared.reserved == 64 * MiB

    apart = DeviceMemory(0, 1000 * MiB, context=0)
    apart.add_process("A")
    apart.add_process("B")
    apart.try_alloc("A", "x", 64 * MiB, "async")
    apart.release("A", "x")
    assert apart.try_alloc("B", "x", 64 * MiB, "async") is not None
    assert apart.reserved == 128 * MiB
    assert apart.ledger()["(device)"]["async_pool_idle"] == 64 * MiB
    apart.check_ledger()

    small = DeviceMemory(0, 100 * MiB, context=0)
    small.add_process("A")
    small.add_process("B")
    small.try_alloc("A", "x", 64 * MiB, "async")
    small.release("A", "x")
    assert small.try_alloc("B", "x", 64 * MiB, "async") is None  # 36 MiB free, 64 idle in A
    assert small.try_alloc("A", "y", 64 * MiB, "async") is not None  # A's own idle bytes


def test_a_per_gpu_cache_is_per_process(tmp_path):
    """cuzk's per-GPU buffer (persistent, per_device; kept across partitions) is one per
    device for threads of one daemon, one per process for separate processes; likewise
    a persistent pinned host buffer (the process's)."""
    steps = [
        {"op": "alloc", "buffer": "d_a", "bytes": 100 * MiB, "persistent": True}
        | {"per_device": True},
        {"op": "alloc", "buffer": "srs", "bytes": 10 * MiB, "persistent": True}
        | {"memory": "host_pinned"},
        {"op": "kernel", "name": "k", "kind": "captured", "size": 1, "seconds": 0.01},
        {"op": "sync", "stream": "compute"},
    ]
    plan = {"name": "cache", "steps": steps, "meta": {}}
    for separate, device, host in ((True, 3 * (500 + 100), 3 * 10), (False, 500 + 100, 10)):
        (tmp_path / "plan.json").write_text(json.dumps(plan))
        toml = SCENARIO.format(
            vram="4 GiB", workers=3, separate=str(separate).lower(),
            context=CTX,
        )  # fmt: skip
        (tmp_path / "s.toml").write_text(toml)
        r = CliRunner().invoke(app, ["run", str(tmp_path / "s.toml"), "--json"])
        assert r.exit_code == 0, r.output
        res = json.loads(r.stdout[: r.stdout.rindex("}") + 1])
        assert res["peak_vram_bytes"]["0"] == device * MiB
        # partition_bytes of 1 MiB each beside the pinned buffers
        assert res["peak_host_bytes"] - 3 * MiB == host * MiB, separate


def test_a_restart_keeps_one_allocator_set_per_process(tmp_path):
    from cuzk_sim.model.faults import _owners_by_process

    mem = DeviceMemory(0, 1000 * MiB)
    mem.add_process("gpu0-w0", "gpu0-w0/gpu0")
    mem.add_process("gpu0-w1", "gpu0-w1/gpu0")
    assert _owners_by_process(mem) == [("gpu0-w0", "gpu0-w0/gpu0"), ("gpu0-w1", "gpu0-w1/gpu0")]
    # a daemon restart mid-run (the processes' memories rebuilt): the run goes on, and
    # three processes still hold three contexts and their own buffers afterwards
    plan = dict(PLAN, meta={})
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    toml = SCENARIO.format(vram="4 GiB", workers=3, separate="true", context=CTX)
    toml = toml.replace('on_oom = "continue"', 'on_oom = "continue"\nrestarts = ["0.005 s"]')
    toml = toml.replace("count = 1\n", 'count = 2\nevery = "0.05 s"\n')  # one after it
    (tmp_path / "s.toml").write_text(toml)
    r = CliRunner().invoke(app, ["run", str(tmp_path / "s.toml"), "--json"])
    assert r.exit_code in (0, 1), r.output
    res = json.loads(r.stdout[: r.stdout.rindex("}") + 1])
    assert res["peak_vram_bytes"]["0"] == 3 * (500 + 96) * MiB
    assert res["proofs_failed"] == 1 and res["proofs_completed"] == 1  # lost, then proved
