"""Round trip: the model runs with a known profile, writes a cuzk log, and `calibrate`
(from a different base) recovers the known figures within 1 %.

cuzk prints whole milliseconds, so the known figures are whole milliseconds at the size
the line times (a figure of 54.4 ms could only come back as 54 ms); NTT and pointwise
move by one factor, and so do the two batch additions, because one line times each pair
(docs/logs.md). Hosts have enough cores that CPU work never shares them: the figures are
the profile's own, not contention's.
"""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuzk_sim.cli import app
from cuzk_sim.logs.from_result import write_scenario_log
from cuzk_sim.logs.toml_out import dumps
from cuzk_sim.profiles.profile import load_profile
from cuzk_sim.scenario import load_scenario
from cuzk_sim.simulate.runner import simulate

runner = CliRunner()
KNOWN = {  # figure -> (time at the profile's size, size) of the known profile
    "cpu.synthesis": "27 s",
    "cpu.prep_msm": "1300 ms",
    "cpu.msm_g2_cpu": "800 ms",
    "kernel.ntt": "54 ms",  # x1.2
    "kernel.pointwise": "12 ms",  # x1.2, with the NTT
    "kernel.msm_g1": "420 ms",
    "kernel.batch_add_g1": "120 ms",  # x0.8
    "kernel.batch_add_g2": "360 ms",  # x0.8, with G1
}
KNOWN_PAGEABLE = "8 GiB/s"


def known_profile(tmp_path):
    raw = tomllib.loads((resources.files("cuzk_sim.profiles") / "rtx5070ti.toml").read_text())
    raw["name"] = "known"
    for key, time in KNOWN.items():
        section, kind = key.split(".")
        raw[section][kind]["time"] = time
    raw["copy_engine"]["pageable"] = KNOWN_PAGEABLE
    # fixed figures only: without the synthesis contention law (model/host_side.py) a
    # partition's logged synthesis is the profile's time, which calibrate must recover
    for key in ("memory_bound", "saturating"):
        raw["cpu"]["synthesis"].pop(key, None)
    path = tmp_path / "known.toml"
    path.write_text(dumps(raw))
    return path


def scenario(tmp_path, profile, prestage: str, workers: int):
    text = f"""
name = "roundtrip-{prestage}-{workers}"
seed = 3
profile = "{profile}"
[hardware]
gpus = 1
vram = "16 GiB"
host_cores = 1024
[engine.gpus]
gpu_workers_per_device = {workers}
[engine.pce]
cached = ["porep"]
[variant]
prestage = "{prestage}"
pool_release_threshold = "{"max" if prestage != "off" else "0 B"}"
[[workload]]
kind = "porep"
count = 3
"""
    path = tmp_path / f"s-{prestage}.toml"
    path.write_text(text)
    return path


def cost_at(profile, key: str) -> float:
    section, kind = key.split(".")
    raw = tomllib.loads(Path(profile.source).read_text())
    size = int(raw[section][kind]["size"])
    table = profile.kernels if section == "kernel" else profile.cpus
    return table[kind].seconds(size)


@pytest.mark.parametrize(("prestage", "workers"), [("off", 2), ("outside_mutex", 1)])
def test_model_log_calibrates_back_to_the_known_profile(tmp_path, prestage, workers):
    known = known_profile(tmp_path)
    scn = load_scenario(scenario(tmp_path, known, prestage, workers))
    result = simulate(scn, record=True)
    assert result.proofs_completed == 3 and not result.oom
    log = tmp_path / "model.log"
    write_scenario_log(result, scn, str(log))
    out = tmp_path / "fitted.toml"
    r = runner.invoke(app, ["calibrate", str(log), "--base", "rtx5070ti", "-o", str(out)])
    assert r.exit_code == 0, r.output
    fitted, truth, base = (
        load_profile(str(out)),
        load_profile(str(known)),
        load_profile("rtx5070ti"),
    )
    for key in KNOWN:
        got, want = cost_at(fitted, key), cost_at(truth, key)
        assert got == pytest.approx(want, rel=0.01), key
        assert abs(cost_at(base, key) / want - 1) > 0.05, key  # the base was really off
    raw = tomllib.loads(out.read_text())
    assert raw["kernel"]["ntt"]["source"].startswith("fitted from")
    assert raw["kernel"]["msm_g2"]["source"].startswith("kept from base rtx5070ti")
    assert raw["cpu"]["assemble"]["source"].startswith("kept from base rtx5070ti")
    # basis (measured | fitted | derived | assumed): one line timing one step is measured,
    # a shared factor or a two-point fit is fitted, a kept figure keeps the base's
    base_raw = tomllib.loads((resources.files("cuzk_sim.profiles") / "rtx5070ti.toml").read_text())
    assert raw["cpu"]["synthesis"]["basis"] == "measured"
    assert raw["kernel"]["ntt"]["basis"] == "fitted"
    assert raw["kernel"]["msm_g2"]["basis"] == base_raw["kernel"]["msm_g2"]["basis"]
    assert raw["prover"] == "cuzk"
    if prestage == "off":  # a/b/c go up inside the NTT phase: the upload is visible
        assert fitted.pageable_bw == pytest.approx(truth.pageable_bw, rel=0.01)
    else:  # pre-staged: the upload overlaps, the base's rate is kept
        assert fitted.pageable_bw == base.pageable_bw


