"""gpu-run honours a scenario's faults and time as `run` does (issue 30, item 3), on the
dry-run device: unknown fault buffers refused; lost GPUs, daemon restarts, far arrivals
and `duration` give the model's outcome, and the run ends once its work is done."""

from __future__ import annotations

import json
import threading

from cuzk_sim.gpu.backends import LedgerBackend
from cuzk_sim.gpu.faults import FaultPlan
from cuzk_sim.gpu.pipeline import RealRun
from cuzk_sim.gpu.run_spec import RunSpec
from typer.testing import CliRunner
from validation_fixtures import BASE, small_scenario

from cuzk_sim.cli import app
from cuzk_sim.scenario import load_scenario

runner = CliRunner()


def _scenario(tmp_path, top: str = "", workload: str = "", gpus: int = 1, **kw):
    body = BASE.format(
        vram="140 GiB",
        workers=kw.get("workers", 1),
        on_oom="continue",
        count=kw.get("count", 2),
        partitions=kw.get("partitions", 2),
    )
    body = top + "\n" + body.replace("gpus = 1", f"gpus = {gpus}") + workload
    return small_scenario(tmp_path, body)


def _both(path, *extra: str) -> tuple[object, object]:
    """(run, gpu-run --device dry-run) results: each as (exit code, JSON or None)."""
    out = []
    for cmd in (["run"], ["gpu-run", "--device", "dry-run"]):
        r = runner.invoke(app, [*cmd, str(path), "--json", *extra])
        out.append((r.exit_code, json.loads(r.stdout) if r.exit_code in (0, 1) else r.output))
    return out[0], out[1]


VERDICT = ("oom", "proofs_submitted", "proofs_completed", "proofs_failed", "stalled")


def _verdict(d: dict) -> tuple:
    return tuple(d[k] for k in VERDICT)


# --- 1. fault targets


