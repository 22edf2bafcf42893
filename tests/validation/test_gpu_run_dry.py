"""gpu-run on the dry-run device (threads, queue, locks, on_oom, faults, ballast-free
ledger): its JSON has the schema of `run --json`, key for key, and its semantics hold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cuzk_sim.gpu.backends import LedgerBackend
from cuzk_sim.gpu.faults import Fault, FaultPlan
from cuzk_sim.gpu.pipeline import RealRun
from cuzk_sim.gpu.run_spec import RunSpec
from typer.testing import CliRunner
from validation_fixtures import DATA

from cuzk_sim.cli import app
from cuzk_sim.io.errors import InputError
from cuzk_sim.profiles.profile import load_profile
from cuzk_sim.scenario import load_scenario

runner = CliRunner()


def _keys(d: object) -> object:
    if isinstance(d, dict):
        return {k: _keys(v) for k, v in d.items() if k not in ("ledger",)}
    if isinstance(d, list) and d and isinstance(d[0], dict):
        return [_keys(d[0])]
    return type(d).__name__ if d is not None else None


TIGHT = f"{load_profile('h200').context_overhead / 2**20 + 1.2:.1f} MiB"  # context + 1.2 MiB


def _schema(d: dict) -> dict:
    return {k: (_keys(v) if k == "oom_events" else None) for k, v in d.items()}


@pytest.mark.parametrize("vram", ["140 GiB", "tight"])
def test_json_schema_equals_run_json(scenario_file, vram):
    path = scenario_file(vram=TIGHT if vram == "tight" else vram)
    real = runner.invoke(app, ["gpu-run", str(path), "--json", "--device", "dry-run"])
    model = runner.invoke(app, ["run", str(path), "--json"])
    assert real.exit_code == model.exit_code, real.output
    r, m = json.loads(real.stdout), json.loads(model.stdout)
    assert r.pop("device") == "dry-run"  # the one key a gpu-run adds: who ran it
    assert list(r) == list(m)
    assert _schema(r) == _schema(m)
    assert r["oom"] == m["oom"]


def _run(path: Path, faults: FaultPlan | None = None) -> RealRun:
    spec = RunSpec.from_scenario(load_scenario(path))
    run = RealRun(spec, LedgerBackend(spec.vram, spec.context, spec.gpus), faults or FaultPlan())
    run.result = run.execute()
    return run


def test_on_oom_continue_fails_each_proof_and_the_workers_go_on(scenario_file):
    # TIGHT: the h200 profile's context + 1.2 MiB, less than one 2^10 partition needs (2 MiB
    # granules) -> every first partition OOMs; its proof fails, the proof's 3 other
    # partitions are dropped
    run = _run(scenario_file(vram=TIGHT, workers=1, on_oom="continue"))
    res = run.result
    assert res.oom and not res.stopped_at_oom
    assert (res.proofs_failed, res.partitions_failed, res.proofs_completed) == (2, 2, 0)
    statuses = sorted(j.status for j in run.jobs)
    assert statuses == ["dropped"] * 6 + ["failed"] * 2
    assert run.details()["jobs_lost"] == 0 and run.details()["leaked_bytes"] == {"0": 0}


def test_on_oom_stop_stops_the_run(scenario_file):
    run = _run(scenario_file(vram=TIGHT, workers=1, on_oom="stop"))
    res = run.result
    assert res.oom and res.stopped_at_oom
    assert res.partitions_failed == 1 and res.partitions_completed == 0
    assert [j.status for j in run.jobs].count("stopped") == 7
    assert run.details()["jobs_lost"] == 0


def test_fits_when_generous(scenario_file):
    run = _run(scenario_file(vram="140 GiB", workers=3, count=3, partitions=4))
    res = run.result
    assert not res.oom and res.proofs_completed == 3 and res.partitions_completed == 12


def test_faults_every_job_ends_with_a_reason_and_nothing_leaks(scenario_file):
    faults = FaultPlan(
        (
            Fault.parse("oom:random:0.01"),
            Fault.parse("exception:0.005"),
            Fault.parse("oom:msm_h.points:0.2"),
        ),
        seed=3,
    )
    run = _run(scenario_file(vram="140 GiB", workers=3, count=13, partitions=4), faults)
    d = run.details()
    assert d["jobs_total"] == 52 and d["jobs_lost"] == 0
    assert d["unexplained_jobs"] == [] and d["leaked_bytes"] == {"0": 0}
    assert sum(d["faults_injected"].values()) > 0
    assert run.result.partitions_failed == d["jobs"].get("failed", 0) > 0
    for j in run.jobs:
        assert j.status in ("proved", "failed", "dropped") and (j.status == "proved" or j.reason)


def test_shrinking_cap_is_an_extra_ballast(scenario_file):
    run = _run(scenario_file(vram="140 GiB"), FaultPlan((Fault.parse("shrink:0:139 GiB"),)))
    assert any("shrank" in line for _, line in run.lines)


@pytest.mark.parametrize("text", ["oom:x", "exception:2", "shrink:a:1 GiB", "bogus", "oom:d_a:-1"])
def test_bad_fault_is_one_line_exit_2(scenario_file, text):
    r = runner.invoke(
        app, ["gpu-run", str(scenario_file()), "--device", "dry-run", "--fault", text]
    )
    assert r.exit_code == 2 and "--fault" in r.output and "Traceback" not in r.output


def test_scenario_not_of_our_prover_is_refused():
    r = runner.invoke(app, ["gpu-run", str(DATA / "one-alloc.toml"), "--device", "dry-run"])
    assert r.exit_code == 2 and "not our GPU prover" in r.output


def test_validate_is_resumable_and_writes_predictions_first(tmp_path, scenario_file):
    from cuzk_sim.validation.grid import pipeline_executor, run_grid
    from cuzk_sim.validation.spec import load_spec

    scenario_file(workers=1, count=1, partitions=2)
    (tmp_path / "spec.toml").write_text(
        'name = "t"\nbase = "s.toml"\ncaps = [-0.3, 3]\n[[config]]\nname = "w1"\n'
    )
    spec = load_spec(tmp_path / "spec.toml")
    calls = []
    inner = pipeline_executor("dry-run")

    def execute(scn):
        assert (tmp_path / "out" / "predictions.json").exists()
        calls.append(scn.config.vram)
        return inner(scn)

    rows, summary = run_grid(spec, tmp_path / "out", execute, say=lambda s: None)
    assert len(calls) == 3 and len(rows) == 3  # -0.3 %, +3 %, the whole card
    assert [r.predicted_oom for r in rows] == [True, False, False]
    assert summary["agreement"] == 1.0
    run_grid(spec, tmp_path / "out", execute, say=lambda s: None)
    assert len(calls) == 3  # resumed: nothing ran again
    lines = (tmp_path / "out" / "real.jsonl").read_text().splitlines()
    assert len(lines) == 3 and all(json.loads(x)["real"]["scenario"] == "w1" for x in lines)


def test_real_device_without_a_gpu_is_one_line_exit_2(scenario_file):
    from cuzk_sim.gpu.backends import gpu_missing

    if gpu_missing() is None:
        pytest.skip("a GPU is present: the real device runs")
    r = runner.invoke(app, ["gpu-run", str(scenario_file())])
    assert r.exit_code == 2 and "--device real" in r.output and "Traceback" not in r.output
    spec = Path(__file__).parents[2] / "scenarios" / "validation" / "h200-grid.toml"
    r = runner.invoke(app, ["validate", str(spec), "--out", str(scenario_file().parent / "o")])
    assert r.exit_code == 2 and "--predict-only" in r.output


def test_cuzk_log_reads_back_with_the_logs_command(scenario_file, tmp_path):
    log = tmp_path / "cuzk.log"
    r = runner.invoke(
        app, ["gpu-run", str(scenario_file()), "--device", "dry-run", "--log", str(log)]
    )
    assert r.exit_code == 0, r.output
    d = json.loads(runner.invoke(app, ["logs", str(log), "--json"]).stdout)  # read as cuzk's
    assert not d["malformed"] and d["engine_starts"] == 1
    assert (d["partitions_total"], d["proofs_done"]) == (8, 2)  # 2 proofs of 4 partitions


@pytest.mark.parametrize("scope", ["device", "global", "none"])
def test_the_provers_lock_is_the_scenarios_lock(scenario_file, scope, monkeypatch):
    """The prover takes its lock through Device.lock(); in the pipeline that must be the
    scenario's lock (variant.mutex_scope), recorded once per partition (wait and hold),
    whatever the prover's own per-GPU lock would be."""
    path = scenario_file(workers=2, count=2, partitions=4)
    path.write_text(path.read_text() + f'\n[variant]\nmutex_scope = "{scope}"\n')
    taken: list[object] = []
    original = RealRun.lock_for

    def spy(self, gpu):
        lock = original(self, gpu)
        taken.append(lock)
        return lock

    monkeypatch.setattr(RealRun, "lock_for", spy)
    run = _run(path)
    assert run.result.partitions_completed == 8
    mutex_events = [f for _, name, f in run.events if name == "mutex"]
    assert len(mutex_events) == 8  # one hold per partition's GPU section
    assert len(taken) == 8
    assert all((lock is None) == (scope == "none") for lock in taken)


