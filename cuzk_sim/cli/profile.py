"""`cuzk-sim profile show NAME`: what a calibration profile prices, figure by figure.

Each figure is listed with its basis (measured, fitted, derived, assumed; "unstated"
when the profile does not say) and its source, so a user sees which numbers behind a
prediction were measured on which card, for which prover.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cuzk_sim.input_errors import InputError

profile_app = typer.Typer(
    help="Calibration profiles: what they price and where each figure is from."
)


@profile_app.command("show")
def show(
    name: Annotated[str, typer.Argument(help="A bundled profile (e.g. h200) or a profile TOML.")],
) -> None:
    """Print a profile's card, the prover it prices and every figure with its basis."""
    from cuzk_sim.calibration import PROVER_NAMES, load_profile
    from cuzk_sim.units import format_size

    try:
        p = load_profile(name)
    except InputError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    console = Console(width=140)
    prover = PROVER_NAMES.get(p.prover or "", "not stated (no `prover` key)")
    console.print(f"profile [bold]{escape(p.name)}[/bold] ({escape(p.source)})")
    console.print(f"card:   {escape(p.gpu_model)}, {format_size(p.vram)}")
    console.print(f"prices: {escape(prover)}")
    counts: dict[str, int] = {}
    for f in p.figures:
        counts[f.basis] = counts.get(f.basis, 0) + 1
    console.print(
        "figures: " + ", ".join(f"{n} {b}" for b, n in sorted(counts.items(), key=lambda x: -x[1]))
    )
    t = Table(show_lines=False)
    for col in ("figure", "value", "basis", "source"):
        t.add_column(col, overflow="fold")
    colour = {"measured": "green", "fitted": "cyan", "derived": "blue", "assumed": "yellow"}
    for f in p.figures:
        c = colour.get(f.basis, "red")
        t.add_row(
            escape(f.key),
            escape(f.value),
            f"[{c}]{escape(f.basis)}[/{c}]",
            escape(" ".join(f.source.split())),
        )
    console.print(t)


@profile_app.command("list")
def list_profiles() -> None:
    """The bundled profiles: name, card, prover."""
    from cuzk_sim.calibration import BUNDLED, PROVER_NAMES, load_profile

    for name in BUNDLED:
        p = load_profile(name)
        typer.echo(f"{name:12} {p.gpu_model:32} {PROVER_NAMES.get(p.prover or '', '?')}")


def register(app: typer.Typer) -> None:
    app.add_typer(profile_app, name="profile")
