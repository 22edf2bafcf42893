"""The CI gate: replay scenarios, fail on an OOM nobody expected, on a broken expectation,
or on seconds per proof worse than a recorded baseline by more than a tolerance.

The baseline (JSON, committed beside the gate scenarios) is the model's own figures for
the prover as it was when someone last accepted them with `--update-baseline`: a
recorded state for regression detection, not a claim about real hardware.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cuzk_sim.io.errors import InputError, from_validation
from cuzk_sim.io.inputs import load_json, path_kind
from cuzk_sim.io.units import MAX_DURATION_S, MAX_SIZE_BYTES, format_size
from cuzk_sim.plan.contract import Plan
from cuzk_sim.plan.diff import (
    BufferFinding,
    BufferLife,
    buffer_findings,
    grouped_lines,
    plan_changes,
)
from cuzk_sim.results.expectations import Check
from cuzk_sim.results.sim_result import SimResult
from cuzk_sim.results.tables import post_mortem

BASELINE_NOTE = (
    "Model figures of the current prover for regression detection (cuzk-sim gate); "
    "not expectations. Update deliberately with --update-baseline in the commit that "
    "changes the prover."
)


def parse_tolerance(text: str) -> float:
    """'5%' -> 0.05; '0.05' -> 0.05. A fraction in [0, 10); ValueError says what was wrong."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise ValueError(
            f"expected a percentage like '5%' or a fraction like 0.05, got {text!r}"
        ) from None
    if not 0 <= value < 10:  # NaN fails this too
        raise ValueError(f"expected a tolerance from 0% to 1000%, got {text!r}")
    return value


@dataclass(frozen=True)
class BaselineEntry:
    seconds_per_proof: float | None  # None: no proof completed (e.g. a known OOM)
    oom: bool
    peak_vram_bytes: dict[int, int] | None = None  # by device; optional in the file
    plans: dict[str, list[BufferLife]] | None = None  # buffer lives by kind; optional


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True)


class _LifeIn(_Strict):
    model_config = ConfigDict(strict=True, extra="forbid")
    buffer: str
    bytes: Annotated[int, Field(ge=0, le=MAX_SIZE_BYTES)]
    memory: str
    allocated_after: str
    freed_after: str | None
    locks_at_alloc: list[str]
    locks_at_free: list[str]


class _EntryIn(_Strict):  # extra keys (source, first_oom_buffer) are informative
    seconds_per_proof: Annotated[float, Field(gt=0, le=MAX_DURATION_S)] | None = None
    oom: bool
    peak_vram_bytes: dict[str, Annotated[int, Field(ge=0, le=MAX_SIZE_BYTES)]] | None = None
    plans: dict[str, list[_LifeIn]] | None = None


class _BaselineIn(_Strict):
    scenarios: dict[str, _EntryIn]


def load_baseline(path: Path) -> dict[str, BaselineEntry]:
    """Baseline entries by scenario name; an InputError names the file and the key."""
    if path_kind(path, "--baseline") == "missing":
        raise InputError(f"{path}: no such baseline file (create it with --update-baseline)")
    data = load_json(path, "baseline file")
    if not isinstance(data, dict) or not isinstance(data.get("scenarios"), dict):
        raise InputError(f"{path}: scenarios: expected an object keyed by scenario name")
    try:
        doc = _BaselineIn.model_validate(data)
    except ValidationError as e:
        raise from_validation(str(path), e) from None
    out: dict[str, BaselineEntry] = {}
    for name, e in doc.scenarios.items():
        try:
            peaks = (
                None
                if e.peak_vram_bytes is None
                else {int(d): b for d, b in e.peak_vram_bytes.items()}
            )
        except ValueError:
            raise InputError(
                f"{path}: scenarios.{name}.peak_vram_bytes: expected device numbers as keys"
            ) from None
        plans = None
        if e.plans is not None:
            plans = {
                k: [BufferLife.from_dict(b.model_dump()) for b in v] for k, v in e.plans.items()
            }
        out[name] = BaselineEntry(e.seconds_per_proof, e.oom, peaks, plans)
    return out


@dataclass(frozen=True)
class Recorded:
    """One scenario for --update-baseline: what it ran and whether the gate passed it."""

    source: str
    result: SimResult
    plans: dict[str, Plan]
    passed: bool


