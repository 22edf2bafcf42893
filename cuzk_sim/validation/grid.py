"""Run a validation spec: predictions first (all written before any real run), then the
real runs one by one, each appended to `real.jsonl` as soon as it ends, so that a grid
interrupted anywhere resumes where it stopped (runs already in the file are skipped).

Files in the output folder:
  predictions.json  the model's boundary per configuration and its prediction per cap
  real.jsonl        one line per real execution (repeats included), as it ends
  report.md         the comparison tables; summary.json the figures and criteria

Every file but real.jsonl is written whole or not at all (cuzk_sim.io.outputs); real.jsonl
gets one fsynced line per run. On resume nothing is trusted blindly: a predictions.json
that does not read as predictions is reported and predicted again; a line of real.jsonl
that is not a whole record (torn, edited, not JSON) is reported and dropped, a
duplicated run counted once, and the file rewritten with the good lines before any
line is appended.
"""

from __future__ import annotations

import datetime
import fnmatch
import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cuzk_sim.io.errors import InputError
from cuzk_sim.scenario import Scenario
from cuzk_sim.simulate.runner import simulate
from cuzk_sim.validation.boundary import at_vram, caps_around, vram_boundary
from cuzk_sim.validation.compare import (
    DEFAULT_CRITERIA,
    Criteria,
    compare_runs,
    criteria_from,
    peak_error,
    report_markdown,
    rows_as_dicts,
    summarize,
)
from cuzk_sim.validation.outcome import real_verdict
from cuzk_sim.validation.spec import ValidationSpec


def _commit() -> str:
    if os.environ.get("CUZK_COMMIT"):
        return os.environ["CUZK_COMMIT"]
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5
        )
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return os.environ.get("CUZK_COMMIT", "unknown")


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def partitions_of(scn: Scenario) -> int:
    from cuzk_sim.gpu.run_spec import RunSpec

    return sum(a.partitions for a in RunSpec.from_scenario(scn).arrivals)


def predict(spec: ValidationSpec) -> dict[str, Any]:
    """Every configuration's boundary and the model's result at each of its caps; for a
    racing configuration (validation/race.py) its race caps with the model's P(OOM)."""
    from cuzk_sim.validation.race import race_predictions

    configs, runs, races = [], [], []
    for c in spec.configs:
        b = vram_boundary(c.scenario, spec.tolerance)
        caps = caps_around(b, c.caps, c.generous, c.scenario.config.context_overhead)
        parts = partitions_of(c.scenario)
        configs.append(
            {
                "config": c.name,
                "boundary_bytes": b.vram,
                "unsafe_below_bytes": b.unsafe_below,
                "card_bytes": b.card,
                "model_runs": b.model_runs,
                "partitions": parts,
            }
        )
        for label, vram in caps:
            result = simulate(at_vram(c.scenario, vram))
            runs.append(
                {
                    "key": f"{c.name}@{label}",
                    "config": c.name,
                    "cap": label,
                    "vram": vram,
                    "partitions": parts,
                    "model": result.to_dict(log_lines=0),
                }
            )
        decision, race_runs = race_predictions(spec, c, b, parts)
        races.append(decision)
        runs.extend(race_runs)
    return {
        "spec": spec.name,
        "source": spec.source,
        "date": _now(),
        "commit": _commit(),
        "profile": spec.configs[0].scenario.profile.source if spec.configs else None,
        "configs": configs,
        "runs": runs,
        "races": races,
        "criteria": spec.criteria.figures(),  # registered with the predictions
    }


def read_reals(path: Path) -> list[dict]:
    """The real executions recorded so far, each once; damaged lines left out (a torn
    last line: the run it belonged to did not finish and will run again)."""
    return scan_reals(path)[0]


_REAL_FIELDS = {"key": str, "config": str, "date": str, "real": dict, "details": dict}
_RUN_FIELDS = {"key": str, "config": str, "cap": str, "model": dict}


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _result_ok(d: Any) -> bool:
    """The fields of a result (`run --json`) the comparison reads, of their types."""
    if not isinstance(d, dict) or not isinstance(d.get("oom"), bool):
        return False
    if "first_oom_buffer" not in d or "seconds_per_proof" not in d:
        return False
    buf, spp = d.get("first_oom_buffer"), d.get("seconds_per_proof")
    peaks = d.get("peak_vram_bytes")
    return (
        (buf is None or isinstance(buf, str))
        and (spp is None or (isinstance(spp, int | float) and not isinstance(spp, bool)))
        and isinstance(peaks, dict)
        and all(_count(v) for v in peaks.values())
    )


