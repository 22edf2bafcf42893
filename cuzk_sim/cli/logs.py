"""`cuzk-sim logs`, `cuzk-sim calibrate`, `cuzk-sim scenario-from-log`: learn from a
real cuzk daemon log (docs/logs.md).

Exit codes: `logs` 0 = no finding of severity error, 1 = at least one; `calibrate` and
`scenario-from-log` 0 = written; all 2 = bad input (an unreadable log, a bad option, a
base profile that does not load, a log with nothing to calibrate).
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from cuzk_sim.io.errors import InputError
from cuzk_sim.io.outputs import atomic_file, write_checked

EXIT_FINDING = 1
EXIT_BAD_INPUT = 2
KINDS = ("porep", "snapdeals", "window_post", "winning_post")


def _fail(e: InputError) -> typer.Exit:
    typer.echo(f"error: {e}", err=True)
    return typer.Exit(EXIT_BAD_INPUT)


def _out_path(
    option: str, path: Path, suffixes: tuple[str, ...] = (), inputs: dict | None = None
) -> None:
    from cuzk_sim.cli.simulate import check_output_path

    check_output_path(option, path, suffixes, inputs)


def _inputs(paths: list[Path], **more: Path | str | None) -> dict:
    """The command's input files by how they were named (an output must not be one)."""
    out: dict = {f"LOG {p}": p for p in paths}
    out.update({k: v for k, v in more.items() if v is not None})
    return out


def _refuse_no_cuzk_line(counts, files: list[str]) -> None:
    """A log with no line of cuzk's (a wrong file, an empty one) is bad input: it has no
    finding because nothing in it was read, which is no all-clear (exit 0) for CI."""
    if counts.known == 0 and counts.malformed == 0:
        raise InputError(
            f"{', '.join(files)}: no cuzk log line in {counts.lines} lines (none of the "
            "formats docs/logs.md lists: TIMELINE, CUZK_TIMING, tracing lines, ...)"
        )


def _kind(kind: str | None) -> str | None:
    if kind is not None and kind not in KINDS:
        raise InputError(f"--kind {kind}: expected one of {', '.join(KINDS)}")
    return kind


LogsArg = Annotated[list[Path], typer.Argument(help="cuzk daemon log file(s), read in order.")]
KindOpt = Annotated[
    str | None,
    typer.Option("--kind", help="Proof kind of every job (default: from partitions per job)."),
]


def logs(
    paths: LogsArg,
    as_json: Annotated[bool, typer.Option("--json", help="Print the analysis as JSON.")] = False,
    trace: Annotated[
        Path | None, typer.Option("--trace", help="Write Chrome trace-event JSON (Perfetto).")
    ] = None,
    beside: Annotated[
        Path | None,
        typer.Option("--beside", help="A model trace (cuzk-sim run --trace) to put in --trace."),
    ] = None,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Write a worker Gantt plot: .png, .pdf, .svg.")
    ] = None,
    kind: KindOpt = None,
) -> None:
    """Diagnose cuzk daemon logs: per-partition timeline, GPU occupancy, findings.
    Exit 1 when a finding of severity error exists."""
    from cuzk_sim.cli.simulate import PLOT_SUFFIXES
    from cuzk_sim.logs.analyze import analyze_logs
    from cuzk_sim.logs.log_trace import TraceWriter
    from cuzk_sim.logs.report import print_report, to_dict
    from cuzk_sim.logs.timeline import Analyzer

    writer = None
    trace_file = None
    try:
        _kind(kind)
        inputs = _inputs(paths, **{"--beside": beside})
        if trace:
            _out_path("--trace", trace, inputs=inputs)
        if plot:
            _out_path("--plot", plot, PLOT_SUFFIXES, inputs)
        from cuzk_sim.io.outputs import check_distinct

        check_distinct({"--trace": trace, "--plot": plot})
        model = None
        if beside is not None:
            if trace is None:
                raise InputError("--beside needs --trace (the file both traces go into)")
            from cuzk_sim.io.inputs import load_json

            try:  # a regular file, bounded, nesting and numbers checked
                model = load_json(beside, "trace JSON")
            except InputError as e:
                raise InputError(f"--beside: {e}") from None
        analyzer = Analyzer(kind=kind)
        with contextlib.ExitStack() as stack:
            if trace:  # streamed into a temporary, renamed only once whole
                trace_file = stack.enter_context(atomic_file(trace))
                writer = TraceWriter(trace_file, analyzer)
                analyzer.on_close = writer.partition
            a, parser, lines = analyze_logs(paths, analyzer=analyzer)
            _refuse_no_cuzk_line(parser.counts, lines.files)
            if writer is not None:
                writer.findings(a)
                if model is not None:
                    writer.beside(model)
                writer.close()
    except InputError as e:
        raise _fail(e) from None
    except OSError as e:
        raise _fail(InputError(f"cannot write output: {e}")) from None
    if as_json:
        typer.echo(json.dumps(to_dict(a, parser, lines), indent=2))
    else:
        print_report(a, parser, lines, Console(width=160, highlight=False))
    if plot:
        from cuzk_sim.logs.log_plot import write_log_plot

        try:
            write_log_plot(a, str(plot))
        except OSError as e:
            raise _fail(InputError(f"cannot write output: {e}")) from None
    if a.book.errors():
        raise typer.Exit(EXIT_FINDING)


