"""The production results of issue 24 as the markdown docs/validation.md needs.

Usage: python3 benchmarks/production_report.py GRID [RUNS]

GRID: a `validate scenarios/validation/h200-production.toml --out GRID` folder
(predictions.json, real.jsonl). RUNS: a folder of gpu-run outputs named w<W>-<L>.json and
w<W>-<L>.details.json (benchmarks/production_runs.py: `gpu-run
scenarios/validation/base.toml` with W workers per device, one proof of two partitions at
2^L). Prints:

- the grid, run by run, against the predictions **registered before the runs** (the model
  at the cap; validate itself judges each run against the model asked again at the card
  the run really had, the ballast's 2 MiB steps: where the two differ, it is said);
- the counts against the criteria the spec states (issue 24's: every verdict of the runs
  not timing-dependent, the first OOM buffer where both OOM, peak VRAM within 1 %,
  s/proof within 5 % on every run that fits), and those runs with their OOM frequency;
- each gpu-run: s/proof and peak VRAM against the model of the same scenario (this
  tree's), its peak RSS against the bound 1.2 x (key + W x inputs) from its host report;
- for every run that misses a criterion, its largest per-step differences: the real
  per-step GPU times (CUDA events, `details.steps`: mean per occurrence) against the
  model's price of the same steps (the scenario's plan compiled with the profile).
  Steps on overlapping streams (the streamed plans' copy stream) do not add up to
  s/proof; the list says where the model's step prices are off, not why a run's total is.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from cuzk_sim.io.errors import InputError
from cuzk_sim.validation.compare import (
    DEFAULT_CRITERIA,
    Criteria,
    RunRow,
    compare_runs,
    criteria_from,
    summarize,
)
from cuzk_sim.validation.grid import load_predictions, read_reals

GIB, MIB = 2**30, 2**20
BASE = "scenarios/validation/base.toml"
RUN_NAME = re.compile(r"^w(\d+)-(\d+)$")
TOP_STEPS = 8


def criteria_of(predictions: dict) -> Criteria:
    """Registered with the predictions, else the spec's (its file, when it is this
    spec), else issue 9's: the order `validate --report-only` uses."""
    from cuzk_sim.validation.spec import load_criteria

    registered = criteria_from(predictions, "registered with the predictions")
    if registered is not None:
        return registered
    spec = Path(predictions["source"])
    if spec.is_file():
        name, crit = load_criteria(spec)
        if name == predictions["spec"]:
            return crit
    return DEFAULT_CRITERIA


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.2f} %"


def _verdict(oom: bool | None, freq: float = 0.0, error: str | None = None) -> str:
    if error is not None:
        return "error"
    return f"flips ({100 * freq:.0f} % OOM)" if oom is None else ("OOM" if oom else "fits")


def _misses(r: RunRow, c: Criteria) -> list[str]:
    out = []
    if r.real_error is not None:
        out.append("error")
    if r.agrees is False:
        out.append("verdict")
    both = r.predicted_oom and r.real_oom and not r.buffer_timing_dependent
    if both and r.predicted_buffer != r.real_buffer:
        out.append("buffer")
    peak = r.peak_error is not None and not r.peak_timing_dependent
    if peak and abs(r.peak_error) > c.peak_tolerance:  # type: ignore[arg-type]
        out.append("peak")
    if r.spp_error is not None and abs(r.spp_error) > c.seconds_tolerance:
        out.append("s/proof")
    return out