def test_gpu_run_log_carries_the_mutex_lines(scenario_file, tmp_path):
    path = scenario_file(workers=2, count=1, partitions=3)
    log = tmp_path / "cuzk.log"
    result = runner.invoke(app, ["gpu-run", str(path), "--device", "dry-run", "--log", str(log)])
    assert result.exit_code == 0, result.output
    lines = log.read_text().splitlines()
    assert sum("mutex_held_ms=" in line for line in lines) == 3
    assert sum(",GPU_END," in line for line in lines) == 3


def test_validate_profile_prices_every_configuration_and_guards_the_resume(tmp_path, scenario_file):
    from cuzk_sim.profiles.profile import load_profile
    from cuzk_sim.validation.grid import pipeline_executor, run_grid
    from cuzk_sim.validation.spec import load_spec

    scenario_file(workers=1, count=1, partitions=2)
    (tmp_path / "spec.toml").write_text(
        'name = "t"\nbase = "s.toml"\ncaps = [3]\ngenerous = false\n'
        '[[config]]\nname = "w1"\n[[config]]\nname = "w2"\n'
        'set = { "engine.gpus.gpu_workers_per_device" = 2 }\n'
    )
    # a copy of the bundled profile under another name, as `calibrate -o` writes one
    text = (Path(__file__).parents[2] / "cuzk_sim" / "profiles" / "h200.toml").read_text()
    slow = tmp_path / "mine.toml"
    slow.write_text(text.replace('name = "h200"', 'name = "mine"', 1))
    spec = load_spec(tmp_path / "spec.toml", profile=str(slow))
    assert {c.scenario.profile.name for c in spec.configs} == {"mine"}
    assert load_profile(str(slow)).kernels == load_profile("h200").kernels
    execute = pipeline_executor("dry-run")
    run_grid(spec, tmp_path / "out", execute, say=lambda s: None)
    pred = json.loads((tmp_path / "out" / "predictions.json").read_text())
    assert pred["profile"] == str(slow.resolve())
    assert f"profile `{slow.resolve()}`" in (tmp_path / "out" / "report.md").read_text()
    with pytest.raises(InputError, match="--fresh"):  # resuming under another profile
        run_grid(load_spec(tmp_path / "spec.toml"), tmp_path / "out", execute, say=print)


