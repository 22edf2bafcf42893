"""Issue 28's multi-process check: a captured CUDA program (tests/capture/fixtures/
alloc_loop.cu) run as 2 and 3 processes on one card under a ballast, at caps 2 % either
side of the model's boundary; the model's verdicts and peaks written before the runs.

    capture_processes.py source-plan OUT.json [--iters 2]
        the fixture's plan from its source's arithmetic (the oracle for its capture)
    capture_processes.py context FIXTURE.log
        the context's bytes the fixture printed alone on the card (FIXTURE context used=)
    capture_processes.py predict PLAN.json --context BYTES --out predictions.json
        per N in 2, 3: the model's need (peak VRAM on a large card) and its verdict and
        peak at need x 0.98 and x 1.02 (the caps the runs take)
    capture_processes.py at PLAN.json --context BYTES --n N --vram BYTES
        the verdict and peak at the card the ballast actually left (JSON on stdout)
    capture_processes.py judge predictions.json RUNS_DIR --out processes.json
        per run folder (n<N>-<label>/: ballast.log, at.json, proc<i>.log, proc<i>.rc):
        predicted and real OOM, predicted and measured peak (the ballast's free bytes
        minus the least free bytes any process saw at its peak), their difference

The model: separate processes (engine.gpus.separate_processes), one partition each, all
starting together; the context stated (the fixture's own measurement).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

from cuzk_sim import api
from cuzk_sim.plan import Alloc, Copy, Free, Kernel, Plan, Sync

MiB = 1 << 20
SCENARIO = {
    "name": "fixture-processes",
    "seed": 1,
    "profile": "h200",
    "on_oom": "continue",
    "hardware": {"gpus": 1},
    "engine": {"gpus": {"separate_processes": True}, "pce": {"cached": ["porep"]}},
    "plan": {
        "file": "plan.json",
        "host": {"synthesis": "0 s", "partition_bytes": "1 MiB", "pce": False},
    },
    "workload": [{"kind": "porep", "count": 1}],
}
LINE = re.compile(r"^(FIXTURE|BALLAST) ?(\w*) (.*)$")
SMI_APP = re.compile(r"^\s*(\d+),\s*(\d+)\s*$")  # nvidia-smi --query-compute-apps=pid,used_memory


def source_plan(iters: int = 2) -> Plan:
    """alloc_loop.cu's steps, from its source: a 256 MiB pinned host buffer, then per
    iteration 1024 + 512 MiB cudaMalloc, 64 MiB cudaMallocAsync, copy in, memset,
    kernel, copy out, the async free, a sync, the two frees."""
    steps: list = [Alloc("h", 256 * MiB, memory="host_pinned")]
    for i in range(iters):
        steps += [
            Alloc(f"a{i}", 1024 * MiB, "sync"),
            Alloc(f"b{i}", 512 * MiB, "sync"),
            Alloc(f"c{i}", 64 * MiB, "async"),
            Copy(f"in{i}", 256 * MiB, "HtoD", True),
            Kernel("memset", "memset", 64 * MiB, seconds=1e-5),  # times: not the point
            Kernel("twice", "captured", 128 * MiB, seconds=1e-4),
            Copy(f"out{i}", 256 * MiB, "DtoH", True),
            Free(f"c{i}"),
            Sync("compute"),
            Free(f"b{i}"),
            Free(f"a{i}"),
        ]
    steps.append(Free("h", memory="host_pinned"))
    return Plan("alloc_loop (source)", tuple(steps), {})


def parse(text: str) -> list[dict]:
    """The FIXTURE / BALLAST lines of a log as dicts: {"tag", "event", key: value...},
    numbers as int."""
    out = []
    for line in text.splitlines():
        m = LINE.match(line.strip())
        if not m:
            continue
        rec: dict = {"tag": m.group(1), "event": m.group(2) or m.group(1).lower()}
        for key, value in re.findall(r"(\w+)=(\S+)", m.group(3)):
            rec[key] = int(value) if value.isdigit() else value
        out.append(rec)
    return out


def context_of(text: str) -> int:
    """The context's bytes the fixture printed (`FIXTURE context ... used=U`)."""
    found = [r["used"] for r in parse(text) if r["event"] == "context"]
    if not found:
        raise SystemExit("no `FIXTURE context` line: the fixture did not start")
    return found[0]