def baseline_document(
    runs: dict[str, Recorded], previous: dict[str, Any] | None, command: str
) -> tuple[dict[str, Any], list[str]]:
    """The baseline JSON after an update, and what it kept. A passing run's entry replaces
    the previous one; a failing run (an unexpected OOM, a broken expectation, a stall)
    never replaces a recorded entry — its figures are not a state anyone accepted — so the
    last good seconds_per_proof survives. Entries of scenarios not run are kept."""
    from cuzk_sim.plan.diff import plan_record

    scenarios = dict((previous or {}).get("scenarios", {}))
    kept: list[str] = []
    for name, run in sorted(runs.items()):
        r = run.result
        if not run.passed:
            old = scenarios.get(name)
            if old is not None:
                spp = old.get("seconds_per_proof") if isinstance(old, dict) else None
                figure = "no proof completed" if spp is None else f"{spp:.1f} s/proof"
                kept.append(f"{name}: kept the previous entry ({figure}): this run failed")
            else:
                kept.append(f"{name}: not recorded: this run failed and there is no entry to keep")
            continue
        scenarios[name] = {
            "source": run.source,
            "seconds_per_proof": r.seconds_per_proof,
            "oom": r.oom,
            "first_oom_buffer": r.fatal_ooms[0].buffer if r.fatal_ooms else None,
            "peak_vram_bytes": {str(d): b for d, b in sorted(r.peak_vram_bytes.items())},
            "plans": plan_record(run.plans),
        }
    doc = {
        "note": BASELINE_NOTE,
        "command": command,
        "recorded": datetime.now(UTC).strftime("%Y-%m-%d"),
        "scenarios": dict(sorted(scenarios.items())),
    }
    return doc, kept


@dataclass(frozen=True)
class GateRow:
    scenario: str
    baseline_s: float | None
    now_s: float | None
    delta: float | None  # now / baseline - 1
    reasons: tuple[str, ...]  # why it fails; empty: it passes
    notes: tuple[str, ...] = ()  # worth knowing, not failures
    error: str = ""  # the scenario could not be loaded
    oom: str = ""  # "no", "yes (expected)" or "yes"
    plan_diff: tuple[str, ...] = ()  # buffer changes against the baseline's plan record
    source: str = ""  # the scenario file
    buffers: tuple[BufferFinding, ...] = ()  # buffers grown past the thresholds

    @property
    def passed(self) -> bool:
        return not self.reasons and not self.error

    @property
    def verdict(self) -> str:
        if self.error:
            return "ERROR"
        return "PASS" if self.passed else "FAIL"

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "baseline_seconds_per_proof": self.baseline_s,
            "seconds_per_proof": self.now_s,
            "delta": self.delta,
            "verdict": self.verdict,
            "oom": self.oom,
            "reasons": list(self.reasons),
            "notes": list(self.notes),
            "error": self.error,
            "plan_diff": list(self.plan_diff),
            "buffer_findings": [
                {
                    "kind": b.kind,
                    "buffer": b.family,
                    "count": b.count,
                    "old_bytes": b.old_bytes,
                    "new_bytes": b.new_bytes,
                    "site": b.site,
                }
                for b in self.buffers
            ],
            "source": self.source,
        }