def grid_table(rows: list[RunRow], judged: dict[str, RunRow], c: Criteria) -> list[str]:
    out = [
        "| run | card MiB | verdict pred / real | first OOM buffer pred / real "
        "| peak err, model's context (raw) | s/proof err | misses |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        buf = "-"
        if r.predicted_buffer or r.real_buffer:
            buf = f"{r.predicted_buffer or '-'} / {r.real_buffer or '-'}"
        miss = ", ".join(_misses(r, c)) or "-"
        j = judged[r.key]
        if (j.predicted_oom, j.predicted_buffer, j.peak_error) != (
            r.predicted_oom,
            r.predicted_buffer,
            r.peak_error,
        ):
            miss += (
                f" (validate, model at the achieved card: {_verdict(j.predicted_oom)}, "
                f"peak {_pct(j.peak_error)})"
            )
        out.append(
            f"| {r.key} | {r.achieved_vram / MIB:.1f} | {_verdict(r.predicted_oom)} / "
            f"{_verdict(r.real_oom, r.oom_frequency, r.real_error)} | {buf} | "
            f"{_pct(r.peak_error)} ({_pct(r.peak_total_error)}) | {_pct(r.spp_error)} | {miss} |"
        )
    return out


def grid_counts(s: dict[str, Any], c: Criteria, planned: int) -> list[str]:
    every = "all" if c.oom_agreement >= 1 else f">= {100 * c.oom_agreement:g} % of the"
    lines = [
        f"- runs: {s['runs']} of the {planned} registered ({s['real_executions']} real "
        f"executions with repeats); criteria: {c.source}",
        f"- OOM verdicts agree ({every} runs not timing-dependent): "
        f"{s['agreeing']} / {s['decided']}",
        f"- first OOM buffer where both OOM: {s['first_buffer_agrees']} / {s['both_oom']}",
        f"- errors (partitions failed for another reason than memory: no verdict): "
        f"{len(s.get('errors', []))}",
        f"- peak VRAM within {100 * c.peak_tolerance:g} %: "
        f"{s['peak_within']} / "
        f"{s['peak_runs']} (largest |error| {_pct(s['peak_max_abs_error']).lstrip('+')})",
        f"- s/proof within {100 * c.seconds_tolerance:g} % (runs that fit, >= 4 partitions): "
        f"{s['spp_within']} / {s['spp_runs']} "
        f"(largest |error| {_pct(s['spp_max_abs_error']).lstrip('+')})",
    ]
    for t in s["timing_dependent"]:
        lines.append(
            f"- timing-dependent (not counted): {t['key']}, OOM in "
            f"{100 * t['oom_frequency']:.0f} % of {t['repeats']} runs"
        )
    for t in s["buffer_timing_dependent"]:
        lines.append(f"- first buffer timing-dependent: {t['key']}: {', '.join(t['buffers'])}")
    for t in s["peak_timing_dependent"]:
        peaks = ", ".join(f"{p / MIB:.1f}" for p in t["peaks"])
        lines.append(f"- peak timing-dependent: {t['key']}: {peaks} MiB")
    return lines


def model_steps(scenario: Any) -> dict[str, tuple[int, float]]:
    """name -> (occurrences per partition, seconds in all) of the named steps (kernels,
    copies, host work) of the scenario's porep plan priced by its profile; allocations
    are left out (no CUDA event times them, and the key's page-locking is setup)."""
    from cuzk_sim.model.compiled import compile_plan

    (plan,) = scenario.plans.values()
    cp = compile_plan(plan, scenario.profile, merge=False)
    out: dict[str, tuple[int, float]] = {}
    for step, seconds in zip(cp.steps, cp.seconds, strict=True):
        name = getattr(step, "name", None)
        if not name or step.op not in ("kernel", "copy", "cpu"):
            continue
        n, total = out.get(name, (0, 0.0))
        out[name] = (n + 1, total + seconds)
    return out


def step_differences(real_steps: dict[str, dict], model: dict[str, tuple[int, float]]) -> list[str]:
    """The TOP_STEPS steps whose time per partition differs most, model against real.
    Real: mean per occurrence x occurrences / partitions timed (compute_h.intt_a runs once
    per partition: its count is the partitions timed)."""
    parts = int(real_steps.get("compute_h.intt_a", {}).get("n") or 1)
    rows = []
    for name in sorted(set(real_steps) | set(model)):
        occ, total = model.get(name, (0, 0.0))
        r = real_steps.get(name)
        real_ms = None if r is None else r["gpu_ms"] * r["n"] / parts
        model_ms = 1e3 * total
        delta = model_ms - (real_ms or 0.0)
        rows.append((abs(delta), name, occ, model_ms, real_ms, r))
    rows.sort(reverse=True)
    out = [
        f"| step | per partition: model / real ms | model - real | occurrences model / real "
        f"({parts} partitions timed) |",
        "|---|---|---|---|",
    ]
    for _, name, occ, model_ms, real_ms, r in rows[:TOP_STEPS]:
        real_txt = "not timed" if real_ms is None else f"{real_ms:.1f}"
        real_n = "-" if r is None else f"{r['n'] / parts:g}"
        diff = model_ms - (real_ms or 0.0)
        out.append(f"| {name} | {model_ms:.1f} / {real_txt} | {diff:+.1f} | {occ} / {real_n} |")
    return out


def grid_section(grid: Path) -> tuple[list[str], list[tuple[str, Any, dict]]]:
    """The grid's markdown, and (key, scenario, real steps) of each run that missed."""
    from cuzk_sim.validation.boundary import at_vram
    from cuzk_sim.validation.spec import load_spec

    predictions = load_predictions(grid / "predictions.json")
    reals = read_reals(grid / "real.jsonl")
    c = criteria_of(predictions)
    ordinary = [p for p in predictions["runs"] if not p.get("race")]
    registered = [{**r, "model_at_achieved": None} for r in reals]
    rows = compare_runs(ordinary, registered, c)
    judged = {r.key: r for r in compare_runs(ordinary, reals, c)}
    s = summarize(rows, c)
    out = [
        f"Grid `{grid}`: spec `{predictions['source']}`, predictions registered "
        f"{predictions['date']} at commit {predictions['commit']}, profile "
        f"`{predictions.get('profile')}`; runs "
        + (f"{min(r['date'] for r in reals)} .. {max(r['date'] for r in reals)}" if reals else "-")
        + ".",
        "",
        *grid_table(rows, judged, c),
        "",
        *grid_counts(s, c, len(ordinary)),
    ]
    missed = [r for r in rows if _misses(r, c)]
    to_explain = []
    if missed:
        spec = load_spec(predictions["source"], predictions.get("profile"))
        scenarios = {cfg.name: cfg.scenario for cfg in spec.configs}
        first = {r["key"]: r for r in reals if r["repeat"] == 0}
        for r in missed:
            steps = first[r.key]["details"].get("steps") or {}
            to_explain.append((r.key, at_vram(scenarios[r.config], r.achieved_vram), steps))
    return out, to_explain


def run_model(name: str) -> tuple[Any, dict]:
    """The scenario of gpu-run `name` (w<W>-<L>) and the model's result for it."""
    from cuzk_sim.scenario import load_scenario
    from cuzk_sim.simulate.runner import simulate

    m = RUN_NAME.match(name)
    if m is None:
        raise InputError(f"{name}: not a run name w<workers>-<log2>")
    changes = {
        "engine.gpus.gpu_workers_per_device": int(m.group(1)),
        "plan.gpu_prover.domain_log2": int(m.group(2)),
        "workload[0].count": 1,
        "workload[0].partitions": 2,
    }
    scn = load_scenario(BASE, changes)
    return scn, simulate(scn).to_dict(log_lines=0)


def held_before(host: dict) -> tuple[int, bool]:
    """Of the run's key and inputs, the bytes an earlier run of its process had made, and
    whether the key was among them. Its host report says (`held_bytes`, `key_held_bytes`);
    a report written before it said so gives the estimate net of them, `need_bytes` =
    key + inputs - held + process: the key was held when the held bytes are the key's,
    with or without the inputs'."""
    key, inputs = host["key_bytes"], host["inputs_bytes"]
    if "held_bytes" in host:
        return host["held_bytes"], bool(host.get("key_held_bytes"))
    held = key + inputs + host["overhead_bytes"] - host["need_bytes"]
    return held, held > 0 and held in (key, key + inputs)


def rss_line(name: str, workers: int, host: dict) -> str:
    """Peak RSS against 1.2 x (key + workers x inputs), from the run's host report; the
    estimate stated before it, and whether it made its key or found it held."""
    key, inputs, peak = host["key_bytes"], host["inputs_bytes"], host["peak_rss_bytes"]
    bound = 1.2 * (key + workers * inputs)
    said = host.get("bound_bytes")
    check = "" if said is None or abs(said - bound) <= 1 else f" (the run said {said / GIB:.2f})"
    held, key_held = held_before(host)
    stated = f"stated before the run {host['need_bytes'] / GIB:.2f} GiB"
    if held:  # the statement counts only what was still to make, and the process
        stated = (
            f"stated before the run {(host['need_bytes'] + held) / GIB:.2f} GiB, "
            f"{held / GIB:.2f} GiB of it held already (made by an earlier run of the "
            f"process), {host['need_bytes'] / GIB:.2f} GiB to make and the process"
        )
    made = (
        "key made by an earlier run of the process, not by this one"
        if key_held
        else f"key made in {host.get('key_seconds', 0):.1f} s"
    )
    return (
        f"- {name}: peak RSS **{peak / GIB:.2f} GiB** against the bound 1.2 x (key "
        f"{key / GIB:.2f} + {workers} x inputs {inputs / GIB:.2f}) = {bound / GIB:.2f} GiB"
        f"{check}: {'within' if peak <= bound else '**over**'} ({peak / bound:.1%} of it); "
        f"{stated}; {made}"
    )


def runs_section(runs: Path, c: Criteria) -> tuple[list[str], list[tuple[str, Any, dict]]]:
    out = [
        "| gpu-run | s/proof real / model | err | peak VRAM real / model MiB | err |",
        "|---|---|---|---|---|",
    ]
    rss, to_explain = [], []
    for path in sorted(runs.glob("w*-*.details.json")):
        name = path.name.removesuffix(".details.json")
        if not RUN_NAME.match(name) or not (runs / f"{name}.json").is_file():
            continue
        real = json.loads((runs / f"{name}.json").read_text())
        details = json.loads(path.read_text())
        scn, model = run_model(name)
        rs, ms = real["seconds_per_proof"], model["seconds_per_proof"]
        rp = max(real["peak_vram_bytes"].values())
        mp = max(model["peak_vram_bytes"].values())
        spp_err = None if not rs or ms is None else (ms - rs) / rs
        peak_err = (mp - rp) / rp if rp else None
        out.append(
            f"| {name} | {rs:.3f} / {ms:.3f} s | {_pct(spp_err)} | {rp / MIB:.1f} / "
            f"{mp / MIB:.1f} | {_pct(peak_err)} |"
        )
        rss.append(rss_line(name, scn.config.gpu_workers_per_device, details["host"]))
        spp_miss = spp_err is None or abs(spp_err) > c.seconds_tolerance
        if spp_miss or peak_err is None or abs(peak_err) > c.peak_tolerance:
            to_explain.append((name, scn, details.get("steps") or {}))
    return [*out, "", *rss] if rss else [], to_explain


def report(grid: Path, runs: Path | None) -> str:
    out, explain = grid_section(grid)
    c = criteria_of(load_predictions(grid / "predictions.json"))
    out = ["## The production grid", "", *out]
    if runs is not None:
        lines, more = runs_section(runs, c)
        if lines:
            out += ["", "## gpu-run at production scale (the model of this tree)", "", *lines]
        explain += more
    if explain:
        out += ["", "## Where the runs that miss differ, step by step"]
    for key, scn, steps in explain:
        out += ["", f"{key}:", ""]
        if not steps:
            out.append("(no per-step times in its details)")
            continue
        out += step_differences(steps, model_steps(scn))
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    if not 1 <= len(argv) <= 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        print(report(Path(argv[0]), Path(argv[1]) if len(argv) == 2 else None), end="")
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
