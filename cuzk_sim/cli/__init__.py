"""The `cuzk-sim` command line.

Each command group lives in its own module with a `register(app)` function; this module
only assembles them, so `cuzk-sim --help` stays fast and never imports CuPy.
"""

from __future__ import annotations

import importlib
import importlib.util

import typer

from cuzk_sim import __version__

app = typer.Typer(
    name="cuzk-sim",
    help="Groth16 oracle, GPU prover and VRAM/throughput simulator for cuzk-style provers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"cuzk-sim {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        help="Print the version and exit.",
        callback=_print_version,
        is_eager=True,
    ),
) -> None:
    """Groth16 oracle, GPU prover and VRAM/throughput simulator for cuzk-style provers."""


# Command modules, in the order their commands appear in --help.
_COMMAND_MODULES = (
    "simulate",
    "sweep",
    "gate",
    "profile",
    "groth16",
    "gpu_plan",
    "gpu_run",
    "capture",
    "validate",
    "logs",
)

for _name in _COMMAND_MODULES:
    if importlib.util.find_spec(f"{__name__}.{_name}") is not None:
        importlib.import_module(f"{__name__}.{_name}").register(app)


def main() -> None:
    from cuzk_sim.source_tree import mixed_trees

    refusal = mixed_trees()
    if refusal is not None:
        typer.echo(f"error: {refusal}", err=True)
        raise SystemExit(2)
    app()
