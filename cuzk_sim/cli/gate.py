"""`cuzk-sim gate`: replay the gate scenarios (our prover's live plan on production-like
setups) and fail the build on an unexpected OOM, a broken expectation, or a throughput
regression against the committed baseline.

Exit codes: 0 pass; 1 a failure (table says which and why, with the per-buffer plan
changes against the baseline); 2 bad input (a scenario or the baseline cannot be read, a bad
option, an output that cannot be written or two outputs naming one file).
Outputs (the baseline under --update-baseline, --junit) are written whole or not at all.
"""

from __future__ import annotations

import json
import os
import shlex
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cuzk_sim.io.errors import InputError

if TYPE_CHECKING:
    from cuzk_sim.gate.verdicts import GateRow, Recorded

EXIT_FAIL = 1
EXIT_BAD_INPUT = 2
DEFAULT_PATHS = [Path("scenarios/gate")]
DEFAULT_BUFFER_SHARE = "10%"  # docs/simulator.md "The gate" states both defaults
DEFAULT_BUFFER_SIZE = "16 MiB"


def _tolerance(text: str, option: str) -> float:
    from cuzk_sim.gate.verdicts import parse_tolerance

    try:
        value = parse_tolerance(text)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint=option) from None
    if value >= 1 and not text.strip().endswith("%"):  # `--tolerance 5` meant 5 %, surely
        raise typer.BadParameter(
            f"a number without % is a fraction: {text.strip()} is {value:.0%}; write "
            f"'{text.strip()}%' for {text.strip()} percent, or '{value:.0%}' if that is meant",
            param_hint=option,
        )
    return value