def test_scenario_from_log_replays_the_observed_seconds_per_proof(tmp_path):
    known = known_profile(tmp_path)
    scn = load_scenario(scenario(tmp_path, known, "off", 2))
    result = simulate(scn, record=True)
    log = tmp_path / "model.log"
    write_scenario_log(result, scn, str(log))
    out = tmp_path / "replay.toml"
    r = runner.invoke(
        app,
        [
            "scenario-from-log",
            str(log),
            "-o",
            str(out),
            "--profile",
            str(known),
            "--vram",
            "16 GiB",
        ],
    )
    assert r.exit_code == 0, r.output
    replay = load_scenario(out)
    assert replay.config.gpu_workers_per_device == 2
    assert replay.spec.variant.prestage == "off" and replay.spec.variant.mutex_scope == "device"
    assert [(w.kind, w.count) for w in replay.spec.workload] == [("porep", 3)]
    again = simulate(replay)
    assert again.seconds_per_proof == pytest.approx(result.seconds_per_proof, rel=0.02)
    r = runner.invoke(app, ["run", str(out)])
    assert "predicted" in r.stdout and "against [expect]" in r.stdout


def test_a_log_with_only_the_mutex_lines_calibrates_the_whole_section(tmp_path):
    """What gpu-run writes for our prover (TIMELINE, pre_lock, mutex_held): one factor
    for the kernels of the GPU section; a replay then predicts the logged s/proof."""
    raw = tomllib.loads((resources.files("cuzk_sim.profiles") / "rtx5070ti.toml").read_text())
    for entry in raw["kernel"].values():  # the truth: every kernel twice as slow as the base
        ms = float(entry["time"].split()[0]) * (1000 if entry["time"].endswith(" s") else 1)
        entry["time"] = f"{ms * 2.0} ms"
    truth = tmp_path / "truth.toml"
    truth.write_text(dumps(raw))
    text = f"""
seed = 2
profile = "{truth}"
[hardware]
gpus = 1
host_cores = 1024
[engine.gpus]
gpu_workers_per_device = 1
[engine.pce]
cached = ["porep"]
[plan]
gpu_prover = {{ domain_log2 = 24 }}
[[workload]]
kind = "porep"
count = 3
partitions = 4
"""
    s_path = tmp_path / "ours.toml"
    s_path.write_text(text)
    scn = load_scenario(s_path)
    result = simulate(scn, record=True)
    log = tmp_path / "full.log"
    write_scenario_log(result, scn, str(log))
    keep = ("TIMELINE,", "pre_lock_cpu_ms", "mutex_held_ms", " INFO ")
    only = tmp_path / "mutex-only.log"
    only.write_text(
        "".join(x for x in log.read_text().splitlines(True) if any(k in x for k in keep))
    )
    out = tmp_path / "fit.toml"
    r = runner.invoke(
        app,
        [
            "calibrate",
            str(only),
            "--base",
            "rtx5070ti",
            "--scenario",
            str(s_path),
            "--kind",
            "porep",
            "-o",
            str(out),
        ],
    )
    assert r.exit_code == 0, r.output
    fitted = tomllib.loads(out.read_text())
    assert "mutex_held_ms (the whole GPU section" in fitted["kernel"]["ntt"]["source"]
    assert fitted["prover"] == "cuzk_sim.gpu"  # the plans were our prover's
    replay = tmp_path / "replay.toml"
    r = runner.invoke(
        app,
        [
            "scenario-from-log",
            str(only),
            "--kind",
            "porep",
            "--profile",
            str(out),
            "--plan-from",
            str(s_path),
            "-o",
            str(replay),
        ],
    )
    assert r.exit_code == 0, r.output
    predicted = simulate(load_scenario(replay)).seconds_per_proof
    base_scn = text.replace(str(truth), "rtx5070ti")
    (tmp_path / "base.toml").write_text(base_scn)
    with_base = simulate(load_scenario(tmp_path / "base.toml")).seconds_per_proof
    assert predicted == pytest.approx(result.seconds_per_proof, rel=0.02)
    assert abs(with_base / result.seconds_per_proof - 1) > 0.05  # the base alone was off


def test_per_partition_synthesis_spans_become_their_partitions_lines(tmp_path):
    """cuzk's Phase 7 path (`[engine.synthesis] partition_workers`): one synthesis per
    partition, each its own SYNTH_START / SYNTH_END."""
    s = tmp_path / "pw.toml"
    s.write_text(
        """
seed = 1
profile = "rtx5070ti"
[hardware]
gpus = 1
host_cores = 1024
[engine.gpus]
gpu_workers_per_device = 1
[engine.synthesis]
partition_workers = 4
[engine.pce]
cached = ["porep"]
[variant]
pool_release_threshold = "0 B"
[[workload]]
kind = "porep"
count = 2
"""
    )
    scn = load_scenario(s)
    result = simulate(scn, record=True)
    assert result.proofs_completed == 2
    log = tmp_path / "pw.log"
    write_scenario_log(result, scn, str(log))
    text = log.read_text()
    assert text.count(",SYNTH_START,") == 20 and text.count(",SYNTH_END,") == 20
    # one partition's synthesis alone, as the profile prices it: 4 at once on 1024 cores,
    # taken as 1024 / 96 of the profile's hosts, stay below the contention law's
    # saturation (2 x 1024 / 96 = 21.3 syntheses): 29 s
    assert "synth_ms=29000" in text
