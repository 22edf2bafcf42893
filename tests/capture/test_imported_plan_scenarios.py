"""An imported plan goes wherever a plan goes: `[plan] file = ...` in a scenario run by
`run`, `sweep` and `gate --baseline`. Expected figures by hand from the export of
test_import_nsys.one_partition: one partition holds a 64 MiB cudaMalloc buffer and a
32 MiB cudaMallocAsync buffer at once (96 MiB), beside a 500 MiB context."""

from __future__ import annotations

import json

from nsys_export import ALLOC, DEVICE, FREE, HTOD, PINNED, Export
from test_import_nsys import one_partition
from typer.testing import CliRunner

from cuzk_sim.cli import app

MiB = 1 << 20
SCENARIO = """
name = "imported"
seed = 1
profile = "h200"
on_oom = "continue"
[hardware]
gpus = 1
vram = "{vram}"
context_overhead = "500 MiB"
[engine.gpus]
gpu_workers_per_device = 1
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
count = 2
[expect]
oom = false
"""


def _import(tmp_path, export: Export) -> None:
    db = export.write(tmp_path / "r.sqlite")
    r = CliRunner().invoke(app, ["import-nsys", str(db), "-o", str(tmp_path / "plan.json")])
    assert r.exit_code == 0, r.output


def _run(*args):
    r = CliRunner().invoke(app, [str(a) for a in args])
    return r


def test_run_over_an_imported_plan(tmp_path):
    _import(tmp_path, one_partition())
    ok = tmp_path / "ok.toml"
    ok.write_text(SCENARIO.format(vram="700 MiB"))
    r = _run("run", ok, "--json")
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout[: r.stdout.rindex("}") + 1])
    assert not res["oom"] and res["proofs_completed"] == 2
    assert res["peak_vram_bytes"]["0"] == (500 + 96) * MiB  # context + 64 + 32, by hand
    # 580 MiB: the 64 MiB buffer fits (564 MiB), the 32 MiB one beside it cannot (596)
    tight = tmp_path / "tight.toml"
    tight.write_text(SCENARIO.format(vram="580 MiB"))
    r = _run("run", tight, "--json")
    assert r.exit_code == 1, r.output
    res = json.loads(r.stdout[: r.stdout.rindex("}") + 1])
    assert res["oom"] and res["first_oom_buffer"] == "d1_32MiB"


def test_sweep_over_an_imported_plan(tmp_path):
    _import(tmp_path, one_partition())
    (tmp_path / "s.toml").write_text(SCENARIO.format(vram="700 MiB"))
    spec = tmp_path / "sw.toml"
    spec.write_text(
        'name = "imported-vram"\nbase = "s.toml"\n[axes]\n'
        '"hardware.vram" = ["580 MiB", "700 MiB"]\n'
    )
    r = _run("sweep", spec, "--out", tmp_path / "out", "--jobs", "1", "--no-plots")
    assert r.exit_code == 0, r.output
    rows = json.loads((tmp_path / "out" / "results.json").read_text())["rows"]
    assert [(row["hardware.vram"], row["oom"]) for row in rows] == [
        ("580 MiB", True),
        ("700 MiB", False),
    ]


def slow_kernel(ns: int) -> Export:
    """A partition whose one kernel runs `ns` nanoseconds (the change a developer gates)."""
    ex = Export()
    ex.context(null_stream=7)
    ex.mem(100, ALLOC, 0x1000, 64 * MiB, "cudaMalloc_v3020")
    ex.copy(200, 210, 1_000_210, 64 * MiB, HTOD, src=PINNED, dst=DEVICE)
    ex.kernel(2_000_000, 2_000_000, 2_000_000 + ns, "msm")
    ex.mem(3_000_000 + ns, FREE, 0x1000, 64 * MiB, "cudaFree_v3020")
    return ex


def test_gate_with_a_baseline_over_imported_plans(tmp_path):
    gate = tmp_path / "gate"
    gate.mkdir()
    (gate / "s.toml").write_text(SCENARIO.format(vram="700 MiB"))
    base = tmp_path / "baseline.json"
    _import(gate, slow_kernel(10_000_000))  # 10 ms
    r = _run("gate", gate, "--baseline", base, "--update-baseline")
    assert r.exit_code == 0, r.output
    r = _run("gate", gate, "--baseline", base)
    assert r.exit_code == 0, r.output
    # the kernel now takes 20 ms: a partition goes from ~11 ms to ~21 ms, far past 5 %
    _import(gate, slow_kernel(20_000_000))
    r = _run("gate", gate, "--baseline", base)
    assert r.exit_code == 1, r.output
    assert "FAIL" in r.output