def test_gpu_run_set_changes_the_scenario_as_run_set_does(scenario_file):
    path = scenario_file(workers=1, count=1, partitions=2)
    r = runner.invoke(
        app,
        ["gpu-run", str(path), "--device", "dry-run", "--json",
         "--set", "workload[0].count=3", "--set", "engine.gpus.gpu_workers_per_device=2"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)  # the memory estimate goes to stderr
    assert out["proofs_submitted"] == 3 and out["partitions_completed"] == 6
    r = runner.invoke(app, ["gpu-run", str(path), "--device", "dry-run", "--set", "nope.x=1"])
    assert r.exit_code == 2 and "nope" in r.output and "Traceback" not in r.output


def test_step_marks_become_spans_stats_and_log_events(scenario_file, monkeypatch):
    """The CUDA-event path of step timing, with a stand-in for CuPy's events: each mark's
    GPU time and the stream's idle time before it (the lock mark resets the gap)."""
    import sys
    import types

    from cuzk_sim.gpu.pipeline_device import PipelineDevice

    from cuzk_sim.plan.contract import Copy, Kernel

    class Ev:
        def __init__(self, t: float) -> None:
            self.t = t

        def synchronize(self) -> None:
            pass

    cuda = types.SimpleNamespace(
        get_elapsed_time=lambda a, b: (b.t - a.t) * 1000,
        Event=lambda: types.SimpleNamespace(record=lambda: None),
    )
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(cuda=cuda))
    spec = RunSpec.from_scenario(load_scenario(scenario_file()))
    run = RealRun(spec, LedgerBackend(spec.vram, spec.context, spec.gpus), step_times=True)
    run.t0 = 100.0
    dev = PipelineDevice(run, "gpu0-w0", 0, "p-0/0", spec.work["porep"].flags)
    dev.mark_t0 = 100.0
    lock = Ev(0.0)
    dev.marks = [
        ("(lock)", "lock", lock, lock, None),
        ("upload_a", "copy", Ev(0.002), Ev(0.005), Copy("upload_a", 4096, "HtoD")),
        ("msm_h", "kernel", Ev(0.006), Ev(0.016), Kernel("msm_h", "msm_g1", 1024)),
    ]
    dev._collect_marks()
    spans = [(s.name, s.cat, round(s.start_s, 6), round(s.end_s, 6)) for s in run.spans]
    assert spans == [("upload_a", "copy", 0.002, 0.005), ("msm_h", "kernel", 0.006, 0.016)]
    steps = [f for _, e, f in run.events if e == "step"]
    assert [(f["step"], f["kind"], f["size"], f["nbytes"]) for f in steps] == [
        ("upload_a", "copy_htod", 0, 4096),
        ("msm_h", "msm_g1", 1024, 0),
    ]
    # held the stream: 3 ms + 2 ms idle after the lock; 10 ms + 1 ms idle
    assert [round(f["seconds"], 6) for f in steps] == [0.005, 0.011]
    assert dev.marks == []
    assert run.details()["steps"]["msm_h"]["idle_before_ms"] == pytest.approx(1.0)
    dev.mode = "real"  # the hook around every kernel and copy marks the step it runs
    dev.steps.append(Kernel("ntt_a", "ntt", 64))
    assert dev._timed("ntt_a", lambda: 42) == 42
    assert [(m[0], m[1], m[4]) for m in dev.marks] == [("ntt_a", "kernel", dev.steps[-1])]
    dev.steps.append(Copy("upload_w", 256, "HtoD"))
    dev._timed("upload_w", lambda: None)
    assert dev.marks[-1][1] == "copy"


