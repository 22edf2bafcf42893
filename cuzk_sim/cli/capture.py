"""`cuzk-sim import-nsys` and `cuzk-sim capture`: the plan of a CUDA program we did not
write, from an Nsight Systems export or a CUPTI capture (docs/capture.md).

Both print a summary (peak, buffers by size, streams, time by kernel) and write the plan
with -o; the plan then goes wherever a plan goes (`[plan] file = ...` in a scenario).
Exit codes: 0 = written (or summarized); 2 = unusable input (the file, a window that
is not in the trace, a missing CUPTI or GPU for `capture`, a command that failed).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cuzk_sim.input_errors import InputError

if TYPE_CHECKING:
    from cuzk_sim.capture.trace import Trace

EXIT_BAD_INPUT = 2

OutOpt = Annotated[
    Path | None, typer.Option("-o", "--out", help="Write the plan JSON here (.json).")
]
WindowOpt = Annotated[
    str | None,
    typer.Option(
        "--window",
        help="One partition's work: the NVTX range (or marker) of this name; default: the "
        "whole trace.",
    ),
]
OccurrenceOpt = Annotated[
    int, typer.Option("--occurrence", help="Which occurrence of --window (1 = the first).")
]
SpanOpt = Annotated[
    int | None,
    typer.Option(
        "--span",
        help="One partition's work in a program that marks none: the K-th stretch of "
        "transient device memory (from an allocation while none is live to the free that "
        "leaves none; -1 = the last). Instead of --window.",
    ),
]
PidOpt = Annotated[int | None, typer.Option("--pid", help="The process (when several).")]
DeviceOpt = Annotated[int | None, typer.Option("--device", help="The GPU (when several).")]
NameOpt = Annotated[str | None, typer.Option("--name", help="The plan's name.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")]
TraceOpt = Annotated[
    Path | None,
    typer.Option("--save-trace", help="Also write the trace model (JSON) the plan came from."),
]


def _fail(e: Exception) -> typer.Exit:
    typer.echo(f"error: {e}", err=True)
    return typer.Exit(EXIT_BAD_INPUT)


def _check_out(option: str, path: Path | None) -> None:
    if path is not None:
        from cuzk_sim.cli.simulate import check_output_path

        check_output_path(option, path, (".json",))


def emit(
    trace: Trace,
    out: Path | None,
    window: str | None,
    occurrence: int,
    pid: int | None,
    device: int | None,
    name: str | None,
    as_json: bool,
    save_trace: Path | None,
    span: int | None = None,
) -> None:
    """The shared tail of both commands: trace -> plan, summary, files (all or none)."""
    from cuzk_sim.capture.summary import facts, render
    from cuzk_sim.capture.to_plan import trace_to_plan
    from cuzk_sim.outputs import write_all

    imported = trace_to_plan(trace, pid, device, window, occurrence, name, span)
    files = {}
    if out is not None:
        files[out] = (imported.plan.to_json() + "\n").encode()
    if save_trace is not None:
        files[save_trace] = (json.dumps(trace.to_dict(), indent=1) + "\n").encode()
    try:
        write_all(files)
    except OSError as e:
        raise InputError(f"cannot write {e.filename}: {e.strerror}") from None
    if as_json:
        typer.echo(json.dumps(facts(imported), indent=2))
    else:
        for line in render(imported):
            typer.echo(line)
        if out is not None:
            typer.echo(f"plan written to {out}")


def import_nsys(
    report: Annotated[Path, typer.Argument(help="Nsight Systems SQLite export (.sqlite).")],
    out: OutOpt = None,
    window: WindowOpt = None,
    occurrence: OccurrenceOpt = 1,
    pid: PidOpt = None,
    device: DeviceOpt = None,
    name: NameOpt = None,
    as_json: JsonOpt = False,
    save_trace: TraceOpt = None,
    span: SpanOpt = None,
) -> None:
    """The plan of one process on one GPU from an Nsight Systems export
    (`nsys profile --trace=cuda,nvtx --cuda-memory-usage=true`, then
    `nsys export --type sqlite`)."""
    from cuzk_sim.capture.nsys import read_nsys

    try:
        _check_out("-o", out)
        _check_out("--save-trace", save_trace)
        trace = read_nsys(report)
        emit(trace, out, window, occurrence, pid, device, name, as_json, save_trace, span)
    except InputError as e:
        raise _fail(e) from None


def capture(
    ctx: typer.Context,
    out: OutOpt = None,
    window: WindowOpt = None,
    occurrence: OccurrenceOpt = 1,
    pid: PidOpt = None,
    device: DeviceOpt = None,
    name: NameOpt = None,
    as_json: JsonOpt = False,
    save_trace: TraceOpt = None,
    span: SpanOpt = None,
    via: Annotated[
        str,
        typer.Option(
            "--via",
            help="The recorder: injection (any program; a CUPTI library built at first "
            "use with the system's C compiler), cupti-python (Python programs), or auto "
            "(cupti-python for Python when installed, else injection).",
        ),
    ] = "auto",
) -> None:
    """Run a CUDA program under NVIDIA's CUPTI and write its plan:
    `cuzk-sim capture -o plan.json -- ./prover ARGS` (needs a GPU, and a C compiler and
    CUPTI's headers for the injection library, or cupti-python for a Python program)."""
    from cuzk_sim.capture.cupti_run import run_captured

    try:
        _check_out("-o", out)
        _check_out("--save-trace", save_trace)
        trace = run_captured(list(ctx.args), via)
        emit(trace, out, window, occurrence, pid, device, name, as_json, save_trace, span)
    except InputError as e:
        raise _fail(e) from None


def register(app: typer.Typer) -> None:
    app.command("import-nsys")(import_nsys)
    app.command(
        "capture",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )(capture)
