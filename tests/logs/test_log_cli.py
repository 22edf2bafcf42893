"""`run --log`, `calibrate` and `scenario-from-log` as a user calls them, and their bad
input: one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuzk_sim.cli import app

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures"
runner = CliRunner()


def test_run_log_writes_a_log_that_logs_reads_whole(tmp_path):
    log = tmp_path / "m.log"
    r = runner.invoke(
        app, ["run", str(ROOT / "scenarios/phase9-single-worker.toml"), "--log", str(log)]
    )
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["logs", str(log), "--json"])
    assert r.exit_code == 0
    d = json.loads(r.stdout)
    assert d["lines"]["unknown"] == 0 and d["lines"]["malformed"] == 0
    assert d["proofs_done"] == 10 and d["partitions_total"] == 100
    assert d["jobs_per_kind"] == {"porep": 10}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["calibrate", "x.log", "--base", "rtx5070ti", "-o", "p.toml"], "x.log: no such log"),
        (
            ["calibrate", str(FIXTURES / "mutex-contention.log"), "--base", "nope", "-o", "p.toml"],
            "profile 'nope': no such file",
        ),
        (
            [
                "calibrate",
                str(FIXTURES / "pce-not-writable-restart.log"),
                "--base",
                "rtx5070ti",
                "-o",
                "p.toml",
            ],
            "nothing to calibrate",
        ),
        (
            [
                "calibrate",
                str(FIXTURES / "mutex-contention.log"),
                "--base",
                "rtx5070ti",
                "-o",
                "p.txt",
            ],
            "-o p.txt: the file name must end in one of .toml",
        ),
        (
            [
                "scenario-from-log",
                str(FIXTURES / "mutex-contention.log"),
                "-o",
                "s.toml",
                "--vram",
                "lots",
            ],
            "--vram lots",
        ),
        (
            [
                "scenario-from-log",
                str(FIXTURES / "mutex-contention.log"),
                "-o",
                "s.toml",
                "--plan-from",
                "none.toml",
            ],
            "--plan-from: none.toml: no such scenario file",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    assert message in r.output and "Traceback" not in r.output


def test_calibrate_from_a_fixture_keeps_what_it_cannot_see(tmp_path):
    out = tmp_path / "p.toml"
    r = runner.invoke(
        app,
        [
            "calibrate",
            str(FIXTURES / "mutex-contention.log"),
            "--base",
            "rtx5070ti",
            "-o",
            str(out),
            "--kind",
            "porep",
        ],
    )
    assert r.exit_code == 0, r.output
    text = out.read_text()
    # the fixture's CUZK_NTT_H says coset_intt_sync=45ms, as the base: the NTT is unchanged
    assert 'time = "45.0000 ms"' in text
    assert "kept from base rtx5070ti" in text  # e.g. msm_g2 and assemble
    assert "cpu.prep_msm" in r.stdout and "kernel.msm_g1" in r.stdout


@pytest.mark.parametrize(
    ("scenario", "variant", "oom"),
    [
        (
            "phase9-dual-worker-three-part-fix.toml",
            {
                "prestage": "under_mutex",
                "free_d_bc_after_ntt": True,
                "memory_aware_margin": "512 MiB",
            },
            False,
        ),
        ("phase9-dual-worker-prestage-outside-mutex.toml", {"prestage": "outside_mutex"}, True),
        ("routing-all-to-gpu0.toml", {"routing": "device0"}, True),
    ],
)
def test_the_incident_scenarios_replay_from_their_own_logs(tmp_path, scenario, variant, oom):
    """Model run -> cuzk log -> scenario-from-log -> the same variant and verdict."""
    import tomllib

    from cuzk_sim.scenario import load_scenario
    from cuzk_sim.simulate.runner import simulate

    log, out = tmp_path / "m.log", tmp_path / "s.toml"
    runner.invoke(app, ["run", str(ROOT / "scenarios" / scenario), "--log", str(log)])
    original = load_scenario(ROOT / "scenarios" / scenario)
    vram = original.spec.hardware.vram or "16 GiB"
    r = runner.invoke(app, ["scenario-from-log", str(log), "-o", str(out), "--vram", vram])
    assert r.exit_code == 0, r.output
    written = tomllib.loads(out.read_text())["variant"]
    assert {k: written[k] for k in variant} == variant
    assert simulate(load_scenario(out)).oom == oom


def test_a_gzip_log_reads_as_the_plain_one_and_a_truncated_one_is_named(tmp_path):
    """Rotated logs come gzipped (`daemon.log.1.gz`): `logs` and `calibrate` read them by
    their magic bytes, whatever the name; a cut-off gzip file is one line naming it."""
    import gzip

    plain = FIXTURES / "mutex-contention.log"
    packed = tmp_path / "rotated.log.1"  # no .gz suffix: found by the magic bytes
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    want = runner.invoke(app, ["logs", str(plain), "--json"])
    got = runner.invoke(app, ["logs", str(packed), "--json"])
    assert want.exit_code == 0 and got.exit_code == 0, got.output
    a, b = json.loads(want.stdout), json.loads(got.stdout)
    assert b["lines"] == a["lines"] and b["proofs_done"] == a["proofs_done"] > 0
    assert b["jobs_per_kind"] == a["jobs_per_kind"]

    cut = tmp_path / "cut.log.gz"
    cut.write_bytes(packed.read_bytes()[: packed.stat().st_size // 2])
    for args in (["logs", str(cut)], ["calibrate", str(cut), "--base", "h200", "-o", "p.toml"]):
        r = runner.invoke(app, args)
        assert r.exit_code == 2, (args, r.output)
        assert "cut.log.gz: cannot read the log" in r.output and "Traceback" not in r.output