def test_step_timing_reads_its_events_once_the_partition_has_returned(scenario_file, monkeypatch):
    """The CUDA event reads of step timing come after the partition's unlock AND after
    its job is returned (its proof counted): read at the unlock, they waited for the next
    lock holder's pageable a/b/c uploads, and a partition that ended at 6.0 s returned at
    7.7 s (docs/validation.md, the production grid)."""
    from cuzk_sim.gpu.pipeline_device import PipelineDevice

    order: list[tuple[str, str]] = []
    lock = __import__("threading").Lock()

    def note(what: str, part: str) -> None:
        with lock:
            order.append((what, part))

    unlock, returned = PipelineDevice.on_unlock, RealRun._returned
    monkeypatch.setattr(PipelineDevice, "_collect_marks", lambda d: note("read", d.part))
    monkeypatch.setattr(
        PipelineDevice,
        "on_unlock",
        lambda d, *a: (note("unlock", d.part), unlock(d, *a))[1],
    )
    monkeypatch.setattr(
        RealRun,
        "_returned",
        lambda r, proof, job: (note("returned", job.partition), returned(r, proof, job))[1],
    )
    spec = RunSpec.from_scenario(load_scenario(scenario_file(workers=2, count=2, partitions=2)))
    run = RealRun(spec, LedgerBackend(spec.vram, spec.context, spec.gpus), step_times=True)
    result = run.execute()
    assert result.proofs_completed == 2, [j.reason for j in run.jobs]
    parts = sorted({p for _, p in order})
    assert len(parts) == 4
    for part in parts:
        mine = [w for w, p in order if p == part]
        assert mine == ["unlock", "returned", "read"], (part, mine)
