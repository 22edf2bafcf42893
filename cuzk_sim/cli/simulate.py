"""`cuzk-sim run` and `cuzk-sim check`: simulate scenarios, gate on expectations.

Exit codes: 0 ok; 1 a predicted OOM or stall (`run`) or an expectation mismatch (`check`);
2 bad input (the message names the file, key path and what was expected; for `check`:
any scenario that cannot be loaded, even if others mismatch).
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, TaskID

from cuzk_sim.io.errors import InputError

EXIT_MISMATCH = 1
EXIT_BAD_INPUT = 2


def _fail_input(e: InputError) -> typer.Exit:
    typer.echo(f"error: {e}", err=True)
    return typer.Exit(EXIT_BAD_INPUT)


class ProgressBar:
    """A rich progress bar on stderr, shown only once a run has taken `after_s` of wall
    time (short runs print nothing); use as the `progress` callback of `simulate`."""

    def __init__(self, label: str, after_s: float = 2.0) -> None:
        self.label, self.after_s = label, after_s
        self.started = time.monotonic()
        self.bar: Progress | None = None
        self.task: TaskID | None = None

    def __call__(self, done: float, total: float) -> None:
        if self.bar is None:
            if time.monotonic() - self.started < self.after_s:
                return
            self.bar = Progress(console=Console(stderr=True), transient=True)
            self.bar.start()
            self.task = self.bar.add_task(self.label, total=total)
        assert self.task is not None
        self.bar.update(self.task, completed=done, total=total)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


PLOT_SUFFIXES = (".png", ".pdf", ".svg")


def check_output_path(
    option: str, path: Path, suffixes: tuple[str, ...] = (), inputs: dict | None = None
) -> None:
    """Refuse an output path that cannot be written (a folder, a device, a missing
    folder) or that names an input, before any simulating is done (cuzk_sim.io.outputs)."""
    from cuzk_sim.io.outputs import check_output

    check_output(option, path, inputs, suffixes)


def run(
    scenario: Annotated[Path, typer.Argument(help="Scenario TOML file.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    trace: Annotated[
        Path | None, typer.Option("--trace", help="Write Chrome trace-event JSON.")
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot", help="Write a plot (VRAM by buffer, host RAM, lanes): .png, .pdf or .svg."
        ),
    ] = None,
    window: Annotated[
        str | None,
        typer.Option("--window", help="Plot only this interval of simulated time, e.g. 2h..3h."),
    ] = None,
    trace_window: Annotated[
        str | None,
        typer.Option(
            "--trace-window",
            help="Trace only this interval (with every kernel, copy and lock), e.g. 2h..2.1h.",
        ),
    ] = None,
    overrides: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="Change a scenario key for this run, KEY.PATH=VALUE (repeatable), "
            "e.g. --set hardware.vram='24 GiB' --set engine.gpus.gpu_workers_per_device=1.",
        ),
    ] = None,
    replicas: Annotated[
        int | None,
        typer.Option(
            "--replicas",
            help="Run R replicas under the profile's measured \\[jitter] (or --jitter); "
            "print the OOM probability, the buffers that failed and s/proof percentiles.",
        ),
    ] = None,
    jitter: Annotated[
        str | None,
        typer.Option(
            "--jitter",
            help="Uniform timing noise on every kernel, copy, CPU and arrival duration, "
            "e.g. 5%: overrides the profile's measured \\[jitter].",
        ),
    ] = None,
    log: Annotated[
        Path | None,
        typer.Option("--log", help="Write the run as a cuzk daemon log (docs/logs.md)."),
    ] = None,
) -> None:
    """Simulate one scenario; exit 1 when it predicts an OOM or a deadlock/stall (with
    --replicas: when any replica does). With --replicas, P(OOM) comes with its 95 %
    Wilson interval."""
    from cuzk_sim.api import describe
    from cuzk_sim.results.recording import parse_window
    from cuzk_sim.results.tables import print_run
    from cuzk_sim.scenario import load_scenario
    from cuzk_sim.scenario.overrides import parse_assignment

    if replicas is not None or jitter is not None:
        _run_replicas(
            scenario, as_json, trace, plot, replicas, jitter, overrides, log, window or trace_window
        )
        return
    try:
        _check_windows(window, trace_window, trace, plot)
        _check_run_outputs(scenario, trace, plot, log)
        plot_window = parse_window(window, "--window") if window else None
        detail_window = parse_window(trace_window, "--trace-window") if trace_window else None
        changes = dict(parse_assignment(a) for a in overrides or [])
        scn = load_scenario(scenario, changes or None)
        result, log_result = _simulate_run(scn, trace, plot, log, plot_window, detail_window)
        _check_window_ends(result.sim_time_s, window, plot_window, trace_window, detail_window)
    except InputError as e:
        raise _fail_input(e) from None
    describe(result, scn)  # warnings, profile, card: as the API returns them
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2))
    else:
        print_run(result, Console())
        _print_expected_spp(scn, result.seconds_per_proof)
    try:
        if log:
            from cuzk_sim.logs.from_result import write_scenario_log

            write_scenario_log(log_result, scn, str(log))
        if trace:
            from cuzk_sim.results.run_trace import step_args, write_chrome_trace

            write_chrome_trace(result, str(trace), step_args(scn.plans), detail_window)
        if plot:
            from cuzk_sim.results.run_plot import write_plot

            write_plot(result, str(plot), plot_window)
    except OSError as e:
        raise _fail_input(InputError(f"cannot write output: {e}")) from None
    if result.oom or result.stalled:
        raise typer.Exit(EXIT_MISMATCH)


def _check_windows(window, trace_window, trace, plot) -> None:
    """--window / --trace-window choose what a trace or plot records: refused where
    nothing would read them (InputError), rather than ignored."""
    for option, value in (("--window", window), ("--trace-window", trace_window)):
        if value is not None and trace is None and plot is None:
            raise InputError(f"{option} chooses what --plot or --trace records: give one")


def _check_window_ends(end_s: float, window, plot_window, trace_window, detail_window) -> None:
    """A window that starts after the run ended would draw nothing: InputError."""
    for option, text, win in (
        ("--window", window, plot_window),
        ("--trace-window", trace_window, detail_window),
    ):
        if win is not None and win[0] >= end_s:
            raise InputError(
                f"{option} {text!r}: starts after the run ended ({end_s:.1f} s simulated): "
                "nothing in it to draw"
            )


def _check_run_outputs(
    scenario: Path, trace: Path | None, plot: Path | None, log: Path | None
) -> None:
    """Every output writable, none naming the scenario or another output (InputError)."""
    from cuzk_sim.io.outputs import check_distinct

    inputs = {"SCENARIO": scenario}
    if trace:
        check_output_path("--trace", trace, inputs=inputs)
    if plot:
        check_output_path("--plot", plot, PLOT_SUFFIXES, inputs)
    if log:
        check_output_path("--log", log, inputs=inputs)
    check_distinct({k: p for k, p in (("--trace", trace), ("--plot", plot), ("--log", log)) if p})


def _simulate_run(scn, trace, plot, log, plot_window, detail_window):
    """The run, recorded as its outputs need (a bounded recording for a trace or plot),
    and the result the daemon log is written from (every step recorded)."""
    from cuzk_sim.results.recording import Timeline
    from cuzk_sim.simulate.runner import simulate, simulate_recorded

    bar = ProgressBar(f"simulating {scn.name}") if sys.stderr.isatty() else None
    try:
        if trace or plot:  # a bounded recording, on the fast path
            # detail (every kernel, copy, lock): the trace window, else from the start
            # (or the plot's window) up to the span budget; a plot alone needs only
            # its mutex bars, so it keeps a smaller budget
            detail = detail_window or plot_window or (0.0, math.inf)
            timeline = Timeline(
                window=plot_window or detail_window,
                detail=detail,
                max_detail_spans=100_000 if trace else 20_000,
            )
            result = simulate_recorded(scn, timeline, progress=bar)
        else:
            result = simulate(scn, record=bool(log), progress=bar)
        # the daemon log wants every step: a full recording of its own when it
        # comes with a plot or trace
        log_result = simulate(scn, record=True) if log and (trace or plot) else result
    finally:
        if bar is not None:
            bar.close()
    return result, log_result


def _run_replicas(
    scenario: Path,
    as_json: bool,
    trace: Path | None,
    plot: Path | None,
    replicas: int | None,
    jitter: str | None,
    overrides: list[str] | None = None,
    log: Path | None = None,
    window: str | None = None,
) -> None:
    """`run --replicas R --jitter X%`: R jittered replicas (R = 1 and a trace or plot of
    replica 0 allowed when only --jitter is given); `--set` applies to every replica."""
    from cuzk_sim.api import describe
    from cuzk_sim.results.tables import print_run
    from cuzk_sim.scenario import load_scenario
    from cuzk_sim.scenario.overrides import parse_assignment
    from cuzk_sim.simulate.replicas import parse_fraction, run_replicas
    from cuzk_sim.simulate.runner import simulate

    try:
        # None: the profile's measured [jitter] if it has one (replicas.jitter_choice)
        fraction = parse_fraction(jitter) if jitter is not None else None
        if window is not None:  # the replicas' path records no window: not ignored
            raise InputError("--window/--trace-window: not with --replicas or --jitter")
        if replicas is not None and (trace or plot):
            raise InputError(
                "--trace/--plot record one run: drop --replicas (with --jitter alone, "
                "replica 0 is traced)"
            )
        if trace:
            check_output_path("--trace", trace, inputs={"SCENARIO": scenario})
        if plot:
            check_output_path("--plot", plot, PLOT_SUFFIXES, {"SCENARIO": scenario})
        if log is not None:
            raise InputError("--log writes one run: drop --replicas and --jitter")
        changes = dict(parse_assignment(a) for a in overrides or [])
        scn = load_scenario(scenario, changes or None)
        if replicas is None:  # one jittered run, reported like a plain one
            if trace or plot:
                from cuzk_sim.results.recording import Timeline
                from cuzk_sim.simulate.runner import simulate_recorded

                result = simulate_recorded(scn, Timeline(), jitter=fraction or 0.0)
            else:
                result = simulate(scn, jitter=fraction or 0.0)
            describe(result, scn)
            report = None
        else:
            bar = ProgressBar(f"replicas of {scn.name}") if sys.stderr.isatty() else None
            try:
                report = run_replicas(scn, replicas, fraction, progress=bar)
            finally:
                if bar is not None:
                    bar.close()
    except InputError as e:
        raise _fail_input(e) from None
    if report is None:
        if as_json:
            typer.echo(json.dumps({**result.to_dict(), "jitter": fraction}, indent=2))
        else:
            print_run(result, Console())
            # the table reads as a plain run's: say that these figures carry noise
            typer.echo(
                f"jitter: --jitter {fraction:.1%} uniform on every step and arrival (seed "
                f"{result.seed}): one run with timing noise, not the plain prediction"
            )
            _print_expected_spp(scn, result.seconds_per_proof)
        try:
            if trace:
                from cuzk_sim.results.run_trace import write_chrome_trace

                write_chrome_trace(result, str(trace))
            if plot:
                from cuzk_sim.results.run_plot import write_plot

                write_plot(result, str(plot))
        except OSError as e:
            raise _fail_input(InputError(f"cannot write output: {e}")) from None
        if result.oom or result.stalled:
            raise typer.Exit(EXIT_MISMATCH)
        return
    if as_json:
        typer.echo(json.dumps({"scenario": scn.name, **report.to_json()}, indent=2))
    else:
        for w in report.warnings:  # one line each, on stderr, as a plain run
            typer.echo(f"warning: {w}", err=True)
        _print_replicas(scn.name, report)
    if report.oom_probability > 0 or report.stall_probability > 0:
        raise typer.Exit(EXIT_MISMATCH)


def _print_replicas(name: str, report) -> None:
    from rich.markup import escape

    def secs(v: float | None) -> str:
        return "n/a (no proof completed)" if v is None else f"{v:.3f} s"

    from cuzk_sim.simulate.replicas import format_probability

    console = Console()
    console.print(
        f"{escape(name)}: {report.replicas} replicas, jitter: {escape(report.jitter_source)}",
        highlight=False,
    )
    if report.results:  # the VRAM and the profile the replicas ran with
        from cuzk_sim.results.tables import vram_and_profile

        first = report.results[0]
        first.profile, first.card = report.profile, report.card
        console.print(f"  VRAM, profile      {escape(vram_and_profile(first))}", highlight=False)
    console.print(
        f"  OOM probability    {format_probability(report.ooms, report.replicas)}",
        highlight=False,
    )
    if report.stall_probability:
        stalls = sum(r.stalled for r in report.results)
        console.print(
            f"  stall probability  {format_probability(stalls, report.replicas)}",
            highlight=False,
        )
    for buf, n in report.buffer_counts.items():
        console.print(f"  failed: {escape(buf)} in {n} replicas", highlight=False)
    console.print(f"  s/proof p50        {secs(report.seconds_per_proof_p50)}", highlight=False)
    console.print(f"  s/proof p95        {secs(report.seconds_per_proof_p95)}", highlight=False)


def _print_expected_spp(scn, predicted: float | None) -> None:
    """With an [expect] s/proof range (scenario-from-log writes the observed +-5 %): the
    prediction against its midpoint."""
    from cuzk_sim.io.units import parse_duration

    rng = scn.spec.expect.seconds_per_proof if scn.spec.expect else None
    if rng is None or predicted is None:
        return
    lo, hi = parse_duration(rng[0]), parse_duration(rng[1])
    mid = (lo + hi) / 2
    typer.echo(
        f"predicted {predicted:.2f} s/proof against [expect] {lo:.2f}-{hi:.2f} (midpoint "
        f"{mid:.2f}, {predicted / mid - 1:+.1%})"
    )


def check(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Scenario files or folders (default: scenarios/)."),
    ] = None,
) -> None:
    """Run every scenario that has expectations; print pass/fail; exit 1 on any mismatch,
    2 when a scenario is unusable input (after printing the table)."""
    from cuzk_sim.results.expectations import Check, check_expectations
    from cuzk_sim.results.sim_result import SimResult
    from cuzk_sim.results.tables import check_table
    from cuzk_sim.scenario import load_scenario
    from cuzk_sim.simulate.runner import simulate

    try:
        from cuzk_sim.scenario.files import scenario_files

        files = scenario_files(paths or [Path("scenarios")])
    except InputError as e:
        raise _fail_input(e) from None
    rows: list[tuple[str, SimResult | None, list[Check], str]] = []
    bad = unusable = False
    skipped: list[str] = []
    for f in files:
        try:
            scn = load_scenario(f)
            if scn.spec.expect is None:
                skipped.append(scn.name)
                continue
            result = simulate(scn)  # a step the profile cannot price is an InputError
        except InputError as e:
            rows.append((f.stem, None, [], str(e) if str(e).startswith(str(f)) else f"{f}: {e}"))
            unusable = True
            continue
        checks = check_expectations(scn.spec.expect, result)
        bad |= not all(c.passed for c in checks)
        rows.append((scn.name, result, checks, ""))
    if not rows:
        typer.echo("error: no scenario with expectations found", err=True)
        raise typer.Exit(EXIT_BAD_INPUT)
    console = Console(width=160)
    console.print(check_table(rows))
    if skipped:
        console.print(f"not checked (no \\[expect] table): {escape(', '.join(skipped))}")
    from cuzk_sim.results.tables import post_mortem

    for name, result, checks, _ in rows:  # why an unexpected OOM happened
        if result is not None and result.oom and not all(c.passed for c in checks):
            console.print(f"{name}:\n{post_mortem(result.fatal_ooms[0])}", markup=False)
    if unusable:  # bad input wins, as in `gate`: the table above names the file and key
        raise typer.Exit(EXIT_BAD_INPUT)
    if bad:
        raise typer.Exit(EXIT_MISMATCH)


def with_throughput(doc: str | None) -> str:
    """A command's help with the throughput definition (cuzk_sim.results.sim_result) appended."""
    import inspect

    from cuzk_sim.results.sim_result import THROUGHPUT_DEFINITION

    return f"{inspect.cleandoc(doc or '')}\n\n{THROUGHPUT_DEFINITION}"


def register(app: typer.Typer) -> None:
    app.command("run", help=with_throughput(run.__doc__))(run)
    app.command("check")(check)
