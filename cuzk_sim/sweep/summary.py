"""What a sweep answers: per combination of the other axes, the most workers and the
least VRAM that never OOM; the best safe throughput; the Pareto frontiers of seconds per
proof against VRAM and against workers.

From the grid rows: "max safe workers" is the largest worker count on the axis such that
it and every smaller count on the axis are safe (so a count that is safe only by luck
above an unsafe one is not offered; `non_monotone` flags it); "min safe VRAM" likewise
from the top: the smallest VRAM (or card) such that it and every larger one are safe.
The searches (`[search]`) give the same answers between grid points.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from cuzk_sim.results.sim_result import per_hour
from cuzk_sim.sweep.spec import CARD_KEY, VRAM_KEY, WORKERS_KEY, SweepSpec


def _config(spec: SweepSpec, row: dict[str, Any]) -> dict[str, Any]:
    return {a.path: row[a.path] for a in spec.axes}


def _groups(spec: SweepSpec, rows: list[dict], drop: set[str]) -> dict[tuple, list[dict]]:
    others = [a.path for a in spec.axes if a.path not in drop]
    out: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        out[tuple((p, _hashable(r[p])) for p in others)].append(r)
    return out


def _hashable(v: Any) -> Any:
    return repr(v) if isinstance(v, dict | list) else v


def _best(rows: list[dict]) -> dict | None:
    safe = [r for r in rows if r["safe"] and r["seconds_per_proof"] is not None]
    return min(
        safe, key=lambda r: (r["seconds_per_proof"], r["vram_bytes"] or 0, r["index"]), default=None
    )


def _group_dict(spec: SweepSpec, key: tuple, rows: list[dict]) -> dict[str, Any]:
    return {p: rows[0][p] for p, _ in key}


def max_safe_workers(spec: SweepSpec, rows: list[dict]) -> list[dict[str, Any]]:
    axis = spec.axis(WORKERS_KEY)
    if axis is None:
        return []
    out = []
    for key, group in _groups(spec, rows, {WORKERS_KEY}).items():
        ordered = sorted(group, key=lambda r: r[WORKERS_KEY])
        best, first_unsafe = None, None
        for r in ordered:
            if not r["safe"]:
                first_unsafe = r
                break
            best = r
        later_safe = first_unsafe is not None and any(
            r["safe"] for r in ordered[ordered.index(first_unsafe) :]
        )
        top = _best(group)
        out.append(
            {
                "group": _group_dict(spec, key, group),
                "max_safe_workers": best[WORKERS_KEY] if best else None,
                "seconds_per_proof": best["seconds_per_proof"] if best else None,
                "first_unsafe_workers": first_unsafe[WORKERS_KEY] if first_unsafe else None,
                "first_unsafe_buffer": first_unsafe["first_oom_buffer"] if first_unsafe else None,
                "first_unsafe_oom_probability": _p_oom(first_unsafe),
                "non_monotone": later_safe,
                "best_safe_seconds_per_proof": top["seconds_per_proof"] if top else None,
                "best_safe_workers": top[WORKERS_KEY] if top else None,
            }
        )
    return out


def _vram_axis(spec: SweepSpec) -> str | None:
    return next((p for p in (VRAM_KEY, CARD_KEY) if spec.axis(p) is not None), None)


def min_safe_vram(spec: SweepSpec, rows: list[dict]) -> list[dict[str, Any]]:
    axis = _vram_axis(spec)
    if axis is None:
        return []
    out = []
    for key, group in _groups(spec, rows, {VRAM_KEY, CARD_KEY}).items():
        # a row with an error has no resolved VRAM: it is left out of the order
        usable = [r for r in group if r["vram_bytes"] is not None]
        ordered = sorted(usable, key=lambda r: -r["vram_bytes"])
        best, first_unsafe = None, None
        for r in ordered:
            if not r["safe"]:
                first_unsafe = r
                break
            best = r
        top = _best(group)
        out.append(
            {
                "group": _group_dict(spec, key, group),
                "min_safe": _axis_value(best, axis),
                "min_safe_vram_bytes": best["vram_bytes"] if best else None,
                "seconds_per_proof": best["seconds_per_proof"] if best else None,
                "largest_unsafe": _axis_value(first_unsafe, axis),
                "largest_unsafe_buffer": first_unsafe["first_oom_buffer"] if first_unsafe else None,
                "largest_unsafe_oom_probability": _p_oom(first_unsafe),
                "best_safe_seconds_per_proof": top["seconds_per_proof"] if top else None,
            }
        )
    return out


def _p_oom(row: dict | None) -> list[float] | None:
    """With replicas: [P(OOM), its 95 % Wilson low, high] of an unsafe row; else None."""
    if row is None or row.get("oom_probability") is None:
        return None
    return [row["oom_probability"], row["oom_probability_low"], row["oom_probability_high"]]


def _axis_value(row: dict | None, axis: str) -> Any:
    return None if row is None else row[axis]


def pareto(points: list[tuple[float, float, dict]]) -> list[tuple[float, float, dict]]:
    """Points (cost, seconds per proof) not beaten on both by another: sorted by cost,
    each strictly faster than every cheaper one."""
    front: list[tuple[float, float, dict]] = []
    for p in sorted(points, key=lambda p: (p[0], p[1])):
        if not front or p[1] < front[-1][1]:
            front.append(p)
    return front


def frontier(spec: SweepSpec, rows: list[dict], column: str) -> list[dict[str, Any]]:
    pts = [
        (r[column], r["seconds_per_proof"], r)
        for r in rows
        if r["safe"] and r["seconds_per_proof"] is not None and r[column] is not None
    ]
    return [
        {
            column: c,
            "seconds_per_proof": s,
            "proofs_per_hour": per_hour(s),
            "config": _config(spec, r),
            "key": r["key"],
        }
        for c, s, r in pareto(pts)
    ]


def replica_bound(rows: list[dict]) -> dict[str, Any] | None:
    """With replicas: how many per configuration, and the 95 % Wilson upper bound on
    P(OOM) of a configuration that had no OOM in any of them (what "safe" can claim)."""
    from cuzk_sim.simulate.replicas import wilson_interval

    counts = {r["replicas"] for r in rows if r.get("replicas")}
    if not counts or max(counts) < 2:
        return None
    fewest = min(counts)
    return {"replicas": fewest, "safe_oom_probability_high": wilson_interval(0, fewest)[1]}


def summarize(spec: SweepSpec, rows: list[dict], boundaries: list[dict]) -> dict[str, Any]:
    best = _best(rows)
    return {
        "sweep": spec.name,
        "base": str(spec.base_path),
        "axes": [a.path for a in spec.axes],
        "configurations": len(rows),
        "safe": sum(1 for r in rows if r["safe"]),
        "unsafe": sum(1 for r in rows if not r["safe"] and r["error"] is None),
        "errors": sum(1 for r in rows if r["error"] is not None),
        "best_safe": None
        if best is None
        else {
            "config": _config(spec, best),
            "seconds_per_proof": best["seconds_per_proof"],
            "proofs_per_hour": per_hour(best["seconds_per_proof"]),
            "vram_bytes": best["vram_bytes"],
            "priced_by": best["priced_by"],
            "workers_per_device": best["workers_per_device"],
            "key": best["key"],
        },
        "max_safe_workers": max_safe_workers(spec, rows),
        "min_safe_vram": min_safe_vram(spec, rows),
        "searches": boundaries,
        "frontier_vram": frontier(spec, rows, "vram_bytes"),
        "frontier_workers": frontier(spec, rows, "workers_per_device"),
        "pricing": sorted({r["pricing"] for r in rows if r["pricing"]}),
        "replicas": replica_bound(rows),
    }
