"""Boundaries: the smallest safe VRAM and the largest safe worker count, per combination
of the other axes.

"Safe" is `evaluate.is_safe`: usable, no fatal OOM, no stall, no replica that OOMed.

- min VRAM: bisection on `hardware.vram` (which overrides a `hardware.card`) between the
  spec's `vram_range`, in whole MiB, until the bracket [largest unsafe, smallest safe]
  is at most max(64 MiB, 0.1 % of its top). It assumes that more VRAM is never less
  safe; the model can break that (cuzk's `d_b` doubles once 3·N·32 B fits below VRAM −
  1 GiB), so the answer is the bracket found, both ends simulated.
- max workers: `engine.gpus.gpu_workers_per_device` = 1, 2, ... up to `workers_limit`,
  stopping at the first unsafe count: the answer is the largest count such that every
  smaller count is safe too.

Each search is one task (its probes run in sequence), so searches spread over the same
executor as rows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from cuzk_sim.scenario.overrides import apply_overrides
from cuzk_sim.sweep.evaluate import Task, evaluate
from cuzk_sim.sweep.spec import VRAM_KEY, WORKERS_KEY

MiB = 2**20
VRAM_TOLERANCE_BYTES = 64 * MiB
VRAM_TOLERANCE_FRACTION = 0.001


@dataclass(frozen=True)
class SearchTask:
    kind: str  # "min_vram" | "max_workers"
    group: dict[str, Any]  # the other axes' values: which combination this is
    task: Task  # the configuration searched over (its raw holds the group's values)
    vram_lo: int = 1 << 30
    vram_hi: int = 192 << 30
    workers_limit: int = 16


def vram_tolerance(hi: int) -> int:
    return max(VRAM_TOLERANCE_BYTES, int(VRAM_TOLERANCE_FRACTION * hi))


def _probe(task: Task, key: str, value: Any) -> dict[str, Any]:
    return evaluate(replace(task, raw=apply_overrides(task.raw, {key: value})))


def _summary(row: dict[str, Any] | None) -> dict[str, Any] | None:
    if row is None:
        return None
    keep = ("safe", "error", "oom", "first_oom_buffer", "seconds_per_proof", "peak_vram_bytes")
    return {k: row[k] for k in keep}


def min_safe_vram(st: SearchTask) -> dict[str, Any]:
    probes = 0

    def safe_at(v: int) -> dict[str, Any]:
        nonlocal probes
        probes += 1
        return _probe(st.task, VRAM_KEY, f"{v} B")

    lo, hi = st.vram_lo, st.vram_hi
    at_hi = safe_at(hi)
    out: dict[str, Any] = {"kind": st.kind, "group": st.group, "key": st.task.key}
    if not at_hi["safe"]:
        return out | {
            "min_safe_vram_bytes": None,
            "max_unsafe_vram_bytes": hi,
            "probes": probes,
            "at_min_safe": None,
            "at_max_unsafe": _summary(at_hi),
            "note": f"unsafe even at the top of vram_range ({hi} B)",
        }
    at_lo = safe_at(lo)
    if at_lo["safe"]:
        return out | {
            "min_safe_vram_bytes": lo,
            "max_unsafe_vram_bytes": None,
            "probes": probes,
            "at_min_safe": _summary(at_lo),
            "at_max_unsafe": None,
            "note": f"safe already at the bottom of vram_range ({lo} B)",
        }
    safe_row, unsafe_row = at_hi, at_lo
    while hi - lo > vram_tolerance(hi):
        mid = (lo + hi) // 2 // MiB * MiB
        if not lo < mid < hi:
            break
        row = safe_at(mid)
        if row["safe"]:
            hi, safe_row = mid, row
        else:
            lo, unsafe_row = mid, row
    return out | {
        "min_safe_vram_bytes": hi,
        "max_unsafe_vram_bytes": lo,
        "probes": probes,
        "at_min_safe": _summary(safe_row),
        "at_max_unsafe": _summary(unsafe_row),
        "note": None,
    }


def max_safe_workers(st: SearchTask) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": st.kind, "group": st.group, "key": st.task.key}
    best: dict[str, Any] | None = None
    for w in range(1, st.workers_limit + 1):
        row = _probe(st.task, WORKERS_KEY, w)
        if not row["safe"]:
            return out | {
                "max_safe_workers": w - 1 if w > 1 else None,
                "first_unsafe_workers": w,
                "probes": w,
                "at_max_safe": _summary(best),
                "at_first_unsafe": _summary(row),
                "note": None if w > 1 else "unsafe with one worker",
            }
        best = row
    return out | {
        "max_safe_workers": st.workers_limit,
        "first_unsafe_workers": None,
        "probes": st.workers_limit,
        "at_max_safe": _summary(best),
        "at_first_unsafe": None,
        "note": f"safe up to workers_limit ({st.workers_limit})",
    }


def run_search(st: SearchTask) -> dict[str, Any]:
    return min_safe_vram(st) if st.kind == "min_vram" else max_safe_workers(st)
