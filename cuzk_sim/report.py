"""Short tables for people: one run, an OOM post-mortem, and the check summary."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from cuzk_sim.expectations import Check
from cuzk_sim.result import OomEvent, SimResult
from cuzk_sim.units import format_size


def _spp(result: SimResult) -> str:
    return "-" if result.seconds_per_proof is None else f"{result.seconds_per_proof:.1f}"


def _peaks(result: SimResult) -> str:
    return ", ".join(
        f"gpu{d} {format_size(b)}/{format_size(result.vram_total_bytes[d])}"
        for d, b in sorted(result.peak_vram_bytes.items())
    )


def run_table(result: SimResult) -> Table:
    t = Table(title=f"scenario {result.scenario} (seed {result.seed})", show_header=False)
    t.add_row("OOM", "yes" if result.oom else "no")
    t.add_row("stalled (deadlock)", "[red]yes[/red]" if result.stalled else "no")
    t.add_row(
        "proofs completed / failed / submitted",
        f"{result.proofs_completed} / {result.proofs_failed} / {result.proofs_submitted}",
    )
    t.add_row("seconds per proof", _spp(result))
    t.add_row("peak VRAM", _peaks(result))
    t.add_row(
        "peak host RAM",
        f"{format_size(result.peak_host_bytes)}/{format_size(result.host_budget_bytes)} budget",
    )
    if result.peak_core_demand:
        t.add_row("peak CPU threads asked for", f"{result.peak_core_demand:g}")
    t.add_row("fallbacks taken", str(sum(not e.fatal for e in result.oom_events)))
    t.add_row("simulated time", f"{result.sim_time_s:.1f} s")
    return t


def post_mortem(event: OomEvent) -> str:
    """An OOM as a post-mortem paragraph: what, where, when, and who held the memory."""
    place = "host RAM budget" if event.where == "host" else f"gpu{event.device}"
    lines = [
        f"OOM at t={event.time_s:.3f} s on {place}, worker {event.worker}, "
        f"partition {event.partition}: {event.allocator} alloc of {event.buffer} "
        f"({format_size(event.requested_bytes)}) with {format_size(event.free_bytes)} free"
        + ("" if event.fatal else f" -> fallback ({event.reason})"),
        "  live at that instant:",
    ]
    for owner, bufs in sorted(event.ledger.items()):
        total = sum(bufs.values())
        detail = ", ".join(f"{b} {format_size(n)}" for b, n in sorted(bufs.items()))
        lines.append(f"    {owner:>10}: {format_size(total):>10}  ({detail})")
    return "\n".join(lines)


def print_run(result: SimResult, console: Console) -> None:
    console.print(run_table(result))
    if result.fatal_ooms:
        console.print(post_mortem(result.fatal_ooms[0]))
    if result.stall:
        console.print(result.stall, markup=False)


def check_table(rows: list[tuple[str, SimResult | None, list[Check], str]]) -> Table:
    t = Table(title="cuzk-sim check")
    for col in ("scenario", "result", "OOM", "s/proof", "peak VRAM", "expectations"):
        t.add_column(col)
    for name, result, checks, error in rows:
        if result is None:
            t.add_row(name, "[red]ERROR[/red]", "-", "-", "-", error)
            continue
        ok = all(c.passed for c in checks)
        detail = "; ".join(
            f"{c.key}={c.expected}" + ("" if c.passed else f" [red](got {c.got})[/red]")
            for c in checks
        )
        t.add_row(
            name,
            "[green]PASS[/green]" if ok else "[red]FAIL[/red]",
            "yes" if result.oom else "no",
            _spp(result),
            _peaks(result),
            detail,
        )
    return t
