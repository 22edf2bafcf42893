"""benchmarks/capture_device_call.sh, run here end to end against stand-ins for the
device (tests/capture/fake_device/: nvcc "builds" an emulated alloc_loop that keeps a
card's used bytes in a file shared by its processes; nvidia-smi prints a fixed line),
so the script's stages, file layout, parsing and judgement are checked before the one
device call that runs it for real. benchmarks/device_env.sh (the device's wheels) is
replaced by this test's own Python.

The emulated card holds, per fixture process, a 527 MiB context and 1024 + 512 + 64
MiB at the peak: by hand, 2 processes need 2 x 2127 = 4254 MiB and 3 need 6381 MiB; at
2 % below, the last process to allocate fails; at 2 % above, all run and the peak the
script measures is exactly that need. With no GPU here the captures fail (each stage's
rc is logged and the next runs): the predictions come from the source's plan, as on a
device whose capture failed.

Also the parsing of the fixture's and ballast's lines, on lines written in their format.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # two runs of the whole script, about 25 s each
ROOT = Path(__file__).resolve().parents[2]
FAKE = Path(__file__).parent / "fake_device"
MiB = 1 << 20
sys.path.insert(0, str(ROOT / "benchmarks"))
import capture_processes as cp  # noqa: E402


def _run_script(tmp, driver: bool = False, extra_env: dict[str, str] | None = None):
    """The device script against the stand-ins; with `driver`, a stand-in libcuda.so.1
    (cuInit and cuDeviceGetCount answer: one device) lets `capture` run the emulated
    fixture, which writes the records the injection library would."""
    tools = tmp / "bin"
    tools.mkdir()
    for name in ("nvcc", "nvidia-smi"):
        (tools / name).symlink_to(FAKE / name)
    (tools / "python3").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    (tools / "python3").chmod(0o755)
    script = (ROOT / "benchmarks" / "capture_device_call.sh").read_text()
    assert ". benchmarks/device_env.sh" in script
    script = script.replace(". benchmarks/device_env.sh", "export PYTHONUNBUFFERED=1")
    (tmp / "call.sh").write_text(script)
    out, work = tmp / "out", tmp / "work"
    env = {
        **os.environ,
        "PATH": f"{tools}:{os.environ['PATH']}",
        "OUT": str(out),
        "W": str(work),
        "FAKE_CARD": str(tmp / "card.json"),
        "BUDGET": "190",
        **(extra_env or {}),
    }
    env.pop("PYTHONPATH", None)
    if driver:
        lib = tmp / "lib"
        lib.mkdir()
        (lib / "cuda.c").write_text(
            "int cuInit(unsigned f) { return 0; }\n"
            "int cuDeviceGetCount(int *n) { *n = 1; return 0; }\n"
        )
        cc = subprocess.run(
            ["cc", "-shared", "-fPIC", "-o", str(lib / "libcuda.so.1"), str(lib / "cuda.c")],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        if cc.returncode != 0:
            pytest.skip(f"no C compiler for the stand-in driver: {cc.stderr[-200:]}")
        env["LD_LIBRARY_PATH"] = str(lib)
    done = subprocess.run(
        ["bash", str(tmp / "call.sh")], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=280,
    )  # fmt: skip
    return done, out, work


@pytest.fixture(scope="module")
def device_run(tmp_path_factory):
    return _run_script(tmp_path_factory.mktemp("device"))


@pytest.fixture(scope="module")
def device_run_captured(tmp_path_factory):
    from cuzk_sim.capture import inject_build

    try:
        inject_build.find_cupti(), inject_build.find_compiler()
    except Exception as e:  # noqa: BLE001 - the reason is the skip's
        pytest.skip(f"no toolchain for the injection library here: {e}")
    return _run_script(tmp_path_factory.mktemp("device-captured"), driver=True)


def test_the_script_runs_every_stage_and_keeps_to_eight_files(device_run):
    done, out, _ = device_run
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    files = sorted(p.name for p in out.iterdir())
    assert len(files) <= 8, files
    assert {"steps.txt", "predictions.json", "processes.json", "capture-work.tgz"} <= set(files)
    steps = (out / "steps.txt").read_text()
    for stage in ("nvcc fixture rc=0", "fixture alone rc=0", "capture fixture rc=2",
                  "predictions rc=0", "judge rc=0", "dry-run plan rc=0", "capture prover rc=",
                  "done;"):  # fmt: skip
        assert stage in steps, steps
    with tarfile.open(out / "capture-work.tgz") as tar:
        names = tar.getnames()
    assert "./runs/n3-+2pct/proc3.log" in names and "./context.log" in names


def test_stages_prover_runs_the_prover_part_only(tmp_path):
    done, out, _ = _run_script(tmp_path, extra_env={"STAGES": "prover", "BUDGET": "100"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    steps = (out / "steps.txt").read_text()
    want = ("injection library rc=", "dry-run plan rc=0 (2^22)", "capture prover rc=",
            "span -1 plan rc=", "prover plan vs the scenario's plan rc=", "done;")  # fmt: skip
    for stage in want:
        assert stage in steps, steps
    for stage in ("nvcc fixture", "fixture alone", "predictions rc=", "judge rc="):
        assert stage not in steps, steps
    assert not (out / "predictions.json").exists()


def test_predictions_are_written_before_the_runs_from_the_source_plan(device_run):
    _, out, work = device_run
    pred = json.loads((out / "predictions.json").read_text())
    assert pred["context_bytes"] == 527 * MiB
    assert pred["plan"].endswith("fixture-source.json")  # no GPU: the capture failed
    needs = {r["n"]: r["need"] for r in pred["runs"]}
    assert needs == {2: 2 * 2127 * MiB, 3: 3 * 2127 * MiB}
    oom = {(r["n"], r["label"]): r["predicted_oom"] for r in pred["runs"]}
    assert oom == {(2, "-2pct"): True, (2, "+2pct"): False, (3, "-2pct"): True, (3, "+2pct"): False}
    # the model asked again at the card the ballast left, before the fixtures started
    at = json.loads((work / "runs" / "n2-+2pct" / "at.json").read_text())
    assert at["predicted_oom"] is False and at["predicted_peak"] == 2 * 2127 * MiB


def test_the_judgement_agrees_with_the_emulated_card(device_run):
    _, out, _ = device_run
    rows = {r["run"]: r for r in json.loads((out / "processes.json").read_text())["rows"]}
    assert set(rows) == {"n2--2pct", "n2-+2pct", "n3--2pct", "n3-+2pct"}
    assert all(r["verdict_agrees"] for r in rows.values())
    assert rows["n2--2pct"]["real_oom"] and rows["n3--2pct"]["real_oom"]
    assert rows["n2-+2pct"]["measured_peak"] == 2 * 2127 * MiB
    assert rows["n3-+2pct"]["measured_peak"] == 3 * 2127 * MiB
    assert rows["n3-+2pct"]["peak_error_pct"] == 0.0


FIXTURE_LOG = """\
FIXTURE context pid=41 free=150243721216 total=150754820096 used=511098880
FIXTURE peak pid=41 iter=0 free=148565999616 total=150754820096 used=2188820480
FIXTURE peak pid=41 iter=1 free=148499939328 total=150754820096 used=2254880768
FIXTURE done pid=41
"""


def test_with_a_capture_the_predictions_come_from_the_captured_plan(device_run_captured):
    """The emulated fixture's records (what CUPTI reports for its calls, in the injection
    library's format) give a plan equal to its source's, buffer for buffer, and the same
    predictions by hand."""
    done, out, work = device_run_captured
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    steps = (out / "steps.txt").read_text()
    assert "capture fixture rc=0" in steps, steps
    assert "buffers: EQUAL" in (out / "fixture-compare.txt").read_text()
    assert "allocations: captured 7, reference 7" in (out / "fixture-compare.txt").read_text()
    pred = json.loads((out / "predictions.json").read_text())
    assert pred["plan"].endswith("fixture-plan.json")
    assert {r["n"]: r["need"] for r in pred["runs"]} == {2: 2 * 2127 * MiB, 3: 3 * 2127 * MiB}
    # the context from the emulated cuMemGetInfo sample: (527 + 1024) - 1024 MiB
    assert json.loads((work / "fixture-plan.json").read_text())["meta"]["context_bytes"] == (
        527 * MiB
    )
    rows = json.loads((out / "processes.json").read_text())["rows"]
    assert all(r["verdict_agrees"] for r in rows)


def test_the_fixture_s_lines_parse():
    recs = cp.parse(FIXTURE_LOG + "some other output\n")
    assert [r["event"] for r in recs] == ["context", "peak", "peak", "done"]
    assert recs[2] == {"tag": "FIXTURE", "event": "peak", "pid": 41, "iter": 1,
                       "free": 148499939328, "total": 150754820096, "used": 2254880768}  # fmt: skip
    assert cp.context_of(FIXTURE_LOG) == 511098880
    oom = cp.parse("FIXTURE oom pid=7 buffer=b error=cudaErrorMemoryAllocation")
    assert oom[0]["buffer"] == "b" and oom[0]["error"] == "cudaErrorMemoryAllocation"
    ballast = cp.parse("BALLAST free=4460642304 total=150754820096 held=1 pid=9")
    assert ballast[0]["tag"] == "BALLAST" and ballast[0]["free"] == 4460642304


def test_a_run_folder_is_judged_by_hand(tmp_path):
    run = tmp_path / "n2-+2pct"
    run.mkdir()
    (run / "ballast.log").write_text("BALLAST free=5000000000 total=150754820096 held=1 pid=9\n")
    (run / "at.json").write_text(json.dumps({"predicted_oom": False, "predicted_peak": 4400000000}))
    for i, free in ((1, 600000000), (2, 610000000)):
        (run / f"proc{i}.log").write_text(
            f"FIXTURE context pid={i} free=1 total=2 used=1\n"
            f"FIXTURE peak pid={i} iter=0 free={free} total=2 used=1\n"
        )
        (run / f"proc{i}.rc").write_text("0\n")
    pred = {"context_bytes": 1, "runs": [{"n": 2, "label": "+2pct", "vram": 5 << 30,
                                          "predicted_oom": True, "predicted_peak": 0}]}  # fmt: skip
    (row,) = cp.judge(pred, tmp_path)["rows"]
    # measured: 5 000 000 000 left − 600 000 000 least free = 4 400 000 000; the model's
    # figure at the card left (at.json) wins over the one at the cap asked
    assert row["measured_peak"] == 4_400_000_000 and row["peak_error_pct"] == 0.0
    assert row["real_oom"] is False and row["verdict_agrees"]


def test_a_context_that_cannot_be_made_is_an_oom(tmp_path):
    run = tmp_path / "n3--2pct"
    run.mkdir()
    (run / "ballast.log").write_text("BALLAST free=6000000000 total=9 held=1 pid=9\n")
    (run / "proc1.log").write_text("FIXTURE peak pid=1 iter=0 free=5 total=9 used=4\n")
    (run / "proc1.rc").write_text("0\n")
    (run / "proc2.log").write_text("FIXTURE error pid=2 buffer=context error=cudaErrorUnknown\n")
    (run / "proc2.rc").write_text("4\n")
    pred = {"context_bytes": 1, "runs": [{"n": 3, "label": "-2pct", "vram": 6 << 30,
                                          "predicted_oom": True, "predicted_peak": 0}]}  # fmt: skip
    (row,) = cp.judge(pred, tmp_path)["rows"]
    assert row["real_oom"] is True and row["verdict_agrees"]
    assert "measured_peak" not in row  # an OOM run: no peak to compare


def test_nvidia_smi_s_per_process_samples_parse(tmp_path):
    text = "41, 2100\n42, [N/A]\n41, 2127\n43, 2127\n\nsomething else\n"
    assert cp.smi_peaks(text) == {41: 2127, 43: 2127}
    run = tmp_path / "n2-+2pct"
    run.mkdir()
    for i, pid in ((1, 41), (2, 43)):
        (run / f"proc{i}.log").write_text(f"FIXTURE peak pid={pid} iter=0 free=5 total=9 used=4\n")
        (run / f"proc{i}.rc").write_text("0\n")
    one = {"n": 2, "label": "+2pct", "vram": 1, "predicted_oom": False, "predicted_peak": 0}
    (row,) = cp.judge({"context_bytes": 1, "runs": [one]}, tmp_path, cp.smi_peaks(text))["rows"]
    assert row["smi_process_peaks_mib"] == [2127, 2127]
