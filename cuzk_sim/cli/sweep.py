"""`cuzk-sim sweep SPEC --out DIR`: run every configuration of a sweep spec; a thin layer
over `cuzk_sim.api.sweep`.

Exit codes: 0 the sweep ran (OOMs are results, not failures); 1 some tasks were lost
with their Dask workers (rerun the same command to retry them); 2 bad input (the spec,
its base scenario, an axis, an option: one line naming file, key path or option); 130
interrupted (Ctrl-C): the rows done so far are written, a rerun resumes.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from cuzk_sim.io.errors import InputError

EXIT_LOST = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130  # the shell's code for SIGINT


class _Bar:
    """A rich progress bar with ETA on stderr (only on a terminal)."""

    def __init__(self) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.bar = Progress(
            TextColumn("sweep"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self.task = None

    def __call__(self, done: int, total: int) -> None:
        if self.task is None:
            self.bar.start()
            self.task = self.bar.add_task("sweep", total=total)
        self.bar.update(self.task, completed=done, total=total)

    def close(self) -> None:
        if self.task is not None:
            self.bar.stop()


def sweep(
    spec: Annotated[
        Path, typer.Argument(metavar="SPEC", help="Sweep spec TOML (docs/capacity-planning.md).")
    ],
    out: Annotated[
        Path, typer.Option("--out", help="Output folder (created; a rerun resumes it).")
    ],
    jobs: Annotated[
        int | None, typer.Option("--jobs", help="Local processes (default: all cores).")
    ] = None,
    scheduler: Annotated[
        str | None,
        typer.Option("--scheduler", help="Dask scheduler address, e.g. tcp://host:8786."),
    ] = None,
    replicas: Annotated[
        int, typer.Option("--replicas", help="Seeded runs per configuration (with --jitter).")
    ] = 1,
    jitter: Annotated[
        str, typer.Option("--jitter", help="Timing jitter of the replicas: 5% or 0.05.")
    ] = "0%",
    plots: Annotated[bool, typer.Option("--plots/--no-plots", help="Write the PNGs.")] = True,
) -> None:
    """Run every configuration of a sweep; write results.csv/json, summary.json and plots
    to --out; print the summary. OOMs are results: exit 0."""
    from cuzk_sim.api import load_sweep
    from cuzk_sim.api import sweep as run
    from cuzk_sim.sweep.table import print_summary

    bar = None
    try:
        if jobs is not None and scheduler is not None:
            raise InputError("--jobs and --scheduler: give one (Dask decides its own workers)")
        from cuzk_sim.simulate.replicas import parse_fraction

        fraction = parse_fraction(jitter)
        if replicas >= 2 and fraction == 0:  # R identical runs, reported as "jittered"
            raise InputError(
                f"--replicas {replicas}: needs --jitter X% above 0 (a sweep's replicas take "
                "only --jitter's noise, not a profile's [jitter] as run --replicas does; "
                f"without it they are one run repeated {replicas} times)"
            )
        from cuzk_sim.io.inputs import load_toml
        from cuzk_sim.scenario.files import refuse_other_kind

        refuse_other_kind(load_toml(spec, "sweep spec"), str(spec), "sweep spec")
        spec_obj = load_sweep(spec)
        bar = _Bar() if sys.stderr.isatty() else None
        outcome = run(
            spec_obj,
            out,
            jobs=jobs,
            scheduler=scheduler,
            replicas=replicas,
            jitter=fraction,
            progress=bar,
            plots=plots,
        )
    except InputError as e:
        if bar is not None:
            bar.close()
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    except KeyboardInterrupt:
        if bar is not None:
            bar.close()
        typer.echo(
            f"interrupted: the rows done so far are in {out}; rerun the same command to resume",
            err=True,
        )
        raise typer.Exit(EXIT_INTERRUPTED) from None
    if bar is not None:
        bar.close()
    console = Console(width=max(Console().width, 120))
    for note in outcome.notes:  # rows of the folder that were not trusted
        console.print(f"note: {note}", markup=False, highlight=False)
    print_summary(outcome.summary, console, outcome.resumed, outcome.lost)
    console.print(f"wrote {', '.join(str(p) for p in outcome.files)}")
    if outcome.lost:
        raise typer.Exit(EXIT_LOST)


def register(app: typer.Typer) -> None:
    from cuzk_sim.cli.simulate import with_throughput

    app.command("sweep", help=with_throughput(sweep.__doc__))(sweep)
