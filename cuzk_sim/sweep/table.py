"""The printed summary of a sweep (rich tables): what summary.json holds, for people."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from cuzk_sim.units import format_size


def _s(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def _group(g: dict[str, Any]) -> str:
    return ", ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in g.items()) or "(all)"


def print_summary(
    summary: dict[str, Any], console: Console, resumed: int = 0, lost: int = 0
) -> None:
    n = summary["configurations"]
    console.print(
        f"[bold]{summary['sweep']}[/]: {n} configurations, {summary['safe']} safe, "
        f"{summary['unsafe']} OOM or stalled, {summary['errors']} unusable"
        + (f"; {resumed} taken from the output folder" if resumed else "")
        + (f"; [red]{lost} lost with their workers (rerun to retry)[/]" if lost else "")
    )
    if summary["max_safe_workers"]:
        t = Table(title="max safe workers per device", title_justify="left")
        for c in (
            "other axes",
            "max safe",
            "s/proof there",
            "first unsafe",
            "fails on",
            "best safe s/proof",
        ):
            t.add_column(c)
        for r in summary["max_safe_workers"]:
            t.add_row(
                _group(r["group"]),
                "none" if r["max_safe_workers"] is None else str(r["max_safe_workers"]),
                _s(r["seconds_per_proof"]),
                "-" if r["first_unsafe_workers"] is None else str(r["first_unsafe_workers"]),
                r["first_unsafe_buffer"] or "-",
                _s(r["best_safe_seconds_per_proof"]),
            )
        console.print(t)
    if summary["min_safe_vram"]:
        t = Table(title="min safe VRAM", title_justify="left")
        for c in ("other axes", "min safe", "s/proof there", "largest unsafe", "fails on"):
            t.add_column(c)
        for r in summary["min_safe_vram"]:
            t.add_row(
                _group(r["group"]),
                "none" if r["min_safe"] is None else str(r["min_safe"]),
                _s(r["seconds_per_proof"]),
                "-" if r["largest_unsafe"] is None else str(r["largest_unsafe"]),
                r["largest_unsafe_buffer"] or "-",
            )
        console.print(t)
    if summary["searches"]:
        t = Table(title="searched boundaries", title_justify="left")
        for c in ("search", "other axes", "boundary", "bracket", "probes", "note"):
            t.add_column(c)
        for b in summary["searches"]:
            if b["kind"] == "min_vram":
                lo, hi = b["max_unsafe_vram_bytes"], b["min_safe_vram_bytes"]
                bound = "none" if hi is None else format_size(hi)
                bracket = f"unsafe {format_size(lo)}" if lo is not None else "-"
            else:
                hi, lo = b["max_safe_workers"], b["first_unsafe_workers"]
                bound = "none" if hi is None else f"{hi} workers"
                bracket = f"unsafe at {lo}" if lo is not None else "-"
            t.add_row(
                b["kind"], _group(b["group"]), bound, bracket, str(b["probes"]), b["note"] or ""
            )
        console.print(t)
    best = summary["best_safe"]
    if best is not None:
        console.print(
            f"best safe throughput: {best['seconds_per_proof']:.2f} s/proof at "
            f"{_group(best['config'])}"
        )
    else:
        console.print("no configuration is safe")
    for key, what, fmt in (
        ("frontier_vram", "VRAM", lambda v: format_size(v)),
        ("frontier_workers", "workers", str),
    ):
        column = "vram_bytes" if key == "frontier_vram" else "workers_per_device"
        front = summary[key]
        if front:
            pts = "; ".join(f"{fmt(p[column])} -> {p['seconds_per_proof']:.2f} s" for p in front)
            console.print(f"frontier, s/proof against {what}: {pts}")
    for p in summary["pricing"]:
        console.print(f"timings: {p}")