def _is_real(rec: Any) -> bool:
    if not isinstance(rec, dict):
        return False
    if any(not isinstance(rec.get(k), t) for k, t in _REAL_FIELDS.items()):
        return False
    at, achieved = rec.get("model_at_achieved"), rec.get("achieved_vram")
    return (
        _count(rec.get("repeat"))
        and _result_ok(rec["real"])
        and (at is None or _result_ok(at))
        and (achieved is None or _count(achieved))
    )


def scan_reals(path: Path) -> tuple[list[dict], int, int]:
    """(records, damaged lines, duplicated lines) of real.jsonl; a record repeated
    (same key and repeat) is kept once, the first."""
    from cuzk_sim.io.inputs import MAX_JSON_BYTES, read_text
    from cuzk_sim.reference.formats.files import json_depth_exceeds

    if not path.exists():
        return [], 0, 0
    out, seen, damaged, dup = [], set(), 0, 0
    for line in read_text(path, "real runs file", MAX_JSON_BYTES).splitlines():
        if not line.strip():
            continue
        try:
            rec = None if json_depth_exceeds(line) else json.loads(line)
        except (ValueError, RecursionError):
            rec = None
        if not _is_real(rec):
            damaged += 1
            continue
        ident = (rec["key"], rec["repeat"])
        if ident in seen:
            dup += 1
            continue
        seen.add(ident)
        out.append(rec)
    return out, damaged, dup


def _race_ok(run: dict) -> bool:
    """A race run (validation/race.py) also holds its planned repeats and the model's
    P(OOM) with its interval; any other run holds no `race` key, or `race` false."""
    if not run.get("race"):
        return run.get("race", False) is False
    p_oom = run.get("p_oom")
    if not isinstance(p_oom, dict) or not _count(run.get("repeats")):
        return False
    p, ci, n = p_oom.get("p"), p_oom.get("ci95"), p_oom.get("replicas")
    return (
        isinstance(p, int | float)
        and not isinstance(p, bool)
        and 0 <= p <= 1
        and isinstance(ci, list)
        and len(ci) == 2
        and all(isinstance(x, int | float) and not isinstance(x, bool) for x in ci)
        and _count(n)
    )


def _criteria_ok(figures: Any) -> bool:
    """Registered criteria (absent from files written before specs carried them): the
    three fractions, each in (0, 1]."""
    return isinstance(figures, dict) and all(
        isinstance(figures.get(k), int | float)
        and not isinstance(figures.get(k), bool)
        and 0 < figures[k] <= 1
        for k in DEFAULT_CRITERIA.figures()
    )


def load_predictions(path: Path) -> dict:
    """predictions.json, checked to be predictions (InputError naming what is wrong)."""
    from cuzk_sim.io.inputs import load_json

    doc = load_json(path, "predictions file")
    if not isinstance(doc, dict) or not isinstance(doc.get("spec"), str):
        raise InputError(f"{path}: not a predictions file (no spec name)")
    runs = doc.get("runs")
    if not isinstance(runs, list) or not isinstance(doc.get("configs"), list):
        raise InputError(f"{path}: not a predictions file (no runs or configs list)")
    for i, run in enumerate(runs):
        ok = isinstance(run, dict) and all(
            isinstance(run.get(k), t) for k, t in _RUN_FIELDS.items()
        )
        ok = ok and _count(run.get("vram")) and _count(run.get("partitions"))
        if not ok or not _result_ok(run["model"]) or not _race_ok(run):
            raise InputError(f"{path}: runs[{i}]: not a prediction (damaged?)")
    for key in ("date", "source", "commit"):
        if not isinstance(doc.get(key), str):
            raise InputError(f"{path}: {key}: missing or not text (damaged?)")
    if "criteria" in doc and not _criteria_ok(doc["criteria"]):
        raise InputError(f"{path}: criteria: not the three fractions of a spec (damaged?)")
    races = doc.get("races", [])
    if not isinstance(races, list) or not all(
        isinstance(d, dict) and isinstance(d.get("config"), str) for d in races
    ):
        raise InputError(f"{path}: races: not a list of race decisions (damaged?)")
    return doc


