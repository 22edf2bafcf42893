"""The CI gate: replay scenarios, fail on an OOM nobody expected, on a broken expectation,
or on seconds per proof worse than a recorded baseline by more than a tolerance.

The baseline (JSON, committed beside the gate scenarios) is the model's own figures for
the prover as it was when someone last accepted them with `--update-baseline`: a
recorded state for regression detection, not a claim about real hardware.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cuzk_sim.expectations import Check
from cuzk_sim.input_errors import InputError
from cuzk_sim.result import SimResult

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


def load_baseline(path: Path) -> dict[str, BaselineEntry]:
    """Baseline entries by scenario name; an InputError names the file and the key."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(
            f"{path}: no such baseline file (create it with --update-baseline)"
        ) from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: cannot read the baseline ({e})") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not JSON: {e}") from None
    scenarios = data.get("scenarios") if isinstance(data, dict) else None
    if not isinstance(scenarios, dict):
        raise InputError(f"{path}: scenarios: expected an object keyed by scenario name")
    out: dict[str, BaselineEntry] = {}
    for name, entry in scenarios.items():
        spp = entry.get("seconds_per_proof") if isinstance(entry, dict) else "missing"
        oom = entry.get("oom") if isinstance(entry, dict) else None
        if spp is not None and (
            isinstance(spp, bool) or not isinstance(spp, int | float) or not spp > 0
        ):
            raise InputError(
                f"{path}: scenarios.{name}.seconds_per_proof: expected a positive number "
                f"or null, got {spp!r}"
            )
        if not isinstance(oom, bool):
            raise InputError(f"{path}: scenarios.{name}.oom: expected true or false, got {oom!r}")
        peaks = entry.get("peak_vram_bytes")
        try:
            peak = None if peaks is None else {int(d): int(b) for d, b in peaks.items()}
        except (AttributeError, TypeError, ValueError):
            raise InputError(
                f"{path}: scenarios.{name}.peak_vram_bytes: expected an object "
                f'{{"device": bytes}}, got {peaks!r}'
            ) from None
        out[name] = BaselineEntry(None if spp is None else float(spp), oom, peak)
    return out


def baseline_document(
    results: dict[str, tuple[str, SimResult]],
    previous: dict[str, Any] | None,
    command: str,
) -> dict[str, Any]:
    """The baseline JSON after an update: the entries of `results` (scenario name ->
    (source file, result)) replace those of `previous`; other entries are kept."""
    scenarios = dict((previous or {}).get("scenarios", {}))
    for name, (source, r) in sorted(results.items()):
        scenarios[name] = {
            "source": source,
            "seconds_per_proof": r.seconds_per_proof,
            "oom": r.oom,
            "first_oom_buffer": r.fatal_ooms[0].buffer if r.fatal_ooms else None,
            "peak_vram_bytes": {str(d): b for d, b in sorted(r.peak_vram_bytes.items())},
        }
    return {
        "note": BASELINE_NOTE,
        "command": command,
        "recorded": datetime.now(UTC).strftime("%Y-%m-%d"),
        "scenarios": dict(sorted(scenarios.items())),
    }


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
        }


def gate_row(
    name: str,
    result: SimResult,
    checks: list[Check],
    expects_oom: bool,
    baseline: BaselineEntry | None,
    tolerance: float,
) -> GateRow:
    """The verdict for one scenario; `checks` are its [expect] results (may be empty)."""
    reasons: list[str] = []
    notes: list[str] = []
    if result.oom and not expects_oom:
        e = result.fatal_ooms[0]
        reasons.append(
            f"unexpected OOM: {e.buffer} ({e.requested_bytes / 2**30:.2f} GiB) on gpu"
            f"{e.device} at t={e.time_s:.3f} s with {e.free_bytes / 2**30:.2f} GiB free"
        )
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
            if now_peak is not None and before > 0 and now_peak > before * (1 + tolerance):
                notes.append(
                    f"peak VRAM on gpu{dev} {now_peak / 2**30:.2f} GiB is "
                    f"{now_peak / before - 1:+.1%} against the baseline "
                    f"{before / 2**30:.2f} GiB: less headroom (not a failure)"
                )
    oom = "no" if not result.oom else "yes (expected)" if expects_oom else "yes"
    return GateRow(
        name,
        baseline.seconds_per_proof if baseline else None,
        now,
        delta,
        tuple(reasons),
        tuple(notes),
        oom=oom,
    )
