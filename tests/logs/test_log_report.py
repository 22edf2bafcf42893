"""`cuzk-sim logs` and `calibrate` say what the parsed sections say: worker counts, queue
waits, GPU busy time and PCE circuits consistent with the TIMELINE lines over every
fixture and over logs cut or ordered the way real ones are; `calibrate` prints what it
fitted from how many samples with what scaling, and takes the card from the log.

Oracles: the TIMELINE lines themselves, read by the test (worker ids, section spans),
and counts of lines in the fixture text; hand arithmetic for the constructed logs.
"""

from __future__ import annotations

import gzip
import json
import re
import tomllib
import types
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuzk_sim.cli import app

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()
START = (
    "2026-03-02T08:00:00.000000Z  INFO cuzk_core::engine: starting cuzk engine "
    "pipeline_enabled=true\n"
)


def timeline_sections(text: str) -> tuple[set[int], dict[tuple[str, str], list[int]]]:
    """Worker ids and (job, partition) -> [start, end] read straight off the lines."""
    workers: set[int] = set()
    spans: dict[tuple[str, str], list[int]] = {}
    for line in text.splitlines():
        m = re.match(
            r"TIMELINE,(\d+),(GPU_START|GPU_END),([^,]+),worker=(\d+),partition=(\d+)", line
        )
        if m:
            workers.add(int(m[4]))
            spans.setdefault((m[3], m[5]), []).append(int(m[1]))
    return workers, {k: v for k, v in spans.items() if len(v) == 2}


def union_ms(spans: list[list[int]]) -> int:
    total, end = 0, -1
    for s, e in sorted(spans):
        if e > end:
            total += e - max(s, end)
            end = e
    return total


def report(path: Path) -> tuple[dict, str]:
    d = json.loads(runner.invoke(app, ["logs", str(path), "--json"]).stdout)
    return d, " ".join(runner.invoke(app, ["logs", str(path)]).stdout.split())


def check_consistent(path: Path) -> None:
    d, text = report(path)
    workers, spans = timeline_sections(path.read_text())
    assert d["worker_count"] >= len(workers)
    assert f"{d['worker_count']} GPU worker(s)" in text
    if workers:
        assert d["worker_count"] >= 1
    for p in d["partitions"]:
        assert p["queue_wait_ms"] is None or p["queue_wait_ms"] >= 0, p
    if spans and len(d["gpus"]) == 1:  # one GPU: its busy time is the union of spans
        (g,) = d["gpus"].values()
        assert g["busy_s"] * 1000 == pytest.approx(union_ms(list(spans.values())), abs=1)
        assert g["busy_s"] * 1000 >= max(e - s for s, e in spans.values())
    assert "PCE of ?" not in text


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.log")), ids=lambda p: p.stem)
def test_every_fixture_reports_what_its_sections_say(path):
    check_consistent(path)


def test_a_log_without_startup_lines_counts_the_workers_its_sections_name(tmp_path):
    cut = tmp_path / "rotated.log"
    cut.write_text(
        "".join(
            line
            for line in (FIXTURES / "incident-rtx4000ada-snapdeals.log").open()
            if "GPU worker started" not in line
        )
    )
    check_consistent(cut)
    _, text = report(cut)
    assert "2 GPU worker(s) (TIMELINE worker ids: no start-up line)" in text


def test_a_pickup_printed_before_its_queue_line_waited_zero(tmp_path):
    """Two threads print a ms apart: GPU_PICKUP at 32000, its GPU_QUEUE at 32001."""
    log = tmp_path / "race.log"
    log.write_text(
        START
        + "TIMELINE,0,SYNTH_START,j-1,partition=0\n"
        + "TIMELINE,32000,SYNTH_END,j-1,partition=0,synth_ms=32000\n"
        + "TIMELINE,32000,GPU_PICKUP,j-1,worker=0,partition=0\n"
        + "TIMELINE,32001,GPU_QUEUE,j-1,partition=0\n"
        + "TIMELINE,32001,GPU_START,j-1,worker=0,partition=0\n"
        + "TIMELINE,34000,GPU_END,j-1,worker=0,partition=0,gpu_ms=1999\n"
    )
    check_consistent(log)
    d, _ = report(log)
    assert d["partitions"][0]["queue_wait_ms"] == 0


def test_busy_time_is_the_sections_whatever_order_their_lines_came_in(tmp_path):
    """A 557 ms section whose lines come after a later line (rotated files read out of
    order, or a late print): busy 0.557 s, not 0.0 s beside it."""
    log = tmp_path / "late.log"
    log.write_text(
        START
        + "TIMELINE,0,SYNTH_START,j-1,partition=0\n"
        + "TIMELINE,1600,SYNTH_START,j-2,partition=0\n"
        + "TIMELINE,1000,GPU_START,j-1,worker=0,partition=0\n"
        + "TIMELINE,1557,GPU_END,j-1,worker=0,partition=0,gpu_ms=557\n"
    )
    check_consistent(log)
    d, _ = report(log)
    assert d["gpus"]["0"]["busy_s"] == pytest.approx(0.557)
    assert d["gpus"]["0"]["busy_share"] == pytest.approx(1.0)