def _rebuild_reals(path: Path, predictions: dict, say: Callable[[str], None]) -> None:
    """Keep the whole records of runs the predictions still hold; rewrite the file (whole
    or not at all) when any line was damaged, duplicated, torn or of another prediction."""
    from cuzk_sim.io.outputs import write_text

    if not path.exists():
        return
    reals, damaged, dup = scan_reals(path)
    wanted = {(p["key"], p["vram"]) for p in predictions["runs"]}
    kept = [r for r in reals if (r["key"], r.get("vram")) in wanted]
    stale = len(reals) - len(kept)
    torn = not path.read_bytes().endswith(b"\n") and path.stat().st_size > 0
    if damaged or dup or stale or torn:
        say(
            f"{path}: {damaged} damaged line(s), {dup} duplicated, {stale} of other "
            f"predictions{', a torn last line' if torn else ''}: dropped (those runs run again)"
        )
        write_text(path, "".join(json.dumps(r) + "\n" for r in kept))


RealExecutor = Callable[[Scenario], tuple[dict, dict]]


def pipeline_executor(device: str) -> RealExecutor:
    """Run one scenario through gpu-run's pipeline on `device` (real or dry-run)."""
    from cuzk_sim.gpu.backends import backend_for
    from cuzk_sim.gpu.pipeline import RealRun
    from cuzk_sim.gpu.run_spec import RunSpec

    shared: dict[str, Any] = {}

    def execute(scn: Scenario) -> tuple[dict, dict]:
        spec = RunSpec.from_scenario(scn)
        if device == "real":
            backend = shared.setdefault("real", backend_for("real", spec))
        else:
            backend = backend_for("dry-run", spec)
        try:
            # steps timed as in the calibration runs (gpu-run --log) that price the model:
            # the runs are measured as their profile was, and their details hold per-step
            # GPU times for a post-mortem of any miss
            run = RealRun(spec, backend, step_times=True)
        except ValueError as e:  # CUZK_SIM_PIPELINE_TUNE
            raise InputError(str(e)) from None
        result = run.execute()
        result.device = device  # a dry run's result carries no timings, and says so
        details = run.details()
        details["timeline"] = run_timeline(run)
        return result.to_dict(log_lines=40), details

    return execute


TIMELINE_SPANS = 4000  # a run's timeline keeps at most this many spans (the first)


def run_timeline(run: Any) -> dict[str, Any]:
    """What a race needs from one real run, in microseconds from the run's start: every
    span (worker track, name, category: partition (host time, the assembly included),
    kernel and copy (CUDA events), start, end) and every host CPU step a worker timed
    (worker, name, end, duration: the assembly of each partition). The relative phase of
    two workers and its spread are read off it (docs/validation.md, "Races")."""
    us = 1e6
    spans = [
        [s.track, s.name, s.cat, round(s.start_s * us), round(s.end_s * us)]
        for s in sorted(run.spans, key=lambda s: s.start_s)[:TIMELINE_SPANS]
    ]
    cpu = [
        [f["worker"], f["step"], round(t * us), round(f["seconds"] * us)]
        for t, name, f in run.events
        if name == "step" and f.get("kind") == "assemble"
    ]
    return {"spans": spans, "cpu": cpu, "truncated": len(run.spans) > TIMELINE_SPANS}


def _predictions(
    spec: ValidationSpec, out: Path, fresh: bool, say: Callable[[str], None]
) -> dict[str, Any]:
    """The predictions of `out` when they are this spec's (resuming), else new ones,
    written whole before any real run."""
    from cuzk_sim.io.outputs import write_text

    pred_path, real_path = out / "predictions.json", out / "real.jsonl"
    predictions = None
    if pred_path.exists() and not fresh:
        try:
            predictions = load_predictions(pred_path)
        except InputError as e:
            say(f"{e}: predicting again")
    if predictions is not None:
        if predictions.get("spec") != spec.name:
            raise InputError(
                f"{pred_path}: holds predictions of spec {predictions.get('spec')!r}, not "
                f"{spec.name!r}; use another --out or --fresh"
            )
        profile = spec.configs[0].scenario.profile.source if spec.configs else None
        if predictions.get("profile", profile) != profile:
            raise InputError(
                f"{pred_path}: its predictions were priced with profile "
                f"{predictions.get('profile')!r}, not {profile!r}; use another --out or --fresh"
            )
        registered = criteria_from(predictions, "registered")
        if registered is not None and registered.figures() != spec.criteria.figures():
            raise InputError(
                f"{pred_path}: its predictions were registered with criteria "
                f"{registered.figures()}, not the spec's {spec.criteria.figures()}; use "
                "another --out or --fresh"
            )
        say(f"resuming: predictions from {pred_path} ({predictions['date']})")
        return predictions
    say(f"predicting {len(spec.configs)} configurations (bisection to {spec.tolerance:g})")
    predictions = predict(spec)
    write_text(pred_path, json.dumps(predictions, indent=1))
    if fresh and real_path.exists():
        real_path.unlink()
    say(f"wrote {len(predictions['runs'])} predictions to {pred_path}")
    return predictions


