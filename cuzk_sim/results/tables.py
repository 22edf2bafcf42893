"""Short tables for people: one run, an OOM post-mortem, and the check summary.

Text that comes from the user (scenario names, expectations, buffer names) is escaped
before it reaches rich, so `[/]` in a name prints as itself.
"""

from __future__ import annotations

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cuzk_sim.io.units import format_size
from cuzk_sim.results.expectations import Check
from cuzk_sim.results.metrics import DeviceMetrics, RunMetrics
from cuzk_sim.results.sim_result import DRY_RUN_NOTE, OomEvent, SimResult

BOTTLENECK_NAMES = {
    "synthesis": "synthesis-bound",
    "gpu": "GPU-bound",
    "copy": "copy-bound",
    "mutex": "mutex-bound",
    "host-ram": "host-RAM-bound",
    "cpu-pool": "CPU-pool-bound (groth16_pool)",
    "none": "nothing saturated",
}


def _spp(result: SimResult) -> str:
    """Seconds per proof, never alone when proofs failed: it says nothing about the
    failed ones (a configuration that fails most proofs can look fast)."""
    if result.dry_run:
        return "not timed (dry run)"
    if result.seconds_per_proof is None:
        return "-"  # none completed: nothing to misread
    spp = f"{result.seconds_per_proof:.1f}"
    if result.proofs_failed:
        finished = result.proofs_completed + result.proofs_failed
        return f"{spp} ({result.proofs_failed} of {finished} failed)"
    return spp


def _throughput(result: SimResult) -> str:
    """s/proof and proofs/h side by side: one quantity (THROUGHPUT_DEFINITION)."""
    if result.dry_run:
        return "not timed (dry run)"
    if result.seconds_per_proof is None or result.proofs_per_hour is None:
        return "- (no proof completed)"
    text = f"{result.seconds_per_proof:.1f} s/proof = {result.proofs_per_hour:.1f} proofs/h"
    if result.proofs_failed:
        finished = result.proofs_completed + result.proofs_failed
        text += f" ({result.proofs_failed} of {finished} failed, not counted)"
    return text


def _pct(x: float) -> str:
    return f"{x:.0%}"


