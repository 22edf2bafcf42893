"""Each finding from the fixture that shows it; the incident names the missing mutex
first, then the OOM; `cuzk-sim logs` exits 1 on an error finding, 0 otherwise, 2 on
bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuzk_sim.cli import app
from cuzk_sim.logs.analyze import analyze_logs
from cuzk_sim.logs.findings import FINDING_SEVERITY

FIXTURES = Path(__file__).parent / "fixtures"
INCIDENT = FIXTURES / "incident-rtx4000ada-snapdeals.log"
runner = CliRunner()


def findings(name: str) -> list:
    a, _, _ = analyze_logs([FIXTURES / name])
    return a.book.ordered()


def test_incident_concurrent_sections_first_then_oom():
    fs = findings(INCIDENT.name)
    errors = [f.id for f in fs if f.severity == "error"]
    assert errors == ["concurrent_gpu_sections", "oom"]
    conc = fs[0]
    # the two GPU_START lines of workers 0 and 1 at 118413 ms (lines 28 and 30)
    assert sorted(n for n, _ in conc.evidence) == [28, 30]
    assert all(",GPU_START," in t and "TIMELINE,118413," in t for _, t in conc.evidence)
    assert "same millisecond" in conc.sentence
    oom = next(f for f in fs if f.id == "oom")
    lines = dict(oom.evidence)
    assert lines[32] == "CUZK_TIMING: d_a_cache allocated 4096 MiB on gpu 0"
    assert 'failed: "out of memory"' in lines[38]
    assert oom.occurrences == 2  # two panics; their ERROR lines are the same events
    assert "Dmalloc" in oom.sentence and "GPU 0" in oom.sentence
    assert any(f.id == "pce_save_failed" for f in fs)


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        ("phase9-prestage-fallback.log", ["oom", "prestage_fallback"]),
        ("routing-all-to-gpu0.log", ["routing_to_gpu0", "concurrent_gpu_sections"]),
        ("pce-not-writable-restart.log", ["pce_reextracted", "pce_save_failed"]),
        ("synthesis-bound.log", ["synthesis_bound"]),
        ("mutex-contention.log", ["mutex_contention"]),
        ("malformed-lines.log", []),
    ],
)
def test_each_fixture_shows_its_findings(fixture, expected):
    assert [f.id for f in findings(fixture)] == expected


def test_every_finding_id_has_a_fixture():
    seen = {f.id for p in FIXTURES.glob("*.log") for f in findings(p.name)}
    assert seen == set(FINDING_SEVERITY)


def test_prestage_fallback_evidence_holds_the_vram_check_and_the_fallback():
    f = next(f for f in findings("phase9-prestage-fallback.log") if f.id == "prestage_fallback")
    texts = [t for _, t in sorted(f.evidence)]
    assert texts == [
        "CUZK_TIMING: prestage_vram free_mib=8952 usable_mib=8440 need_da_mib=4096 "
        "need_dbc_mib=2048 total_mib=6144",
        "CUZK_TIMING: prestage_setup=fallback err=2",
    ]
    assert "cudaError 2 (out of memory)" in f.sentence


def test_pce_reextracted_counts_both_extractions():
    f = next(f for f in findings("pce-not-writable-restart.log") if f.id == "pce_reextracted")
    assert "2 times" in f.sentence and "167 s" in f.sentence  # 83211 + 83467 ms


def test_mutex_contention_and_synthesis_bound_figures():
    a, _, _ = analyze_logs([FIXTURES / "mutex-contention.log"])
    # 5 pairs: worker 0 waits 0, worker 1 waits 2100 ms each; every hold is 2100 ms
    assert a.mutex_wait.total == 5 * 2100 and a.mutex_held.total == 10 * 2100
    a, _, _ = analyze_logs([FIXTURES / "synthesis-bound.log"])
    use = a.gpus[0]
    # the GPU waits 30 s for each of proofs 2 and 3 to synthesize: 60 s starved
    assert use.starved_ms == 60000


def test_cli_exit_codes_and_json(tmp_path):
    r = runner.invoke(app, ["logs", str(INCIDENT), "--json"])
    assert r.exit_code == 1
    d = json.loads(r.stdout)
    assert [f["id"] for f in d["findings"]][:2] == ["concurrent_gpu_sections", "oom"]
    assert d["findings"][0]["evidence"][0]["line"].endswith("incident-rtx4000ada-snapdeals.log:28")
    r = runner.invoke(app, ["logs", str(FIXTURES / "mutex-contention.log")])
    assert r.exit_code == 0, r.output
    assert "mutex_contention" in r.stdout


def test_cli_reports_malformed_lines_with_their_numbers():
    r = runner.invoke(app, ["logs", str(FIXTURES / "malformed-lines.log")])
    assert r.exit_code == 0
    assert "malformed-lines.log:5: expected TIMELINE" in r.stdout
    assert "malformed-lines.log:7: prep_msm_ms=fast is not an integer" in r.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope.log"], "nope.log: no such log file"),
        ([str(INCIDENT), "--plot", "x.txt"], "--plot x.txt: the file name must end in"),
        ([str(INCIDENT), "--beside", "m.json"], "--beside needs --trace"),
        ([str(INCIDENT), "--kind", "zk"], "--kind zk: expected one of"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(args, message):
    r = runner.invoke(app, ["logs", *args])
    assert r.exit_code == 2
    assert message in r.output and "Traceback" not in r.output


def test_trace_names_tracks_like_the_model_and_merges_a_model_trace(tmp_path):
    model = {
        "traceEvents": [
            {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}},
            {
                "ph": "X",
                "name": "porep-0/0",
                "cat": "partition",
                "pid": 0,
                "tid": 1,
                "ts": 0,
                "dur": 5,
            },
        ]
    }
    m = tmp_path / "model.json"
    m.write_text(json.dumps(model))
    out = tmp_path / "t.json"
    r = runner.invoke(
        app,
        ["logs", str(FIXTURES / "mutex-contention.log"), "--trace", str(out), "--beside", str(m)],
    )
    assert r.exit_code == 0, r.output
    events = json.loads(out.read_text())["traceEvents"]
    names = {e["args"]["name"] for e in events if e.get("name") in ("process_name", "thread_name")}
    assert {"GPU 0", "host", "gpu0-w0", "gpu0-w1", "gpu0-w0 lock", "GPU 0 (model)"} <= names
    holds = [e for e in events if e.get("name") == "hold gpu"]
    assert len(holds) == 10 and all(e["dur"] == 2100 * 1000 for e in holds)


def test_plot_is_written(tmp_path):
    out = tmp_path / "p.png"
    r = runner.invoke(app, ["logs", str(FIXTURES / "synthesis-bound.log"), "--plot", str(out)])
    assert r.exit_code == 0 and out.stat().st_size > 1000


def test_every_json_key_is_documented():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "logs.md").read_text()
    section = doc.split("## `--json`", 1)[1].split("\n## ", 1)[0]
    d = json.loads(runner.invoke(app, ["logs", str(INCIDENT), "--json"]).stdout)
    missing = [k for k in d if f"`{k}`" not in section]
    assert not missing, missing