def model(plan: Path, context: int, n: int, vram: int) -> dict:
    """The model's verdict and peak for n processes of `plan` on a card of `vram` bytes."""
    raw = json.loads(json.dumps(SCENARIO))
    raw["hardware"] |= {"vram": f"{vram} B", "context_overhead": f"{context} B"}
    raw["engine"]["gpus"]["gpu_workers_per_device"] = n
    raw["workload"][0]["partitions"] = n
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "plan.json").write_text(plan.read_text())
        result = api.simulate(api.from_dict(raw, folder=folder))
    return {
        "n": n,
        "vram": vram,
        "predicted_oom": bool(result.oom),
        "predicted_peak": int(result.peak_vram_bytes[0]),
        "first_oom_buffer": result.to_dict().get("first_oom_buffer"),
    }


def predict(plan: Path, context: int) -> dict:
    runs = []
    for n in (2, 3):
        need = model(plan, context, n, 140 << 30)["predicted_peak"]
        for label, factor in (("-2pct", 0.98), ("+2pct", 1.02)):
            cap = int(need * factor) // MiB * MiB
            runs.append(model(plan, context, n, cap) | {"label": label, "need": need})
    return {"plan": str(plan), "context_bytes": context, "runs": runs}


def _run_folder(folder: Path) -> dict:
    log = folder / "ballast.log"
    ballast = parse(log.read_text()) if log.exists() else []
    free = next((r["free"] for r in ballast if r["tag"] == "BALLAST"), None)
    at = json.loads((folder / "at.json").read_text()) if (folder / "at.json").exists() else {}
    procs = []
    for log in sorted(folder.glob("proc*.log")):
        rc_file = log.with_suffix(".rc")
        rc = int(rc_file.read_text().strip() or -1) if rc_file.exists() else None
        recs = parse(log.read_text())
        peaks = [r["free"] for r in recs if r["event"] == "peak"]
        # a context that cannot be made on a full card is an OOM too, whatever its error
        failed = [r for r in recs if r["event"] == "oom"]
        failed += [r for r in recs if r["event"] == "error" and r.get("buffer") == "context"]
        procs.append(
            {
                "log": log.name,
                "rc": rc,
                "oom": rc == 3 or bool(failed),
                "failed_at": [f"{r.get('buffer')}: {r.get('error')}" for r in failed],
                "least_free_at_peak": min(peaks) if peaks else None,
                "context_used": next((r["used"] for r in recs if r["event"] == "context"), None),
                "pid": next((r["pid"] for r in recs if isinstance(r.get("pid"), int)), None),
            }
        )
    return {"ballast_free": free, "at": at, "processes": procs}


def smi_peaks(text: str) -> dict[int, int]:
    """pid -> the most MiB nvidia-smi saw it use (`--query-compute-apps=pid,used_memory
    --format=csv,noheader,nounits`, sampled; lines it could not fill are skipped)."""
    out: dict[int, int] = {}
    for line in text.splitlines():
        m = SMI_APP.match(line)
        if m:
            pid, mib = int(m.group(1)), int(m.group(2))
            out[pid] = max(out.get(pid, 0), mib)
    return out