def gate_row(
    name: str,
    result: SimResult,
    checks: list[Check],
    expects_oom: bool,
    baseline: BaselineEntry | None,
    tolerance: float,
    plans: dict[str, Plan] | None = None,
    max_vram_growth: float | None = None,
    buffer_growth: tuple[float, int] | None = None,
) -> GateRow:
    """The verdict for one scenario; `checks` are its [expect] results (may be empty);
    `plans` (what the scenario replayed) are diffed against the baseline's record;
    `max_vram_growth`: fail when a device's peak VRAM grows by more than this fraction;
    `buffer_growth` (share, bytes): fail when a buffer grows by more than both, or a new
    buffer is larger than the bytes, whatever the peak does."""
    reasons: list[str] = []
    notes: list[str] = []
    if result.oom and not expects_oom:  # the post-mortem's own sentence (device or host)
        reasons.append("unexpected " + post_mortem(result.fatal_ooms[0]).splitlines()[0])
    if result.stall and not any(c.key == "stalled" for c in checks):
        reasons.append(result.stall)
    for c in checks:
        if not c.passed:
            reasons.append(f"expect.{c.key}: expected {c.expected}, got {c.got}")
    now = result.seconds_per_proof
    delta = None
    if baseline is None:
        reasons.append("no baseline entry for this scenario (record one with --update-baseline)")
    elif baseline.seconds_per_proof is None:
        if now is not None:
            notes.append("the baseline completed no proof; this run does: update the baseline")
    else:
        base = baseline.seconds_per_proof
        if now is None:
            reasons.append(f"no proof completed; the baseline completed one every {base:.1f} s")
        else:
            delta = now / base - 1
            if delta > tolerance:
                reasons.append(
                    f"throughput regression: {now:.1f} s/proof is {delta:+.1%} against the "
                    f"baseline {base:.1f} s (tolerance {tolerance:.1%})"
                )
            elif delta < -tolerance:
                notes.append(
                    f"faster than the baseline by {-delta:.1%}: record it with "
                    "--update-baseline so later regressions are measured from here"
                )
    if baseline is not None and baseline.peak_vram_bytes:
        for dev, before in sorted(baseline.peak_vram_bytes.items()):
            now_peak = result.peak_vram_bytes.get(dev)
            if now_peak is None or before <= 0:
                continue
            growth = now_peak / before - 1
            text = (
                f"peak VRAM on gpu{dev} {now_peak / 2**30:.2f} GiB is {growth:+.1%} against "
                f"the baseline {before / 2**30:.2f} GiB"
            )
            if max_vram_growth is not None and growth > max_vram_growth:
                reasons.append(f"{text} (allowed: {max_vram_growth:+.1%}, --max-vram-growth)")
            elif growth > tolerance:
                notes.append(f"{text}: less headroom (not a failure)")
    plan_diff: tuple[str, ...] = ()
    found: list[BufferFinding] = []
    if plans is not None and baseline is not None:
        if baseline.plans is None:
            notes.append("the baseline holds no plan record: no per-buffer diff")
        else:
            changes = plan_changes(baseline.plans, plans)
            plan_diff = tuple(grouped_lines(changes))
            if buffer_growth is not None:
                share, size = buffer_growth
                found = buffer_findings(baseline.plans, plans, share, size, alloc_sites(plans))
                allowed = (
                    f"(allowed: {share:+.1%} and {format_size(size)}, --max-buffer-growth / "
                    "--min-buffer-growth)"
                )
                reasons += [f"{b.sentence} {allowed}" for b in found]
    oom = "no" if not result.oom else "yes (expected)" if expects_oom else "yes"
    return GateRow(
        name,
        baseline.seconds_per_proof if baseline else None,
        now,
        delta,
        tuple(reasons),
        tuple(notes),
        oom=oom,
        plan_diff=plan_diff,
        buffers=tuple(found),
    )


def alloc_sites(plans: dict[str, Plan]) -> dict[str, dict[str, str]]:
    """By kind, buffer -> the prover line (`file:line`, relative to the working folder
    when under it, as CI annotations want) that allocates it: what our prover's dry run
    recorded in `plan.meta["alloc_sites"]`; a plan file's buffers have none."""
    out: dict[str, dict[str, str]] = {}
    cwd = os.getcwd()
    for kind, plan in plans.items():
        sites = plan.meta.get("alloc_sites")
        if not isinstance(sites, dict):
            continue
        mine = out[kind] = {}
        for buf, site in sites.items():
            path, _, line = str(site).rpartition(":")
            if path.startswith(cwd + os.sep):
                path = os.path.relpath(path, cwd)
            mine[str(buf)] = f"{path}:{line}"
    return out


def baseline_text(doc: dict[str, Any]) -> str:
    """The baseline as JSON text for review in a diff: indented, but each buffer life of a
    plan record on one line (a plan of 50 buffers is 50 lines, not 500)."""
    compact: list[str] = []
    scenarios = {}
    for name, entry in doc.get("scenarios", {}).items():
        plans = entry.get("plans") if isinstance(entry, dict) else None
        if isinstance(plans, dict):
            marked = {}
            for kind, lives in plans.items():
                marked[kind] = []
                for life in lives:
                    marked[kind].append(f"\0{len(compact)}\0")
                    compact.append(json.dumps(life, separators=(", ", ": ")))
            entry = dict(entry, plans=marked)
        scenarios[name] = entry
    text = json.dumps(dict(doc, scenarios=scenarios), indent=2) + "\n"
    return re.sub(r'"\\u0000(\d+)\\u0000"', lambda m: compact[int(m.group(1))], text)