class _Recorder(FaultPlan):
    """Records the buffers the run really allocates (the oracle of the refusal's list)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def at_alloc(self, buffer, nbytes, free, gpu):  # noqa: ANN001
        self.seen.add(buffer)


def test_an_oom_fault_at_a_buffer_the_plan_lacks_is_refused_naming_the_plans_buffers(tmp_path):
    path = _scenario(tmp_path)
    spec = RunSpec.from_scenario(load_scenario(path))
    rec = _Recorder()
    RealRun(spec, LedgerBackend(spec.vram, spec.context, spec.gpus), rec).execute()
    assert "msm_h.points" in rec.seen  # a real buffer, so the list below is checkable

    r = runner.invoke(app, ["gpu-run", str(path), "--device", "dry-run", "--fault", "oom:nope:1"])
    assert r.exit_code == 2
    line = r.output.strip()
    assert "\n" not in line and "Traceback" not in line
    assert "'nope'" in line
    listed = set(line.split("its buffers: ")[1].split(", "))
    assert listed == rec.seen  # every buffer the run allocates, and no other

    ok = runner.invoke(
        app, ["gpu-run", str(path), "--device", "dry-run", "--fault", "oom:msm_h.points:1"]
    )
    assert ok.exit_code == 1  # accepted, and it fires: every proof OOMs at msm_h.points
    assert "msm_h.points" in ok.output


# --- 2. lost GPUs and restarts


LOST0 = 'lost_devices = [{ at = "0 s", gpu = 0 }]'


def test_the_only_gpu_lost_at_zero_runs_nothing_and_stalls_as_in_the_model(tmp_path):
    model, real = _both(_scenario(tmp_path, LOST0))
    assert model[0] == real[0] == 1  # a stall: exit 1 in both
    # hand count: 2 proofs submitted, none can run (no GPU), none failed: both stall
    assert _verdict(model[1]) == _verdict(real[1]) == (False, 2, 0, 0, True)
    assert "gpu0" in real[1]["stall"]


def test_a_lost_second_gpu_leaves_the_work_to_the_first(tmp_path):
    path = _scenario(tmp_path, 'lost_devices = [{ at = "0 s", gpu = 1 }]', gpus=2, count=3)
    model, real = _both(path)
    assert model[0] == real[0] == 0
    assert _verdict(model[1]) == _verdict(real[1]) == (False, 3, 3, 0, False)
    run = _run(path)
    assert {j.worker for j in run.jobs} == {"gpu0-w0"}  # nothing ran on the lost GPU


def _run(path, faults: FaultPlan | None = None) -> RealRun:
    spec = RunSpec.from_scenario(load_scenario(path))
    run = RealRun(spec, LedgerBackend(spec.vram, spec.context, spec.gpus), faults or FaultPlan())
    run.result = run.execute()
    return run


class _LoseAtFirstAlloc(FaultPlan):
    """Loses GPU 0 while the first partition is on it (at its first allocation)."""

    run: RealRun | None = None

    def at_alloc(self, buffer, nbytes, free, gpu):  # noqa: ANN001
        if self.run is not None and not self.run.lost:
            self.run._lose(0)


def test_a_gpu_lost_mid_partition_fails_that_partition_with_its_proof(tmp_path):
    spec = RunSpec.from_scenario(load_scenario(_scenario(tmp_path, count=2, partitions=2)))
    faults = _LoseAtFirstAlloc()
    run = RealRun(spec, LedgerBackend(spec.vram, spec.context, spec.gpus), faults)
    faults.run = run
    res = run.execute()
    # as in model/faults.py lose_device: the partition in flight fails with its proof;
    # the 3 partitions still queued wait for a worker that never comes (a stall)
    assert (res.proofs_failed, res.partitions_failed, res.proofs_completed) == (1, 1, 0)
    assert res.stalled and res.stall is not None
    assert [j.reason for j in run.jobs if j.status == "failed"] == ["device lost: gpu0"]
    assert sorted(j.status for j in run.jobs) == ["failed", "stopped", "stopped", "stopped"]
    assert run.details()["jobs_lost"] == 0 and run.details()["leaked_bytes"] == {"0": 0}


def test_a_failed_proofs_partitions_left_without_a_gpu_are_a_stall(tmp_path):
    # model/context.py partition_back: a proof finishes (failed or not) only when every
    # partition is back; its second partition never runs, so the run stalls
    spec = RunSpec.from_scenario(load_scenario(_scenario(tmp_path, count=1, partitions=2)))
    faults = _LoseAtFirstAlloc()
    run = RealRun(spec, LedgerBackend(spec.vram, spec.context, spec.gpus), faults)
    faults.run = run
    res = run.execute()
    assert (res.proofs_failed, res.proofs_completed) == (1, 0)
    assert res.stalled and "porep-0" in res.stall


def test_a_restart_fails_the_proofs_in_flight_and_later_arrivals_run(tmp_path):
    late = '\n[[workload]]\nkind = "porep"\ncount = 1\npartitions = 2\nstart = "20 s"\n'
    path = _scenario(tmp_path, 'restarts = ["0 s"]', late, count=2)
    model, real = _both(path)
    assert model[0] == real[0] == 0
    # the two proofs arriving at 0 s are lost in the restart at 0 s; the one at 20 s runs
    assert _verdict(model[1]) == _verdict(real[1]) == (False, 3, 1, 2, False)
    after = _scenario(tmp_path, 'restarts = ["10 s"]', late, count=2)
    model, real = _both(after)  # nothing in flight at 10 s: nothing lost
    assert _verdict(model[1]) == _verdict(real[1]) == (False, 3, 3, 0, False)


# --- 3. time


def test_far_arrivals_are_pulled_in_on_the_scenarios_clock(tmp_path):
    path = _scenario(tmp_path, workload="")
    text = path.read_text().replace("count = 2", 'count = 3\nstart = "1e9 s"\nevery = "1 h"')
    path.write_text(text)
    run = _run(path)
    res = run.result
    assert res.proofs_completed == 3 and res.proofs_failed == 0
    # submitted at 1e9 s, 1e9 + 3600 s, 1e9 + 7200 s of the scenario's clock (hand
    # arithmetic); the idle time before each was skipped, not waited
    assert [p.submitted_s for p in run.proofs] == [1e9, 1e9 + 3600, 1e9 + 7200]
    assert all(t >= 1e9 + 7200 for _, _, t in res.proof_done_times[2:])
    assert run.skipped_s > 1e9 + 7000


def test_duration_bounds_the_submissions_and_the_run_ends_with_its_work(tmp_path):
    path = _scenario(tmp_path)
    text = path.read_text().replace("count = 2", 'every = "1 h"')
    path.write_text('duration = "3 h"\n' + text)
    before = set(threading.enumerate())
    model, real = _both(path)
    # arrivals at 0, 1 h, 2 h and 3 h: 4 submitted; the one at the 3 h deadline never
    # runs (the model's proof is still in synthesis when the run stops): 3 done
    assert model[0] == real[0] == 0
    assert _verdict(model[1]) == _verdict(real[1]) == (False, 4, 3, 0, False)
    # no timer or worker thread outlives the run (a deadline timer kept the process up)
    assert set(threading.enumerate()) <= before


def test_every_gpu_lost_under_a_duration_waits_for_the_deadline_without_a_stall(tmp_path):
    path = _scenario(tmp_path, LOST0)
    text = path.read_text().replace("count = 2", 'every = "1 h"')
    path.write_text('duration = "2 h"\n' + text)
    model, real = _both(path)
    # arrivals at 0, 1 h, 2 h; no GPU runs them; the deadline ends the run (no stall)
    assert model[0] == real[0] == 0
    assert _verdict(model[1]) == _verdict(real[1]) == (False, 3, 0, 0, False)


class _HoldUntilStopped(FaultPlan):
    """Holds the first partition (at its first allocation) until the run stops."""

    run: RealRun | None = None

    def at_alloc(self, buffer, nbytes, free, gpu):  # noqa: ANN001
        if self.run is not None:
            self.run.stopped.wait(30)


def test_the_deadline_stops_a_run_with_work_outstanding(tmp_path):
    path = _scenario(tmp_path, 'duration = "0.05 s"', count=1, partitions=2)
    spec = RunSpec.from_scenario(load_scenario(path))
    faults = _HoldUntilStopped()
    run = RealRun(spec, LedgerBackend(spec.vram, spec.context, spec.gpus), faults)
    faults.run = run
    res = run.execute()
    # the partition on the GPU at the deadline is cut short (its result not counted), the
    # other never starts; the proof is neither completed nor failed, and no stall
    assert (res.proofs_submitted, res.proofs_completed, res.proofs_failed) == (1, 0, 0)
    assert not res.stalled and not res.oom
    assert [j.status for j in run.jobs] == ["stopped", "stopped"]
    assert run.jobs[0].reason == "the scenario's duration ended first"
    assert run.details()["jobs_lost"] == 0 and run.details()["leaked_bytes"] == {"0": 0}