def _race_rounds(races: list[dict]) -> list[tuple[dict, int]]:
    """Race runs repeat by repeat: round r runs repeat r of every race cap of every
    configuration, so that a call cut short leaves every cap with about as many repeats
    and a drift of the card over the call (clocks, temperature) spreads over all caps
    instead of falling on the last ones."""
    most = max((int(p["repeats"]) for p in races), default=0)
    return [(p, r) for r in range(most) for p in races if r < int(p["repeats"])]


def run_grid(
    spec: ValidationSpec,
    out: Path,
    execute: RealExecutor,
    only: str | None = None,
    say: Callable[[str], None] = print,
    fresh: bool = False,
) -> tuple[list, dict]:
    out.mkdir(parents=True, exist_ok=True)
    predictions = _predictions(spec, out, fresh, say)
    real_path = out / "real.jsonl"
    _rebuild_reals(real_path, predictions, say)
    scenarios = {c.name: c.scenario for c in spec.configs}
    reals = read_reals(real_path)
    done = {(r["key"], r["repeat"]) for r in reals}
    first_real = {r["key"]: r for r in reals if r["repeat"] == 0}  # the whole record
    # the model a run is judged against: asked again at the card the first run really had
    judged = {r["key"]: r["model_at_achieved"] for r in reals if r["repeat"] == 0}
    todo = [p for p in predictions["runs"] if only is None or fnmatch.fnmatch(p["config"], only)]
    for p in todo:
        if p["config"] not in scenarios:
            raise InputError(
                f"{out / 'predictions.json'}: configuration {p['config']!r} is not in the spec"
            )
    with real_path.open("a") as f:

        def one(p: dict, repeat: int) -> None:
            if (p["key"], repeat) in done:
                return
            rec = _run_one(scenarios[p["config"]], p, repeat, execute)
            f.write(json.dumps(rec) + "\n")
            f.flush()
            os.fsync(f.fileno())  # a run that ended is on disk before the next starts
            done.add((p["key"], repeat))
            if repeat == 0:
                judged[p["key"]] = rec["model_at_achieved"]
                first_real[p["key"]] = rec
            say(_said(p, repeat, rec))

        peak_tol = spec.criteria.peak_tolerance
        for p in (p for p in todo if not p.get("race")):
            # a run whose first real verdict disagrees is repeated: timing-dependent? So
            # is one where both OOM at different buffers (is the real first buffer
            # stable?) and one where both fit with peaks more than the spec's peak
            # tolerance apart (is the real peak stable?)
            for repeat in range(spec.repeats + 1):
                model = judged.get(p["key"]) or p["model"]
                if repeat and not _disagrees(model, first_real[p["key"]], peak_tol):
                    break
                one(p, repeat)
        # a race run (validation/race.py) runs its planned repeats, whatever they give
        for p, repeat in _race_rounds([p for p in todo if p.get("race")]):
            one(p, repeat)
    return write_report(out, predictions, spec.criteria)


