"""gpu-run on the GPU: a scenario that fits, one that must OOM, on_oom continue / stop,
injected faults with every proof compared with the reference prover's. Marker `gpu`."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).parents[2]
VALIDATION = ROOT / "scenarios" / "validation"


def _scenario(tmp: Path, vram: str, log2: int, workers: int, on_oom: str, count: int, parts: int):
    path = tmp / "s.toml"
    path.write_text(
        textwrap.dedent(
            f"""
            seed = 1
            profile = "h200"
            on_oom = "{on_oom}"
            [hardware]
            gpus = 1
            vram = "{vram}"
            [engine.gpus]
            gpu_workers_per_device = {workers}
            [plan]
            gpu_prover = {{ domain_log2 = {log2}, witness = "dense" }}
            [plan.host]
            synthesis = "0 s"
            pce = false
            [[workload]]
            kind = "porep"
            count = {count}
            partitions = {parts}
            """
        )
    )
    return path


def _run(path: Path, faults=(), verify=False):
    import dataclasses

    from cuzk_sim.gpu.backends import backend_for
    from cuzk_sim.gpu.faults import FaultPlan
    from cuzk_sim.gpu.partition_data import reference_data
    from cuzk_sim.gpu.pipeline import RealRun
    from cuzk_sim.gpu.prover import PartitionShape
    from cuzk_sim.gpu.run_spec import KindWork, RunSpec

    from cuzk_sim.scenario import load_scenario

    spec = RunSpec.from_scenario(load_scenario(path))
    refs = None
    if verify:
        refs = {
            k: reference_data(w.shape.log_n, key_pinned=w.flags.key_pinned)
            for k, w in spec.work.items()
        }
        work = {
            k: KindWork(PartitionShape.of_key(refs[k].pk), w.flags) for k, w in spec.work.items()
        }
        spec = dataclasses.replace(spec, work=work)
    run = RealRun(spec, backend_for("real", spec), FaultPlan(tuple(faults), 1), verify=refs)
    return run, run.execute()


def test_fits_and_pools_return_to_their_start(tmp_path):
    run, res = _run(_scenario(tmp_path, "140 GiB", 12, 2, "continue", 2, 4))
    assert not res.oom and res.proofs_completed == 2 and res.partitions_completed == 8
    d = run.details()
    assert d["leaked_bytes"] == {"0": 0} and d["jobs_lost"] == 0
    assert res.peak_vram_bytes[0] > d["context_bytes"]["0"]
    assert res.seconds_per_proof is not None and res.seconds_per_proof > 0


def _tight_card() -> str:
    """The h200 profile's CUDA context + 5.2 MiB (+ < 2 MiB of ballast rounding): a 2^16
    partition needs more (its MSM buckets alone are 12 MiB)."""
    from cuzk_sim.profiles.profile import load_profile

    return f"{load_profile('h200').context_overhead / 2**20 + 5.2:.1f} MiB"


def test_must_oom_continue(tmp_path):
    run, res = _run(_scenario(tmp_path, _tight_card(), 16, 1, "continue", 2, 2))
    assert res.oom and not res.stopped_at_oom
    assert res.proofs_failed == 2 and res.partitions_failed == 2
    assert [e.partition for e in res.fatal_ooms] == ["porep-0/0", "porep-1/0"]
    assert run.details()["leaked_bytes"] == {"0": 0}


def test_must_oom_stop(tmp_path):
    run, res = _run(_scenario(tmp_path, _tight_card(), 16, 2, "stop", 2, 2))
    assert res.oom and res.stopped_at_oom and res.partitions_failed == 1
    assert res.proofs_completed == 0 and run.details()["jobs_lost"] == 0


def test_faults_no_invalid_proof_no_lost_job_no_leak(tmp_path):
    from cuzk_sim.gpu.faults import Fault

    faults = [
        Fault.parse(f) for f in ("oom:random:0.01", "oom:msm_b_g2.points:0.1", "exception:0.01")
    ]
    run, res = _run(_scenario(tmp_path, "140 GiB", 5, 3, "continue", 13, 4), faults, True)
    d = run.details()
    assert d["jobs_total"] == 52 and d["jobs_lost"] == 0 and d["unexplained_jobs"] == []
    assert d["proofs_invalid"] == 0 and d["proofs_verified"] == d["jobs"]["proved"] > 0
    assert d["leaked_bytes"] == {"0": 0}
    assert sum(d["faults_injected"].values()) > 0


def test_key_pinned_run_uploads_from_pinned_memory_and_every_proof_is_right(tmp_path):
    """plan.gpu_prover.key_pinned in gpu-run: the run's key points (synthetic, and the
    reference key's with --verify) live in page-locked memory and every proof equals the
    reference prover's."""
    from cuzk_sim.gpu.device import host_is_pinned
    from cuzk_sim.gpu.partition_data import synthetic_data

    path = _scenario(tmp_path, "140 GiB", 6, 2, "continue", 3, 4)
    text = path.read_text()
    assert "domain_log2 = 6," in text  # the flag below lands in the gpu_prover table
    path.write_text(text.replace("domain_log2 = 6,", "domain_log2 = 6, key_pinned = true,"))
    run, res = _run(path, verify=True)
    d = run.details()
    assert not res.oom and d["proofs_invalid"] == 0 and d["proofs_verified"] == 12
    (kind,) = run.verify
    assert all(host_is_pinned(v) for v in run.verify[kind].key.points.values())
    shape = run.spec.work[kind].shape
    pinned, pageable = synthetic_data(shape, True, True), synthetic_data(shape, True, False)
    assert all(host_is_pinned(v) for v in pinned.data.key_points.values())
    assert not any(host_is_pinned(v) for v in pageable.data.key_points.values())
    for stage, v in pinned.data.key_points.items():  # the same points, pinned or not
        assert (v == pageable.data.key_points[stage]).all()
    # plan.gpu_prover.pinned: the inputs too (a/b/c, witness, a sparse query's scalars),
    # the same values as the pageable ones of the shape
    both = synthetic_data(shape, True, True, True)
    host = [both.data.abc, both.data.witness, *both.data.scalars.values()]
    assert all(host_is_pinned(a) for a in host)
    assert not host_is_pinned(pageable.data.abc) and not host_is_pinned(pageable.data.witness)
    assert (both.data.abc == pageable.data.abc).all()
    assert (both.data.witness == pageable.data.witness).all()