def test_engine_background_pce_lines_are_not_a_circuit_named_question_mark(tmp_path):
    """engine.rs prints `background PCE extraction complete [for SnapDeals]` (no
    circuit_id) after pipeline.rs's own line, which names it: one extraction each."""
    t = "2026-03-02T08:0{}:00.000000Z  INFO cuzk_core::{}: {}\n"
    log = tmp_path / "pce.log"
    log.write_text(
        START
        + t.format(
            1,
            "pipeline",
            "PCE extraction complete circuit_id=porep-32g extract_ms=120000 summary=x",
        )
        + t.format(1, "engine", "background PCE extraction complete")
        + t.format(
            3,
            "pipeline",
            "PCE extraction complete circuit_id=snap-deals-32g extract_ms=83000 summary=y",
        )
        + t.format(3, "engine", "background PCE extraction complete for SnapDeals")
    )
    d, text = report(log)
    assert "?" not in text and not d["findings"]


def test_calibrate_prints_samples_and_the_rescaling_it_applied(tmp_path):
    """The fixture's SnapDeals synthesis (81,049,499 constraints per partition) priced
    into the profile's PoRep-sized figure (130,278,541): the output says so."""
    fixture = FIXTURES / "synthesis-bound.log"
    n_synth = fixture.read_text().count(",SYNTH_END,")
    out = tmp_path / "p.toml"
    r = runner.invoke(
        app,
        ["calibrate", str(fixture), "--base", "rtx5070ti", "-o", str(out), "--kind", "snapdeals"],
    )
    assert r.exit_code == 0, r.output
    flat = " ".join(r.stdout.split())
    row = flat.split("cpu.synthesis", 1)[1].split("│ cpu.", 1)[0]
    assert f"│ {n_synth} │" in row
    assert "measured at size 81,049,499 (snapdeals)," in row and "rescaled" in row
    prof = tomllib.loads(out.read_text())
    assert "rescaled to the profile's size 130,278,541" in prof["cpu"]["synthesis"]["source"]
    assert "card: NVIDIA GeForce RTX 5070 Ti, 16 GiB (kept from base" in flat


def test_calibrate_takes_the_card_from_the_log(tmp_path):
    """A gpu-run log that names its card (CUZK_SIM_DEVICE): the profile's [gpu] model and
    vram are that card's, not the base's."""
    src = ROOT / "docs/validation/h200-2026-12-01-99d692d/calib/w1-18.log.gz"
    lines = gzip.decompress(src.read_bytes()).decode().splitlines(keepends=True)
    at = next(i for i, x in enumerate(lines) if x.startswith("CUZK_SIM_CONTEXT")) + 1
    # a MiB-aligned total (written as MiB); the H200's real line says 150109880320 B, CUDA's
    # total, 615 MiB below nvidia-smi's 143771 MiB (tests/cli/test_two_vram_totals.py)
    total = 143771 * 2**20
    lines.insert(at, f"CUZK_SIM_DEVICE: gpu=0 bytes={total} name=NVIDIA H200\n")
    log, out = tmp_path / "w.log", tmp_path / "p.toml"
    log.write_text("".join(lines))
    r = runner.invoke(app, ["calibrate", str(log), "--base", "rtx5070ti", "-o", str(out)])
    assert r.exit_code == 0, r.output
    gpu = tomllib.loads(out.read_text())["gpu"]
    assert (gpu["model"], gpu["vram"]) == ("NVIDIA H200", "143771 MiB")
    assert "CUZK_SIM_DEVICE" in gpu["source"]
    assert "card: NVIDIA H200, 143771 MiB" in " ".join(r.stdout.split())
    # an explicit --gpu-model still wins
    r = runner.invoke(
        app, ["calibrate", str(log), "--base", "rtx5070ti", "-o", str(out), "--gpu-model", "X"]
    )
    assert tomllib.loads(out.read_text())["gpu"]["model"] == "X"


def test_gpu_run_log_names_the_card_of_a_real_run(tmp_path, monkeypatch):
    from cuzk_sim.cli import gpu_run

    # a dry run has no card
    assert gpu_run.run_cards(types.SimpleNamespace(backend=object())) == {}
    monkeypatch.setattr(gpu_run, "run_cards", lambda run: {0: ("NVIDIA H200", 150754820096)})
    run = types.SimpleNamespace(
        spec=types.SimpleNamespace(devices=(0,), workers_per_device=1, mutex_scope="device"),
        events=[],
        context_real={0: 1517 * 2**20},
    )
    path = tmp_path / "run.log"
    gpu_run.write_cuzk_log(path, run)
    assert "CUZK_SIM_DEVICE: gpu=0 bytes=150754820096 name=NVIDIA H200" in path.read_text()
