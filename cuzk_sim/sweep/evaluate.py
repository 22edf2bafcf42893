"""One configuration -> one row: resolve the scenario, simulate it, keep the figures a
capacity planner compares.

A task is plain data (the resolved scenario dict and where its relative paths point), so
it pickles to a process pool or a Dask worker alike and the row is a pure function of
it: the same task gives the same row on any executor. Unusable input (a combination of
axis values the scenario format refuses) becomes a row with `error` set, not a crash.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuzk_sim.io.errors import InputError

# Columns of a row after the axis columns, in output order.
METRIC_COLUMNS = (
    "key",
    "safe",
    "error",
    "oom",
    "oom_probability",
    "oom_probability_low",
    "oom_probability_high",
    "first_oom_buffer",
    "first_oom_where",
    "stalled",
    "seconds_per_proof",
    "proofs_per_hour",
    "seconds_per_proof_p50",
    "seconds_per_proof_p95",
    "proofs_submitted",
    "proofs_completed",
    "proofs_failed",
    "proofs_per_hour_by_kind",
    "bottleneck",
    "peak_vram_bytes",
    "vram_total_bytes",
    "headroom_bytes",
    "headroom_fraction",
    "peak_host_bytes",
    "workers_per_device",
    "vram_bytes",
    "card",
    "priced_by",
    "pricing",
    "replicas",
    "jitter",
    "sim_time_s",
    "stall",
)


@dataclass(frozen=True)
class Task:
    key: str
    raw: dict[str, Any]  # the resolved scenario dict
    source: str  # the base scenario's file name, for error messages
    folder: str  # where the scenario's relative paths (plan.file, profile) point
    replicas: int = 1
    jitter: float = 0.0
    code: str | None = None  # the client's code fingerprint; None: not checked


def check_code(task: Task) -> None:
    """Refuse to simulate with other code than the client's (a Dask worker with another
    installation): an InputError, so the sweep stops with one line, storing nothing."""
    from cuzk_sim.sweep.fingerprint import code_fingerprint

    mine = code_fingerprint()
    if task.code is not None and task.code != mine:
        raise InputError(
            f"a sweep worker runs other cuzk-sim code (fingerprint {mine}, the client's "
            f"{task.code}): install the same cuzk-sim on every worker"
        )


def load_task_scenario(task: Task):
    from cuzk_sim.scenario import scenario_from_dict

    return scenario_from_dict(task.raw, task.source, Path(task.folder))


def simulate_task(task: Task):
    """(scenario, result) of the unperturbed run: what `cuzk-sim run --json` gives."""
    from cuzk_sim.simulate.runner import simulate

    scenario = load_task_scenario(task)
    return scenario, simulate(scenario)


def is_safe(row: dict[str, Any]) -> bool:
    """Usable, no fatal OOM (device or host), no stall, and no replica that OOMed."""
    return (
        row.get("error") is None
        and not row.get("oom")
        and not row.get("stalled")
        and not (row.get("oom_probability") or 0.0) > 0.0
    )


def evaluate(task: Task) -> dict[str, Any]:
    """The metric columns of one configuration's row."""
    check_code(task)  # outside the try: other code is no row, it stops the sweep
    row: dict[str, Any] = dict.fromkeys(METRIC_COLUMNS)
    row.update(key=task.key, replicas=task.replicas, jitter=task.jitter)
    try:
        scenario, result = simulate_task(task)
        report = _replicas(scenario, task) if task.replicas > 1 else None
    except InputError as e:
        row.update(error=str(e), safe=False)
        return row
    row.update(result_columns(result))
    row.update(
        workers_per_device=scenario.config.gpu_workers_per_device,
        vram_bytes=scenario.config.vram,
        card=_card_name(task.raw),
        priced_by=scenario.profile.name,
    )
    from cuzk_sim.profiles.cards import pricing_note
    from cuzk_sim.profiles.profile import load_profile

    try:  # the profile by its name, as a row names it
        row["pricing"] = pricing_note(row["card"], load_profile(scenario.profile.name))
    except InputError as e:  # an unknown card that the scenario still accepted
        row["pricing"] = str(e)
    if report is not None:
        low, high = report.oom_interval  # 95 % Wilson: 0 of R is not "never"
        row.update(
            oom_probability=report.oom_probability,
            oom_probability_low=low,
            oom_probability_high=high,
            seconds_per_proof_p50=report.seconds_per_proof_p50,
            seconds_per_proof_p95=report.seconds_per_proof_p95,
        )
    row["safe"] = is_safe(row)
    return row


def result_columns(result) -> dict[str, Any]:
    """The row's copy of a SimResult's figures (the same values as its --json)."""
    first = result.fatal_ooms[0] if result.fatal_ooms else None
    peak = {str(d): b for d, b in sorted(result.peak_vram_bytes.items())}
    total = {str(d): b for d, b in sorted(result.vram_total_bytes.items())}
    headroom = min((total[d] - peak.get(d, 0) for d in total), default=None)
    smallest = min(total.values(), default=0)
    m = result.metrics
    return {
        "proofs_per_hour": result.proofs_per_hour,
        "proofs_per_hour_by_kind": {k.kind: k.proofs_per_hour for k in m.kinds} if m else None,
        "bottleneck": m.bottleneck if m is not None else None,
        "oom": result.oom,
        "first_oom_buffer": first.buffer if first else None,
        "first_oom_where": first.where if first else None,
        "stalled": result.stalled,
        "stall": result.stall,
        "seconds_per_proof": result.seconds_per_proof,
        "proofs_submitted": result.proofs_submitted,
        "proofs_completed": result.proofs_completed,
        "proofs_failed": result.proofs_failed,
        "peak_vram_bytes": peak,
        "vram_total_bytes": total,
        "headroom_bytes": headroom,
        "headroom_fraction": headroom / smallest if headroom is not None and smallest else None,
        "peak_host_bytes": result.peak_host_bytes,
        "sim_time_s": result.sim_time_s,
    }


def _card_name(raw: dict[str, Any]) -> str | None:
    hw = raw.get("hardware")
    card = hw.get("card") if isinstance(hw, dict) else None
    return card if isinstance(card, str) else None


def _replicas(scenario, task: Task):
    from cuzk_sim.simulate.replicas import run_replicas

    return run_replicas(scenario, task.replicas, task.jitter)
