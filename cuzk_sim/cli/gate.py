"""`cuzk-sim gate`: replay the gate scenarios (our prover's live plan on production-like
setups) and fail the build on an unexpected OOM, a broken expectation, or a throughput
regression against the committed baseline.

Exit codes: 0 pass; 1 a failure (table says which and why); 2 bad input (a scenario or the
baseline cannot be read, a bad --tolerance).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cuzk_sim.input_errors import InputError

EXIT_FAIL = 1
EXIT_BAD_INPUT = 2
DEFAULT_PATHS = [Path("scenarios/gate")]


def _tolerance(text: str) -> float:
    from cuzk_sim.gate import parse_tolerance

    try:
        return parse_tolerance(text)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--tolerance") from None


def _seconds(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


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
    update_baseline: Annotated[
        bool,
        typer.Option(
            "--update-baseline",
            help="Record this run's figures in the baseline (OOMs and expectations still gate).",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the verdicts as JSON.")] = False,
) -> None:
    """Fail on a predicted OOM nobody expected or a seconds-per-proof regression."""
    from cuzk_sim.cli.simulate import check_output_path
    from cuzk_sim.expectations import check_expectations
    from cuzk_sim.gate import BaselineEntry, GateRow, baseline_document, gate_row, load_baseline
    from cuzk_sim.result import SimResult
    from cuzk_sim.runner import simulate
    from cuzk_sim.scenario import load_scenario
    from cuzk_sim.scenario.files import scenario_files

    tol = _tolerance(tolerance)
    try:
        if update_baseline:
            check_output_path("--update-baseline (--baseline)", baseline)
        files = scenario_files(paths or DEFAULT_PATHS)
        entries = {} if update_baseline and not baseline.exists() else load_baseline(baseline)
    except InputError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    if not files:
        typer.echo("error: no scenario files found", err=True)
        raise typer.Exit(EXIT_BAD_INPUT)

    rows: list[GateRow] = []
    ran: dict[str, tuple[str, SimResult]] = {}
    for f in files:
        try:
            scn = load_scenario(f)
            result = simulate(scn)  # a step the profile cannot price is an InputError
        except InputError as e:
            msg = str(e) if str(e).startswith(str(f)) else f"{f}: {e}"
            rows.append(GateRow(f.stem, None, None, None, (), (), msg))
            continue
        if scn.name in ran:  # the baseline is keyed by scenario name
            msg = f"{f}: scenario name {scn.name!r} is also used by {ran[scn.name][0]}"
            rows.append(GateRow(scn.name, None, None, None, (), (), msg))
            continue
        expect = scn.spec.expect
        checks = check_expectations(expect, result) if expect is not None else []
        ran[scn.name] = (str(f), result)
        current = (
            BaselineEntry(result.seconds_per_proof, result.oom, dict(result.peak_vram_bytes))
            if update_baseline
            else entries.get(scn.name)
        )
        expects_oom = expect is not None and expect.oom is True
        rows.append(gate_row(scn.name, result, checks, expects_oom, current, tol))

    errors = any(r.error for r in rows)
    if update_baseline and ran and not errors:  # never record a partial run
        previous = None
        if baseline.exists():
            previous = json.loads(baseline.read_text())
        words = [str(p) for p in paths or DEFAULT_PATHS]
        words += ["--baseline", str(baseline), "--tolerance", tolerance, "--update-baseline"]
        command = "cuzk-sim gate " + " ".join(shlex.quote(w) for w in words)
        doc = baseline_document(ran, previous, command)
        try:
            baseline.write_text(json.dumps(doc, indent=2) + "\n")
        except OSError as e:
            typer.echo(f"error: cannot write the baseline: {e}", err=True)
            raise typer.Exit(EXIT_BAD_INPUT) from None

    if as_json:
        typer.echo(
            json.dumps(
                {
                    "baseline": str(baseline),
                    "tolerance": tol,
                    "updated_baseline": update_baseline,
                    "passed": all(r.passed for r in rows),
                    "rows": [r.to_dict() for r in rows],
                },
                indent=2,
            )
        )
    else:
        console = Console(width=160)
        title = f"cuzk-sim gate (baseline {baseline}, tolerance {tol:.1%})"
        table = Table(title=escape(title))
        for col in ("scenario", "OOM", "baseline s/proof", "now s/proof", "delta", "verdict"):
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
                f"[{style}]{r.verdict}[/]",
            )
        console.print(table)
        from cuzk_sim.report import post_mortem

        for r in rows:
            for line in ((r.error,) if r.error else ()) + r.reasons:
                console.print(f"{escape(r.scenario)}: {escape(line)}", style="red")
            if any(line.startswith("unexpected OOM") for line in r.reasons):
                console.print(escape(post_mortem(ran[r.scenario][1].fatal_ooms[0])))
            for line in r.notes:
                console.print(f"{escape(r.scenario)}: {escape(line)}")
        if update_baseline and ran and not errors:
            console.print(f"baseline written: {escape(str(baseline))}")
        elif update_baseline:
            console.print("baseline NOT written: fix the errors above first", style="red")
    if errors:
        raise typer.Exit(EXIT_BAD_INPUT)
    if not all(r.passed for r in rows):
        raise typer.Exit(EXIT_FAIL)


def register(app: typer.Typer) -> None:
    app.command("gate")(gate)
