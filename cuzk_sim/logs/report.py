"""What `cuzk-sim logs` prints: findings first, then the timeline, GPUs and figures."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cuzk_sim.logs.analyze import LineMap
from cuzk_sim.logs.parse import LogParser
from cuzk_sim.logs.timeline import FIGURES, Analyzer

SHOW_PARTITIONS = 24
COLOR = {"error": "red", "warning": "yellow", "info": "cyan"}


def to_dict(a: Analyzer, parser: LogParser, lines: LineMap) -> dict:
    c = parser.counts
    return {
        "files": lines.files,
        "lines": {
            "total": c.lines,
            "known": c.known,
            "unknown": c.unknown,
            "malformed": c.malformed,
            "bytes": c.bytes,
        },
        "malformed": [{"line": lines.where(n), "why": why, "text": t} for n, why, t in a.malformed],
        "engine_starts": a.engine_starts,
        "workers": {
            str(w): {
                "gpu": a.workers.get(w),
                "name": a.worker_name(w),
                "started_line": w in a.workers,  # else only TIMELINE lines name it
            }
            for w in sorted(set(a.workers) | a.timeline_workers)
        },
        "worker_count": a.worker_count()[0],
        "worker_count_from": a.worker_count()[1],
        "gpus": {str(g): v for g, v in a.occupancy().items()},
        "observed_seconds_per_proof": a.observed_seconds_per_proof(),
        "proofs_done": a.done_n,
        "jobs_per_kind": a.jobs_per_kind,
        "figures": {
            k: {n: st.to_dict() for n, st in sorted(v.items())}
            for k, v in sorted(a.kind_stats.items())
        },
        "mutex": {"wait_ms": a.mutex_wait.to_dict(), "held_ms": a.mutex_held.to_dict()},
        "partitions_total": a.closed_count,
        "partitions": [p.to_dict() for p in a.closed],
        "jobs": a.jobs_kept,
        "findings": [
            {
                **f.to_dict(),
                "evidence": [{"line": lines.where(n), "text": t} for n, t in sorted(f.evidence)],
            }
            for f in a.book.ordered()
        ],
    }


def _workers(a: Analyzer) -> str:
    n, source = a.worker_count()
    return f"{n} GPU worker(s)" + ("" if source == "start-up lines" else f" ({source})")


def _ms(v: int | None) -> str:
    return "-" if v is None else f"{v / 1000:.3f}"


def print_report(a: Analyzer, parser: LogParser, lines: LineMap, console: Console) -> None:
    c = parser.counts
    console.print(
        f"{', '.join(lines.files)}: {c.lines} lines, {c.known} known, {c.unknown} not "
        f"cuzk's (ignored), {c.malformed} malformed; {a.engine_starts} engine start(s), "
        f"{_workers(a)}, {a.closed_count} partition(s)"
    )
    for n, why, text in a.malformed[:10]:
        console.print(f"  [yellow]malformed[/yellow] {lines.where(n)}: {why}: {escape(text[:120])}")
    findings = a.book.ordered()
    if not findings:
        console.print("findings: none")
    for f in findings:
        col = COLOR[f.severity]
        console.print(
            f"[{col}]{f.severity}[/{col}] [bold]{f.id}[/bold]"
            + (f" (x{f.occurrences})" if f.occurrences > 1 else "")
        )
        console.print(f"  {escape(f.sentence)}")
        for n, t in sorted(f.evidence):
            console.print(f"    {lines.where(n)}: {escape(t[:160])}")

    _print_gpus(a, console)
    spp = a.observed_seconds_per_proof()
    if spp is not None:
        console.print(f"observed: {spp:.2f} s/proof over {a.done_n} proofs")

    _print_partitions(a, console)
    _print_figures(a, console)


def _print_gpus(a: Analyzer, console: Console) -> None:
    """Per GPU: sections, busy share, mutex held, synthesis-starved idle."""
    occ = a.occupancy()
    if occ:
        t = Table(title="GPUs")
        for col in (
            "GPU",
            "sections",
            "window s",
            "busy s",
            "busy",
            "mutex held s",
            "idle, synthesis-starved s",
        ):
            t.add_column(col, justify="right")
        for g, o in occ.items():
            share = "-" if o["busy_share"] is None else f"{o['busy_share']:.0%}"
            t.add_row(
                str(g),
                str(o["sections"]),
                f"{o['window_s']:.1f}",
                f"{o['busy_s']:.1f}",
                share,
                f"{o['mutex_held_s']:.1f}",
                f"{o['starved_s']:.1f}",
            )
        console.print(t)


def _print_partitions(a: Analyzer, console: Console) -> None:
    """The first partitions closed, one row each."""
    if a.closed:
        t = Table(
            title=f"partitions (first {min(SHOW_PARTITIONS, len(a.closed))} of "
            f"{a.closed_count}; --json for up to {a.keep}), seconds"
        )
        for col in (
            "job",
            "part",
            "worker",
            "GPU",
            "synthesis",
            "queue wait",
            "GPU section",
            "mutex wait",
            "outcome",
        ):
            t.add_column(
                col, justify="right" if col not in ("job", "worker", "outcome") else "left"
            )
        for p in a.closed[:SHOW_PARTITIONS]:
            d = p.to_dict()
            t.add_row(
                escape(p.job[:18]),
                str(p.partition),
                a.worker_name(p.worker),
                str(p.gpu if p.gpu is not None else "-"),
                _ms(d["synthesis_ms"]),
                _ms(d["queue_wait_ms"]),
                _ms(d["gpu_section_ms"]),
                _ms(d["mutex_wait_ms"]),
                p.outcome,
            )
        console.print(t)


def _print_figures(a: Analyzer, console: Console) -> None:
    """Per proof kind: the figures the log measures."""
    for kind, stats in sorted(a.kind_stats.items()):
        t = Table(title=f"{kind}: measured figures (ms)")
        for col in ("figure", "samples", "median", "mean", "min", "max"):
            t.add_column(col, justify="right" if col != "figure" else "left")
        for name in FIGURES:
            st = stats.get(name)
            if st is not None and st.n:
                t.add_row(
                    name,
                    str(st.n),
                    f"{st.median:.0f}",
                    f"{st.mean:.1f}",
                    f"{st.lo:.0f}",
                    f"{st.hi:.0f}",
                )
        console.print(t)