def calibrate(
    paths: LogsArg,
    base: Annotated[str, typer.Option("--base", help="Base profile: bundled name or TOML.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Profile TOML to write.")],
    scenario: Annotated[
        Path | None,
        typer.Option(
            "--scenario",
            help="Take the plans from this scenario (default: the "
            "cuzk plan of the configuration the log ran).",
        ),
    ] = None,
    gpu_model: Annotated[
        str | None,
        typer.Option("--gpu-model", help="The card the log was taken on (default: the base's)."),
    ] = None,
    vram: Annotated[
        str | None, typer.Option("--vram", help="Its VRAM, e.g. '20 GiB' (default: the base's).")
    ] = None,
    kind: KindOpt = None,
) -> None:
    """Fit the profile figures the log measures; keep the base's others, marked as such."""
    from cuzk_sim.logs.analyze import analyze_logs
    from cuzk_sim.logs.calibrate import calibrated_profile
    from cuzk_sim.logs.toml_out import dumps
    from cuzk_sim.profiles.profile import load_profile

    try:
        _kind(kind)
        base_file = base if Path(base).suffix == ".toml" else None
        _out_path("-o", output, (".toml",), _inputs(paths, **{"--base": base_file}))
        if scenario is not None:
            _out_path("-o", output, (".toml",), {"--scenario": scenario})
        base_profile = load_profile(base)
        a, parser, lines = analyze_logs(paths, kind=kind)
        _refuse_no_cuzk_line(parser.counts, lines.files)
        if vram is not None:
            from cuzk_sim.io.units import parse_size

            try:
                parse_size(vram)
            except ValueError as e:
                raise InputError(f"--vram {vram}: {e}") from None
        plans, shapes, prover = _calibration_plans(a, scenario, base_profile.vram)
        names = [str(p) for p in paths]
        doc, fits, notes = calibrated_profile(
            a,
            base,
            plans,
            names,
            output.stem,
            prover=prover,
            shapes=shapes,
            gpu_model=gpu_model,
            vram=vram,
        )
        from cuzk_sim.logs.jitter_fit import jitter_table

        jitter = jitter_table(list(paths), names)  # measured noise per step kind
        if jitter is not None:
            doc["jitter"] = jitter
        else:
            doc.pop("jitter", None)  # the base's noise is not this log's
        text = dumps(
            doc,
            header=f"Profile calibrated by cuzk-sim calibrate from {', '.join(names)}"
            f"\nbase: {base_profile.source}",
        )
        # what we write must load: checked on the staged file before it replaces any
        write_checked(output, text.encode(), lambda staged: load_profile(str(staged)))
    except InputError as e:
        raise _fail(e) from None
    except OSError as e:
        raise _fail(InputError(f"cannot write output: {e}")) from None
    _print_calibration(output, base_profile.name, doc, fits, notes, jitter)
    _print_measured_sizes(fits, base_profile, load_profile(str(output)))