def test_json_keys_equal_run_json(tmp_path):
    from typer.testing import CliRunner

    from cuzk_sim.cli import app

    path = _scenario(tmp_path, "140 GiB", 10, 2, "continue", 1, 2)
    cli = CliRunner()
    real = json.loads(cli.invoke(app, ["gpu-run", str(path), "--json"]).stdout)
    model = json.loads(cli.invoke(app, ["run", str(path), "--json"]).stdout)
    assert real.pop("device") == "real"  # the one key gpu-run adds: who ran it
    assert list(real) == list(model)


def test_log_steps_time_every_gpu_step_and_calibrate_fits_them(tmp_path):
    """gpu-run --log writes one CUZK_SIM_STEP line per GPU step of every partition (and
    the assembly); calibrate fits the kernel kinds, the copy rate and the assembly."""
    from typer.testing import CliRunner

    from cuzk_sim.cli import app
    from cuzk_sim.logs.parse import read_log
    from cuzk_sim.plan.contract import Copy, Kernel
    from cuzk_sim.profiles.profile import load_profile
    from cuzk_sim.scenario import load_scenario

    path = _scenario(tmp_path, "140 GiB", 12, 2, "continue", 2, 2)
    log, details = tmp_path / "run.log", tmp_path / "d.json"
    cli = CliRunner()
    r = cli.invoke(app, ["gpu-run", str(path), "--log", str(log), "--details", str(details)])
    assert r.exit_code == 0, r.output
    plan = next(iter(load_scenario(path).plans.values()))
    gpu_steps = [s for s in plan.steps if isinstance(s, (Kernel, Copy))]
    steps = [rec for rec in read_log(log) if rec.kind == "sim_step"]
    assert len([s for s in steps if s.fields["kind"] != "assemble"]) == 4 * len(gpu_steps)
    assert len([s for s in steps if s.fields["kind"] == "assemble"]) == 4
    assert all(int(s.fields["us"]) > 0 for s in steps if s.fields["kind"].startswith("msm"))
    assert set(json.loads(details.read_text())["steps"]) == {s.name for s in gpu_steps}
    out = tmp_path / "mine.toml"
    r = cli.invoke(app, ["calibrate", str(log), "--base", "h200", "-o", str(out)])
    assert r.exit_code == 0, r.output
    text = out.read_text()
    assert text.count("CUZK_SIM_STEP") >= 4  # msm_g1, msm_g2, ntt, pointwise at least
    assert load_profile(str(out)).cpus["assemble"].seconds(1) > 0