def _seconds(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def _annotate_default() -> bool:
    return os.environ.get("GITHUB_ACTIONS", "").lower() == "true"


def gate(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Scenario files or folders, searched recursively (default: scenarios/gate)."
        ),
    ] = None,
    baseline: Annotated[
        Path,
        typer.Option("--baseline", help="Baseline JSON of seconds per proof by scenario."),
    ] = Path("scenarios/gate/baseline.json"),
    tolerance: Annotated[
        str,
        typer.Option("--tolerance", help="Allowed slow-down: '5%' or 0.05."),
    ] = "5%",
    max_vram_growth: Annotated[
        str | None,
        typer.Option(
            "--max-vram-growth",
            help="Fail when a device's peak VRAM grows by more than this against the "
            "baseline ('2%' or 0.02); default: growth is a note, not a failure.",
        ),
    ] = None,
    max_buffer_growth: Annotated[
        str,
        typer.Option(
            "--max-buffer-growth",
            help="Fail when a buffer of the plan grows by more than this share of its "
            "baseline size AND by more than --min-buffer-growth, even when the peak holds "
            "('10%' or 0.1).",
        ),
    ] = DEFAULT_BUFFER_SHARE,
    min_buffer_growth: Annotated[
        str,
        typer.Option(
            "--min-buffer-growth",
            help="The size a buffer must also grow by (or a new buffer exceed) to fail ('16 MiB').",
        ),
    ] = DEFAULT_BUFFER_SIZE,
    update_baseline: Annotated[
        bool,
        typer.Option(
            "--update-baseline",
            help="Record this run's figures in the baseline (OOMs and expectations still "
            "gate; a failing scenario keeps its previous entry).",
        ),
    ] = False,
    junit: Annotated[
        Path | None,
        typer.Option("--junit", help="Also write JUnit XML: one testcase per scenario."),
    ] = None,
    annotations: Annotated[
        bool | None,
        typer.Option(
            "--annotations/--no-annotations",
            help="Print GitHub Actions '::error file=...::' lines for failures "
            "(default: on when GITHUB_ACTIONS=true).",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the verdicts as JSON.")] = False,
) -> None:
    """Fail on a predicted OOM nobody expected or a seconds-per-proof regression."""
    opts = _options(
        paths, baseline, tolerance, max_vram_growth, max_buffer_growth, min_buffer_growth
    )
    opts.update_baseline, opts.junit, opts.as_json = update_baseline, junit, as_json
    opts.annotate = _annotate_default() if annotations is None else annotations
    files, entries, previous = _inputs(opts)
    rows, ran, seconds = _replay(opts, files, entries)
    errors = any(r.error for r in rows)
    written, kept = _write_outputs(opts, rows, ran, seconds, previous, errors)
    _report(opts, rows, ran, written, kept, errors)


@dataclass
class _Options:
    """The gate's options, parsed."""

    paths: list[Path] | None
    baseline: Path
    tolerance: str  # as given (the baseline's command line repeats it)
    tol: float
    vram_growth: float | None
    buffer_share: float
    buffer_size: int
    update_baseline: bool = False
    junit: Path | None = None
    as_json: bool = False
    annotate: bool = False


def _options(
    paths: list[Path] | None,
    baseline: Path,
    tolerance: str,
    max_vram_growth: str | None,
    max_buffer_growth: str,
    min_buffer_growth: str,
) -> _Options:
    """The tolerances parsed (a bad one is a typer.BadParameter naming its option)."""
    tol = _tolerance(tolerance, "--tolerance")
    vram_growth = (
        None if max_vram_growth is None else _tolerance(max_vram_growth, "--max-vram-growth")
    )
    buffer_share = _tolerance(max_buffer_growth, "--max-buffer-growth")
    try:
        from cuzk_sim.io.units import parse_size

        buffer_size = parse_size(min_buffer_growth)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--min-buffer-growth") from None
    return _Options(paths, baseline, tolerance, tol, vram_growth, buffer_share, buffer_size)


def _inputs(opts: _Options) -> tuple[list[Path], dict, dict | None]:
    """The scenario files, the baseline's entries and (for --update-baseline) its document;
    every output checked before any simulating (exit 2 on bad input)."""
    from cuzk_sim.gate.verdicts import load_baseline
    from cuzk_sim.io.inputs import load_json, path_kind
    from cuzk_sim.io.outputs import check_distinct, check_writable
    from cuzk_sim.scenario.files import scenario_files

    baseline, update_baseline = opts.baseline, opts.update_baseline
    try:  # every output checked before any simulating
        outputs: dict[str, Path] = {}
        if update_baseline:
            outputs["--baseline (--update-baseline)"] = baseline
        if opts.junit is not None:
            outputs["--junit"] = opts.junit
        for option, path in outputs.items():
            check_writable(option, path)
        check_distinct(outputs)
        files = scenario_files(opts.paths or DEFAULT_PATHS)
        inputs: dict[str, Path | None] = {f"scenario {f}": f for f in files}
        if not update_baseline:
            inputs["--baseline"] = baseline
        check_distinct(outputs, inputs)  # an output must not replace an input
        fresh = update_baseline and path_kind(baseline, "--baseline") == "missing"
        entries = {} if fresh else load_baseline(baseline)
        previous = load_json(baseline, "baseline file") if update_baseline and entries else None
    except InputError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    if not files:
        typer.echo("error: no scenario files found", err=True)
        raise typer.Exit(EXIT_BAD_INPUT)
    return files, entries, previous


def _replay(
    opts: _Options, files: list[Path], entries: dict
) -> tuple[list[GateRow], dict[str, Recorded], dict[str, float]]:
    """Each scenario simulated and judged: its row, what it recorded, its wall seconds."""
    from cuzk_sim.gate.verdicts import GateRow, Recorded
    from cuzk_sim.scenario import load_scenario
    from cuzk_sim.simulate.runner import simulate

    rows: list[GateRow] = []
    ran: dict[str, Recorded] = {}
    seconds: dict[str, float] = {}
    for f in files:
        started = time.perf_counter()
        try:
            scn = load_scenario(f)
            result = simulate(scn)  # a step the profile cannot price is an InputError
        except InputError as e:
            msg = str(e) if str(e).startswith(str(f)) else f"{f}: {e}"
            rows.append(GateRow(f.stem, None, None, None, (), (), msg, source=str(f)))
            continue
        if scn.name in ran:  # the baseline is keyed by scenario name
            msg = f"{f}: scenario name {scn.name!r} is also used by {ran[scn.name].source}"
            rows.append(GateRow(scn.name, None, None, None, (), (), msg, source=str(f)))
            continue
        row, plans = _judge(opts, scn, result, entries)
        rows.append(replace(row, source=str(f)))
        ran[scn.name] = Recorded(str(f), result, plans, row.passed)
        seconds[scn.name] = time.perf_counter() - started
    return rows, ran, seconds


def _judge(opts: _Options, scn, result, entries: dict) -> tuple[GateRow, dict]:
    """One scenario's row against its baseline entry (this run's figures under
    --update-baseline, the diff that matters then against the old entry), and its plans."""
    from cuzk_sim.gate.verdicts import BaselineEntry, gate_row
    from cuzk_sim.plan.diff import buffer_lives
    from cuzk_sim.results.expectations import check_expectations

    tol, update_baseline = opts.tol, opts.update_baseline
    expect = scn.spec.expect
    checks = check_expectations(expect, result) if expect is not None else []
    plans = {w.kind: scn.plans[w.kind] for w in scn.spec.workload}
    current = (
        BaselineEntry(
            result.seconds_per_proof,
            result.oom,
            dict(result.peak_vram_bytes),
            {k: buffer_lives(p) for k, p in plans.items()},
        )
        if update_baseline
        else entries.get(scn.name)
    )
    expects_oom = expect is not None and expect.oom is True
    row = gate_row(
        scn.name,
        result,
        checks,
        expects_oom,
        current,
        tol,
        plans,
        opts.vram_growth,
        (opts.buffer_share, opts.buffer_size),
    )
    if update_baseline and scn.name in entries and not row.passed:  # the diff that matters
        row = replace(
            row,
            plan_diff=gate_row(
                scn.name, result, checks, expects_oom, entries[scn.name], tol, plans
            ).plan_diff,
        )
    return row, plans


def _write_outputs(
    opts: _Options,
    rows: list[GateRow],
    ran: dict[str, Recorded],
    seconds: dict[str, float],
    previous: dict | None,
    errors: bool,
) -> tuple[list[str], list[str]]:
    """The baseline (--update-baseline, never from a partial run) and the JUnit XML,
    written all or nothing: what was written, and the baseline entries kept."""
    from cuzk_sim.gate.ci_output import junit_xml
    from cuzk_sim.gate.verdicts import baseline_document, baseline_text
    from cuzk_sim.io.outputs import write_all

    baseline, junit = opts.baseline, opts.junit
    written: list[str] = []
    kept: list[str] = []
    files_out: dict[Path, bytes] = {}
    if opts.update_baseline and ran and not errors:  # never record a partial run
        words = [str(p) for p in opts.paths or DEFAULT_PATHS]
        words += ["--baseline", str(baseline), "--tolerance", opts.tolerance, "--update-baseline"]
        command = "cuzk-sim gate " + " ".join(shlex.quote(w) for w in words)
        doc, kept = baseline_document(ran, previous, command)
        files_out[baseline] = baseline_text(doc).encode()
        written.append(f"baseline written: {baseline}")
    if junit is not None:
        files_out[junit] = junit_xml(rows, seconds)
        written.append(f"JUnit XML written: {junit}")
    try:
        write_all(files_out)  # all or nothing; a failed write leaves the old files whole
    except OSError as e:
        typer.echo(f"error: cannot write {e.filename}: {e.strerror or e}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    return written, kept


def _report(
    opts: _Options,
    rows: list[GateRow],
    ran: dict[str, Recorded],
    written: list[str],
    kept: list[str],
    errors: bool,
) -> None:
    """Annotations, then the JSON or the table; exit 2 on bad input, 1 on a failure."""
    from cuzk_sim.gate.ci_output import github_annotations

    if opts.annotate:
        for line in github_annotations(rows):
            typer.echo(line, err=opts.as_json)  # stdout, unless it must stay pure JSON
    if opts.as_json:
        typer.echo(
            json.dumps(
                {
                    "baseline": str(opts.baseline),
                    "tolerance": opts.tol,
                    "max_vram_growth": opts.vram_growth,
                    "max_buffer_growth": opts.buffer_share,
                    "min_buffer_growth_bytes": opts.buffer_size,
                    "updated_baseline": opts.update_baseline and bool(written) and not errors,
                    "kept": kept,
                    "passed": all(r.passed for r in rows),
                    "rows": [r.to_dict() for r in rows],
                },
                indent=2,
            )
        )
    else:
        _print_table(
            rows, ran, opts.baseline, opts.tol, kept, written, opts.update_baseline, errors
        )
    if errors:
        raise typer.Exit(EXIT_BAD_INPUT)
    if not all(r.passed for r in rows):
        raise typer.Exit(EXIT_FAIL)


def _print_table(
    rows: list[GateRow],
    ran: dict[str, Recorded],
    baseline: Path,
    tol: float,
    kept: list[str],
    written: list[str],
    update_baseline: bool,
    errors: bool,
) -> None:
    from cuzk_sim.gate.ci_output import PLAN_DIFF_LINES
    from cuzk_sim.plan.diff import capped
    from cuzk_sim.results.tables import post_mortem

    console = Console(width=160)
    title = f"cuzk-sim gate (baseline {baseline}, tolerance {tol:.1%})"
    table = Table(title=escape(title))
    cols = ("scenario", "OOM", "baseline s/proof", "now s/proof", "delta", "buffers", "verdict")
    for col in cols:
        table.add_column(col, justify="left" if col == "scenario" else "right")
    for r in rows:
        delta = "-" if r.delta is None else f"{r.delta:+.1%}"
        style = "green" if r.passed else "bold red"
        table.add_row(
            escape(r.scenario),
            r.oom or "-",
            _seconds(r.baseline_s),
            _seconds(r.now_s),
            delta,
            f"{len(r.buffers)} grew" if r.buffers else "-",
            f"[{style}]{r.verdict}[/]",
        )
    console.print(table)
    for r in rows:
        for line in ((r.error,) if r.error else ()) + r.reasons:
            console.print(f"{escape(r.scenario)}: {escape(line)}", style="red")
        if any(line.startswith("unexpected OOM") for line in r.reasons):
            console.print(escape(post_mortem(ran[r.scenario].result.fatal_ooms[0])))
        if r.plan_diff and not r.passed:
            console.print(f"{escape(r.scenario)}: plan changes against the baseline:")
            for line in capped(r.plan_diff, PLAN_DIFF_LINES):
                console.print(f"  {escape(line)}")
        for b in r.buffers:
            if b.site:
                console.print(f"{escape(r.scenario)}: {escape(b.family)} is allocated at {b.site}")
        for line in r.notes:
            console.print(f"{escape(r.scenario)}: {escape(line)}")
    for line in kept:
        console.print(escape(line), style="yellow")
    for line in written:
        console.print(escape(line))
    if update_baseline and errors:
        console.print("baseline NOT written: fix the errors above first", style="red")


def register(app: typer.Typer) -> None:
    app.command("gate")(gate)
