"""One throughput: seconds per proof and proofs per hour are the same quantity in two units
wherever they are printed (run's table and JSON, per proof kind, the sweep summary), and
the definition is in --help and in docs/simulator.md."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuzk_sim.cli import app

ROOT = Path(__file__).resolve().parents[2]
SNAP = ROOT / "scenarios" / "sweeps" / "rtx4000ada-snapdeals.toml"
# 2 workers under a device mutex: 3 SnapDeals proofs done at about 67.5, 103 and 138.5 s,
# so the gap between completions (35.5 s) and the run average (138.5 s / 3 = 46.2 s)
# differ: the case where `run` printed 35.5 s/proof beside 78 proofs/h
ARGS = ["--set", "engine.gpus.gpu_workers_per_device=2", "--set", "variant.mutex_scope=device"]
PAIR = re.compile(r"(\d+\.\d+) s(?:/proof)? = (\d+\.\d+)(?: proofs)?/h")
runner = CliRunner()


def _flat(text: str) -> str:
    return " ".join(text.replace("│", " ").split())


def test_run_table_prints_seconds_and_proofs_per_hour_of_one_quantity():
    out = _flat(runner.invoke(app, ["run", str(SNAP), *ARGS]).stdout)
    pairs = PAIR.findall(out)
    assert len(pairs) == 2, out  # the run and its one proof kind
    for s, h in pairs:
        assert float(h) == pytest.approx(3600 / float(s), abs=0.1 + 3600 / float(s) ** 2 * 0.05)
    assert "per hour" not in out and "goodput" not in out  # no second, other rate


def test_run_json_proofs_per_hour_is_3600_over_seconds_per_proof():
    d = json.loads(runner.invoke(app, ["run", str(SNAP), *ARGS, "--json"]).stdout)
    # completions of 3 proofs: 2 gaps; T is longer than 3 gaps (the first proof's latency)
    assert d["proofs_completed"] == 3 and d["sim_time_s"] > 3 * d["seconds_per_proof"]
    assert d["proofs_per_hour"] == pytest.approx(3600 / d["seconds_per_proof"])
    (kind,) = d["kinds"].values()
    assert kind["seconds_per_proof"] == pytest.approx(d["seconds_per_proof"])
    assert kind["proofs_per_hour"] == pytest.approx(3600 / kind["seconds_per_proof"])
    assert "goodput_per_hour" not in d and "goodput_per_hour" not in kind


@pytest.mark.parametrize("command", ["run", "gpu-run", "sweep"])
def test_help_states_the_definition(command):
    from cuzk_sim.results.sim_result import THROUGHPUT_DEFINITION

    out = runner.invoke(app, [command, "--help"], terminal_width=200).stdout
    assert _flat(THROUGHPUT_DEFINITION) in _flat(out)
    assert "proofs/h = 3600 / s/proof" in _flat(out)


def test_docs_state_the_definition():
    from cuzk_sim.results.sim_result import THROUGHPUT_DEFINITION

    docs = (ROOT / "docs" / "simulator.md").read_text()
    assert _flat(THROUGHPUT_DEFINITION) in _flat(docs)


def test_sweep_summary_shows_seconds_and_proofs_per_hour(small_outcome_for_throughput):
    from cuzk_sim.sweep.table import summary_lines, summary_tables

    summary = small_outcome_for_throughput.summary
    best = summary["best_safe"]
    assert best["proofs_per_hour"] == pytest.approx(3600 / best["seconds_per_proof"])
    text = "\n".join(summary_lines(summary))
    for _, _, rows in summary_tables(summary):
        text += "\n" + "\n".join(" | ".join(r) for r in rows)
    pairs = PAIR.findall(text)
    assert len(pairs) >= 3, text  # the best, the frontiers, the max-safe table
    for s, h in pairs:
        assert float(h) == pytest.approx(3600 / float(s), abs=0.1)
    best_line = next(line for line in summary_lines(summary) if line.startswith("best safe"))
    assert f"{best['seconds_per_proof']:.2f} s = {best['proofs_per_hour']:.1f}/h" in best_line


@pytest.fixture(scope="module")
def small_outcome_for_throughput(tmp_path_factory):
    from cuzk_sim import api

    spec = tmp_path_factory.mktemp("spec") / "s.toml"
    spec.write_text(
        f'name = "t"\nbase = "{SNAP}"\n[axes]\n"engine.gpus.gpu_workers_per_device" = "1..2"\n'
        '"variant.mutex_scope" = ["device"]\n'
    )
    return api.sweep(spec, jobs=1, plots=False)