def _run_one(scn: Scenario, p: dict, repeat: int, execute: RealExecutor) -> dict[str, Any]:
    """One real execution of prediction `p`, as the record real.jsonl keeps."""
    t0 = time.perf_counter()
    real, details = execute(at_vram(scn, p["vram"]))
    achieved = min(details["achieved_vram_bytes"].values(), default=p["vram"])
    at_achieved = None
    # the ballast's 2 MiB steps: the model asked again at the card the run really had
    # (a race run's repeats all have the card of its first: asked once)
    if achieved != p["vram"] and not (p.get("race") and repeat):
        at_achieved = simulate(at_vram(scn, achieved)).to_dict(log_lines=0)
    return {
        "key": p["key"],
        "achieved_vram": achieved,
        "model_at_achieved": at_achieved,
        "repeat": repeat,
        "config": p["config"],
        "cap": p["cap"],
        "vram": p["vram"],
        "date": _now(),
        "wall_s": time.perf_counter() - t0,
        "real": real,
        "details": details,
    }


def _said(p: dict, repeat: int, rec: dict) -> str:
    real = rec["real"]
    if p.get("race"):
        model = f"P(OOM) {p['p_oom']['p']:.2f}"
    else:
        model = "OOM" if p["model"]["oom"] else "fits"
    oom, buffer, error = real_verdict(rec)
    said = f"error: {error}" if error else f"{'OOM' if oom else 'fits'} ({buffer or '-'})"
    return (
        f"{p['key']}#{repeat}: model {model}, {real.get('device') or 'real'} {said}, "
        f"{rec['wall_s']:.1f} s"
    )


def _disagrees(
    model: dict, record: dict, peak_tolerance: float = DEFAULT_CRITERIA.peak_tolerance
) -> bool:
    """Does a first real run (its record) disagree with the model's result for it: an
    error, another verdict, both OOM at another buffer, or both fit with peaks (above the
    context: validation/outcome.py) more than `peak_tolerance` apart?"""
    real_oom, buffer, failed = real_verdict(record)
    if failed is not None or real_oom != bool(model["oom"]):
        return True
    if real_oom:
        return buffer != model["first_oom_buffer"]
    error = peak_error(model, record)
    return error is not None and abs(error) > peak_tolerance


def write_report(
    out: Path, predictions: dict, criteria: Criteria | None = None
) -> tuple[list, dict]:
    """report.md and summary.json of `out`, judged by the criteria registered with the
    predictions, else `criteria` (the spec's), else issue 9's."""
    from cuzk_sim.validation.race import race_markdown, race_plot, race_rows

    reals = read_reals(out / "real.jsonl")
    ordinary = [p for p in predictions["runs"] if not p.get("race")]
    judge = (
        criteria_from(predictions, "registered with the predictions")
        or criteria
        or DEFAULT_CRITERIA
    )
    rows = compare_runs(ordinary, reals, judge)
    summary = summarize(rows, judge)
    races = race_rows(predictions, reals)
    summary["races"] = races
    if not ordinary:  # a spec of races alone (h200-races): no verdicts to agree or miss
        summary["criteria"] = {}
        summary["device"] = " and ".join(sorted({r["device"] for r in races}, reverse=True))
        summary["device"] = summary["device"] or "real"
    if any(r["device"] != "dry-run" for r in races):  # a dry run's outcomes are fixed
        summary["criteria"]["race_within_15pct"] = all(r["within"] for r in races if r["counted"])
    dates = sorted(r["date"] for r in reals)
    runs = "dry runs (no GPU)" if summary["device"] == "dry-run" else f"{summary['device']} runs"
    header = (
        f"Spec `{predictions['source']}`; predictions {predictions['date']} at commit "
        f"{predictions['commit']}; profile `{predictions.get('profile', '?')}`; {runs} "
        f"{dates[0] if dates else '-'} .. {dates[-1] if dates else '-'}.\n"
    )
    if predictions.get("repriced_after_runs"):  # benchmarks/reprice_grid.py
        header += (
            f"**Re-priced after the runs** ({predictions['repriced_after_runs']}): these "
            "are not the predictions registered before the runs.\n"
        )
    if ordinary:
        text = report_markdown(rows, summary, header)
    else:
        text = f"{header}\nNo ordinary caps in this spec: its race caps alone (below).\n"
    if predictions.get("races"):
        text += race_markdown(races, predictions["races"])
        if races:
            race_plot(races, out / "race.png")
            text += "\n![model P(OOM) against the real OOM frequency](race.png)\n"
    from cuzk_sim.io.outputs import write_all

    write_all(  # both or neither
        {
            out / "report.md": text.encode(),
            out / "summary.json": json.dumps(
                {"summary": summary, "rows": rows_as_dicts(rows)}, indent=1
            ).encode(),
        }
    )
    return rows, summary