def judge(predictions: dict, runs: Path, smi: dict[int, int] | None = None) -> dict:
    rows = []
    for pred in predictions["runs"]:
        folder = runs / f"n{pred['n']}-{pred['label']}"
        got = _run_folder(folder) if folder.is_dir() else {"processes": []}
        procs = got["processes"]
        at = got.get("at") or {}
        row = {
            "run": folder.name,
            "n": pred["n"],
            "cap_asked": pred["vram"],
            "card_left": got.get("ballast_free"),
            "predicted_oom": at.get("predicted_oom", pred["predicted_oom"]),
            "predicted_peak": at.get("predicted_peak", pred["predicted_peak"]),
            "ran": len(procs),
        }
        if procs and all(p["rc"] is not None for p in procs):
            row["real_oom"] = any(p["oom"] for p in procs)
            row["verdict_agrees"] = row["real_oom"] == row["predicted_oom"]
            frees = [p["least_free_at_peak"] for p in procs if p["least_free_at_peak"] is not None]
            pids = [p["pid"] for p in procs if p["pid"] is not None]
            if smi and any(pid in smi for pid in pids):  # each process's own, by nvidia-smi
                row["smi_process_peaks_mib"] = [smi.get(pid) for pid in pids]
            if frees and row["card_left"] is not None and not row["real_oom"]:
                row["measured_peak"] = row["card_left"] - min(frees)
                row["peak_error_pct"] = round(
                    100 * (row["predicted_peak"] - row["measured_peak"]) / row["measured_peak"], 3
                )
        rows.append(row)
    return {"context_bytes": predictions["context_bytes"], "rows": rows}


def _show(out: dict) -> None:
    print(f"context per process: {out['context_bytes'] / MiB:.1f} MiB")
    for r in out["rows"]:
        peak = (
            f"peak model {r['predicted_peak'] / MiB:.1f} MiB, measured "
            f"{r['measured_peak'] / MiB:.1f} MiB ({r['peak_error_pct']:+.2f} %)"
            if "measured_peak" in r
            else "peak: not measured (an OOM, or no run)"
        )
        verdict = (
            f"OOM model {r['predicted_oom']}, real {r['real_oom']} "
            f"({'agree' if r['verdict_agrees'] else 'DISAGREE'})"
            if "real_oom" in r
            else "not run"
        )
        smi = r.get("smi_process_peaks_mib")
        each = f"; nvidia-smi per process {smi} MiB" if smi else ""
        print(f"{r['run']}: card left {r['card_left']} B; {verdict}; {peak}{each}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("source-plan")
    p.add_argument("out", type=Path)
    p.add_argument("--iters", type=int, default=2)
    p = sub.add_parser("context")
    p.add_argument("log", type=Path)
    p = sub.add_parser("predict")
    p.add_argument("plan", type=Path)
    p.add_argument("--context", type=int, required=True)
    p.add_argument("--out", type=Path, required=True)
    p = sub.add_parser("at")
    p.add_argument("plan", type=Path)
    p.add_argument("--context", type=int, required=True)
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--vram", type=int, required=True)
    p = sub.add_parser("judge")
    p.add_argument("predictions", type=Path)
    p.add_argument("runs", type=Path)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--smi", type=Path, help="nvidia-smi's per-process samples")
    a = ap.parse_args(argv)
    if a.cmd == "source-plan":
        a.out.write_text(source_plan(a.iters).to_json() + "\n")
    elif a.cmd == "context":
        print(context_of(a.log.read_text()))
    elif a.cmd == "predict":
        out = predict(a.plan, a.context)
        a.out.write_text(json.dumps(out, indent=1) + "\n")
        for r in out["runs"]:
            print(f"n={r['n']} {r['label']}: cap {r['vram']} B, need {r['need']} B -> "
                  f"OOM {r['predicted_oom']}, peak {r['predicted_peak']} B")  # fmt: skip
    elif a.cmd == "at":
        print(json.dumps(model(a.plan, a.context, a.n, a.vram)))
    else:
        smi = smi_peaks(a.smi.read_text()) if a.smi and a.smi.exists() else None
        out = judge(json.loads(a.predictions.read_text()), a.runs, smi)
        a.out.write_text(json.dumps(out, indent=1) + "\n")
        _show(out)
        return 0 if all(r.get("verdict_agrees") for r in out["rows"]) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
