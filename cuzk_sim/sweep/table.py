"""The summary of a sweep for people: what summary.json holds, as tables and lines,
printed with rich on a terminal and written as Markdown (summary.md) for reports."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cuzk_sim.io.units import format_size
from cuzk_sim.results.sim_result import per_hour

Tables = list[tuple[str, list[str], list[list[str]]]]  # (title, columns, rows)


def _s(v: float | None) -> str:
    """Seconds per proof and the same figure in proofs per hour (THROUGHPUT_DEFINITION)."""
    h = per_hour(v)
    return "-" if v is None or h is None else f"{v:.2f} s = {h:.1f}/h"


def _fails(buffer: str | None, p_oom: list[float] | None) -> str:
    """The buffer an unsafe row fails on; with replicas, how often, with its interval."""
    text = buffer or "-"
    if p_oom is not None:
        p, low, high = p_oom
        text += f" (P(OOM) {p:.2f}, 95 % {low:.2f}-{high:.2f})"
    return text


def _group(g: dict[str, Any]) -> str:
    return ", ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in g.items()) or "(all)"


def headline(summary: dict[str, Any], resumed: int = 0, lost: int = 0) -> str:
    return (
        f"{summary['sweep']}: {summary['configurations']} configurations, "
        f"{summary['safe']} safe, {summary['unsafe']} OOM or stalled, "
        f"{summary['errors']} unusable"
        + (f"; {resumed} taken from the output folder" if resumed else "")
        + (f"; {lost} lost with their workers (rerun to retry)" if lost else "")
    )


def summary_tables(summary: dict[str, Any]) -> Tables:
    out: Tables = []
    if summary["max_safe_workers"]:
        rows = [
            [
                _group(r["group"]),
                "none" if r["max_safe_workers"] is None else str(r["max_safe_workers"]),
                _s(r["seconds_per_proof"]),
                "-" if r["first_unsafe_workers"] is None else str(r["first_unsafe_workers"]),
                _fails(r["first_unsafe_buffer"], r.get("first_unsafe_oom_probability")),
                _s(r["best_safe_seconds_per_proof"]),
            ]
            for r in summary["max_safe_workers"]
        ]
        cols = ["other axes", "max safe", "throughput there", "first unsafe", "fails on"]
        out.append(("max safe workers per device", [*cols, "best safe throughput"], rows))
    if summary["min_safe_vram"]:
        rows = [
            [
                _group(r["group"]),
                "none" if r["min_safe"] is None else str(r["min_safe"]),
                _s(r["seconds_per_proof"]),
                "-" if r["largest_unsafe"] is None else str(r["largest_unsafe"]),
                _fails(r["largest_unsafe_buffer"], r.get("largest_unsafe_oom_probability")),
            ]
            for r in summary["min_safe_vram"]
        ]
        cols = ["other axes", "min safe", "throughput there", "largest unsafe", "fails on"]
        out.append(("min safe VRAM (grid)", cols, rows))
    if summary["searches"]:
        rows = []
        for b in summary["searches"]:
            if b["kind"] == "min_vram":
                lo, hi = b["max_unsafe_vram_bytes"], b["min_safe_vram_bytes"]
                bound = "none" if hi is None else format_size(hi)
                bracket = f"unsafe at {format_size(lo)}" if lo is not None else "-"
            else:
                hi, lo = b["max_safe_workers"], b["first_unsafe_workers"]
                bound = "none" if hi is None else f"{hi} worker{'s' if hi != 1 else ''}"
                bracket = f"unsafe at {lo}" if lo is not None else "-"
            rows.append(
                [b["kind"], _group(b["group"]), bound, bracket, str(b["probes"]), b["note"] or ""]
            )
        cols = ["search", "other axes", "boundary", "bracket", "probes", "note"]
        out.append(("searched boundaries", cols, rows))
    return out


def summary_lines(summary: dict[str, Any]) -> list[str]:
    lines = []
    best = summary["best_safe"]
    if best is not None:
        lines.append(
            f"best safe throughput: {_s(best['seconds_per_proof'])} at {_group(best['config'])}"
            + (f" (priced by {best['priced_by']})" if best.get("priced_by") else "")
        )
    else:
        lines.append("no configuration is safe")
    bound = summary.get("replicas")
    if bound:
        lines.append(
            f"safe = no OOM in {bound['replicas']} jittered replicas: P(OOM) < "
            f"{bound['safe_oom_probability_high']:.3f} (95 % Wilson upper bound), not zero"
        )
    for key, what, column, fmt in (
        ("frontier_vram", "VRAM", "vram_bytes", format_size),
        ("frontier_workers", "workers", "workers_per_device", str),
    ):
        if summary[key]:
            pts = "; ".join(
                f"{fmt(p[column])} -> {_s(p['seconds_per_proof'])}" for p in summary[key]
            )
            lines.append(f"frontier, throughput against {what}: {pts}")
    lines += [f"timings: {p}" for p in summary["pricing"]]
    from cuzk_sim.results.sim_result import THROUGHPUT_DEFINITION

    lines.append(THROUGHPUT_DEFINITION)
    return lines


def print_summary(
    summary: dict[str, Any], console: Console, resumed: int = 0, lost: int = 0
) -> None:
    console.print(escape(headline(summary, resumed, lost)), style="red" if lost else None)
    for title, cols, rows in summary_tables(summary):
        t = Table(title=title, title_justify="left")
        for c in cols:
            t.add_column(c)
        for r in rows:
            t.add_row(*(escape(x) for x in r))
        console.print(t)
    for line in summary_lines(summary):
        console.print(escape(line))


def summary_markdown(summary: dict[str, Any]) -> str:
    parts = [headline(summary), ""]
    for title, cols, rows in summary_tables(summary):
        parts += [f"**{title}**", "", "| " + " | ".join(cols) + " |"]
        parts.append("|" + "|".join("---" for _ in cols) + "|")
        parts += ["| " + " | ".join(r) + " |" for r in rows]
        parts.append("")
    parts += [f"- {line}" for line in summary_lines(summary)]
    return "\n".join(parts) + "\n"