def _latency(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def _peaks(result: SimResult) -> str:
    return ", ".join(
        f"gpu{d} {format_size(b)}/{format_size(result.vram_total_bytes[d])}"
        for d, b in sorted(result.peak_vram_bytes.items())
    )


def vram_and_profile(result: SimResult) -> str:
    """The VRAM each device had and the profile that priced the run, as resolved."""
    sizes = sorted(set(result.vram_total_bytes.values()))
    vram = ", ".join(format_size(v) for v in sizes) or "-"
    card = f" (card {result.card})" if result.card else ""
    profile = result.profile or "?"
    return f"{vram} per GPU{card}; priced by profile {profile}"


def title(result: SimResult) -> str:
    """The table's title: the scenario, its seed and who produced the figures."""
    text = f"scenario {escape(result.scenario)} (seed {result.seed})"
    if result.dry_run:
        return f"DRY RUN of {text}: {DRY_RUN_NOTE}"
    if result.device == "real":
        return f"{text}, run on the GPU"
    return text


def run_table(result: SimResult) -> Table:
    t = Table(title=title(result), show_header=False)
    t.add_row("OOM", "yes" if result.oom else "no")
    t.add_row("stalled (deadlock)", "[red]yes[/red]" if result.stalled else "no")
    t.add_row(
        "proofs completed / failed / submitted",
        f"{result.proofs_completed} / {result.proofs_failed} / {result.proofs_submitted}",
    )
    t.add_row("throughput", _throughput(result))
    if result.setup_s and not result.dry_run:  # before the first proof: not in s/proof
        t.add_row("setup, before proof 1", f"{result.setup_s:.1f} s")
    m = result.metrics
    if m is not None and not result.dry_run:
        _metric_rows(t, m, measured_host=result.device is None)
    t.add_row("VRAM, profile", escape(vram_and_profile(result)))
    t.add_row("peak VRAM", _peaks(result))
    if result.device in ("real", "dry-run"):  # gpu-run measures no host memory here (0)
        host = f"not measured (gpu-run; {format_size(result.host_budget_bytes)} budget)"
    else:
        host = (
            f"{format_size(result.peak_host_bytes)}/{format_size(result.host_budget_bytes)} budget"
        )
    t.add_row("peak host RAM", host)
    if result.peak_core_demand:
        t.add_row("peak CPU threads asked for", f"{result.peak_core_demand:g}")
    t.add_row("fallbacks taken", str(sum(not e.fatal for e in result.oom_events)))
    if not result.dry_run:  # gpu-run on the GPU: the run's wall time, not simulated
        what = "wall time (measured)" if result.device == "real" else "simulated time"
        t.add_row(what, f"{result.sim_time_s:.1f} s")
    return t


def _metric_rows(t: Table, m: RunMetrics, measured_host: bool = True) -> None:
    """The metrics' rows; `measured_host` False (gpu-run's pipeline): the copy engines'
    shares and the host row say "not measured" (the metrics hold 0 there)."""
    for k in m.kinds:
        spp = (
            "-"
            if k.seconds_per_proof is None or k.proofs_per_hour is None
            else f"{k.seconds_per_proof:.1f} s/proof = {k.proofs_per_hour:.1f}/h"
        )
        t.add_row(
            f"  {escape(k.kind)}",
            f"{k.completed} completed, {k.failed} failed, {spp}; "
            f"latency p50 {_latency(k.latency_p50_s)} s, p95 {_latency(k.latency_p95_s)} s,"
            f" max {_latency(k.latency_max_s)} s",
        )
    t.add_row(
        "GPU utilization", "\n".join(_device_line(d, measured_host) for d in m.devices) or "-"
    )
    t.add_row("mutex wait", f"{m.mutex_wait_s:.1f} s over {m.mutex_waits} waits")
    t.add_row(
        "host",
        f"cores {_pct(m.host_core_utilization)} busy, synthesizers "
        f"{_pct(m.synthesis_busy)} busy, {_pct(m.host_ram_wait)} waiting on RAM"
        if measured_host
        else "not measured (gpu-run times the GPU sections only)",
    )
    name = BOTTLENECK_NAMES[m.bottleneck]
    if m.evidence.startswith(name):  # "nothing saturated (under capacity): ...": not twice
        t.add_row("bottleneck", f"[bold]{name}[/bold]{escape(m.evidence[len(name) :])}")
    else:
        t.add_row("bottleneck", f"[bold]{name}[/bold]: {escape(m.evidence)}")


def _device_line(d: DeviceMetrics, measured_host: bool) -> str:
    if not measured_host:  # gpu-run: the share inside GPU sections, no engine timed
        return (
            f"gpu{d.device} GPU sections {_pct(d.mutex_held)} of the run (compute at most "
            "that: kernels not timed), copy engines not measured"
        )
    return (
        f"gpu{d.device} compute {_pct(d.compute_utilization)}, "
        f"HtoD {_pct(d.copy_utilization['HtoD'])}, "
        f"DtoH {_pct(d.copy_utilization['DtoH'])}, mutex held {_pct(d.mutex_held)}"
    )


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
    for w in result.warnings:  # one line each, on stderr (the table stays parseable)
        typer.echo(f"warning: {w}", err=True)
    console.print(run_table(result))
    if result.fatal_ooms:
        console.print(post_mortem(result.fatal_ooms[0]), markup=False)
    if result.stall:
        console.print(result.stall, markup=False)


def check_table(rows: list[tuple[str, SimResult | None, list[Check], str]]) -> Table:
    t = Table(title="cuzk-sim check")
    width = max((len(name) for name, *_ in rows), default=8)
    t.add_column("scenario", min_width=width, no_wrap=True)  # names are never cut
    for col in ("result", "OOM", "s/proof", "peak VRAM", "expectations"):
        t.add_column(col)
    for name, result, checks, error in rows:
        if result is None:
            t.add_row(escape(name), "[red]ERROR[/red]", "-", "-", "-", escape(error))
            continue
        ok = all(c.passed for c in checks)
        missed = [c for c in checks if c.passed and c.got.endswith("(known miss)")]
        detail = "; ".join(
            f"{escape(c.key)}={escape(c.expected)}"
            + ("" if c.passed else f" [red](got {escape(c.got)})[/red]")
            + (f" [yellow](got {escape(c.got)})[/yellow]" if c in missed else "")
            for c in checks
        )
        verdict = "[green]PASS[/green]" if ok else "[red]FAIL[/red]"
        if ok and missed:  # a stated known miss: passes the check, but says it missed
            verdict = "[yellow]KNOWN MISS[/yellow]"
        t.add_row(
            escape(name),
            verdict,
            "yes" if result.oom else "no",
            _spp(result),
            _peaks(result),
            detail,
        )
    return t