def _calibration_plans(a, scenario: Path | None, vram: int):
    """The plans to fit against: the scenario's (and its shapes; a scenario of our own
    prover names it), else the cuzk plans of the configuration the log ran."""
    from cuzk_sim.logs.calibrate import cuzk_plans
    from cuzk_sim.logs.scenario_out import logged_config

    prover = None
    shapes = None
    if scenario is not None:
        from cuzk_sim.scenario import load_scenario

        scn = load_scenario(scenario)
        plans, shapes = scn.plans, scn.shapes
        if scn.spec.plan is not None and scn.spec.plan.gpu_prover is not None:
            prover = "cuzk_sim.gpu"  # a log of our own prover (gpu-run)
    else:
        plans = cuzk_plans(logged_config(a), vram)
    return plans, shapes, prover


def _source_head(provenance: str) -> str:
    """Where a fitted figure came from, for the table: the provenance after its file list
    (`fitted from FILE: `), up to the first comma or colon outside parentheses, so a
    parenthesised count ("(12 copies of 5 sizes, lines 18, 19, 20)") is never cut."""
    text = provenance.split(": ", 1)[-1]
    depth = 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and ch in ",:;":
            return text[:i]
    return text


def _print_measured_sizes(fits: list, base, fitted) -> None:
    """A kernel's base and fitted time at each size of its points where they differ: the
    table reads them at the profile's size, where a fit from other sizes (the sizes the
    logs measured) changes nothing and reads +0.0 %."""
    rows = []
    for f in fits:
        kind = f.key.removeprefix("kernel.")
        if not f.key.startswith("kernel.") or kind not in base.kernels:
            continue
        for size, _ in f.points:
            was, now = base.kernels[kind].seconds(size), fitted.kernels[kind].seconds(size)
            if size != f.size and abs(now - was) > 1e-12:
                rows.append(
                    f"  {f.key} at {size:,}: {was * 1e3:.3f} ms -> {now * 1e3:.3f} ms "
                    f"({now / was - 1:+.1%})"
                )
    if rows:
        typer.echo("where the fit moved a kernel's time (base -> fitted, at its points):")
        typer.echo("\n".join(rows))


def _print_calibration(
    output: Path, base_name: str, doc: dict, fits: list, notes: list[str], jitter
) -> None:
    """The fitted figures against the base's, the card, the notes and the jitter."""
    console = Console(width=160)
    from rich.table import Table

    t = Table(title=f"{output}: fitted figures (base {base_name})")
    for col in ("figure", "base", "fitted", "change", "samples", "scaling", "from"):
        t.add_column(col, justify="left" if col in ("figure", "scaling", "from") else "right")
    for f in fits:
        unit = (
            (lambda v: f"{v / 2**30:.3f} GiB/s")
            if f.size is None and not f.key.endswith("latency")
            else (lambda v: f"{v * 1e3:.3f} ms")
        )
        t.add_row(
            f.key,
            unit(f.base_s),
            unit(f.fitted_s),
            f"{f.change:+.1%}",
            str(f.samples),
            escape(f.scaling),
            escape(_source_head(f.provenance)),
        )
    console.print(t)
    doc_gpu = doc["gpu"]
    console.print(
        escape(f"card: {doc_gpu['model']}, {doc_gpu['vram']} ({doc_gpu['source'].split(';')[0]})")
    )
    if not fits:
        why = "see the notes" if notes else "the log has none of the lines docs/logs.md lists"
        console.print(f"no figure fitted ({why})")
    for n in notes:
        console.print(escape(f"note: {n}"))
    if jitter is not None:
        from cuzk_sim.profiles.jitter_table import describe, measured_jitter

        console.print(escape(f"[jitter]: {describe(measured_jitter(jitter, str(output)))}"))
    else:
        console.print(escape("[jitter]: none (no CUZK_SIM_STEP lines timed twice in one run)"))
    console.print("every other figure: kept from the base (its `source` says so)")


def scenario_from_log(
    paths: LogsArg,
    output: Annotated[Path, typer.Option("-o", "--output", help="Scenario TOML to write.")],
    profile: Annotated[
        str, typer.Option("--profile", help="Profile the scenario names (e.g. from calibrate).")
    ] = "rtx5070ti",
    vram: Annotated[
        str | None,
        typer.Option("--vram", help="The card's VRAM (the log does not say; default: profile's)."),
    ] = None,
    plan_from: Annotated[
        Path | None,
        typer.Option(
            "--plan-from",
            help="Copy this scenario's \\[plan] table (a log of our own "
            "pipeline: gpu-run; default: the cuzk plan).",
        ),
    ] = None,
    kind: KindOpt = None,
) -> None:
    """Write the scenario the log ran (GPUs, workers, kinds, counts, arrivals, variant)."""
    from cuzk_sim.io.units import parse_size
    from cuzk_sim.logs.analyze import analyze_logs
    from cuzk_sim.logs.scenario_out import logged_config, scenario_doc
    from cuzk_sim.logs.toml_out import dumps
    from cuzk_sim.scenario import load_scenario

    try:
        _kind(kind)
        _out_path("-o", output, (".toml",), _inputs(paths, **{"--plan-from": plan_from}))
        if vram is not None:
            try:
                parse_size(vram)
            except ValueError as e:
                raise InputError(f"--vram {vram}: {e}") from None
        from cuzk_sim.profiles.profile import load_profile

        a, parser, lines = analyze_logs(paths, kind=kind)
        _refuse_no_cuzk_line(parser.counts, lines.files)
        cfg = logged_config(a, load_profile(profile).pce_load)
        prof = profile
        if not Path(profile).is_absolute() and Path(profile).is_file():
            prof = str(Path(profile).resolve())
        doc = scenario_doc(cfg, [str(p) for p in paths], prof, vram, output.stem)
        if plan_from is not None:
            doc["plan"] = plan_table(plan_from)
        text = dumps(doc, header="Written by cuzk-sim scenario-from-log")
        # what we write must load: checked on the staged file before it replaces any
        write_checked(output, text.encode(), load_scenario)
    except InputError as e:
        raise _fail(e) from None
    except OSError as e:
        raise _fail(InputError(f"cannot write output: {e}")) from None
    spp = cfg.observed_spp
    typer.echo(
        f"wrote {output}: {cfg.gpus} GPU(s) x {cfg.workers_per_device} worker(s), "
        f"jobs {cfg.kinds}, variant prestage={cfg.prestage} mutex={cfg.mutex_scope} "
        f"routing={cfg.routing}; observed "
        + (f"{spp:.2f} s/proof ([expect] holds it +-5 %)" if spp else "no s/proof")
    )
    for key, why in cfg.stated.items():
        typer.echo(f"stated: {key}: {why}")
    for key, why in cfg.assumed.items():
        if key == "hardware.vram" and vram:
            continue
        typer.echo(f"assumed: {key}: {why}")
    typer.echo(f"replay: cuzk-sim run {output}    gate: cuzk-sim check {output}")


def plan_table(scenario: Path) -> dict:
    """The [plan] table of a scenario, a plan file's path made absolute."""
    from cuzk_sim.io.inputs import load_toml

    try:  # a regular file, bounded, numbers in range
        raw = load_toml(scenario, "scenario file")
    except InputError as e:
        raise InputError(f"--plan-from: {e}") from None
    plan = raw.get("plan")
    if not isinstance(plan, dict):
        raise InputError(f"--plan-from {scenario}: it has no [plan] table")
    plan = dict(plan)
    if isinstance(plan.get("file"), str) and not Path(plan["file"]).is_absolute():
        plan["file"] = str((scenario.parent / plan["file"]).resolve())
    return plan


def register(app: typer.Typer) -> None:
    app.command("logs")(logs)
    app.command("calibrate")(calibrate)
    app.command("scenario-from-log")(scenario_from_log)
