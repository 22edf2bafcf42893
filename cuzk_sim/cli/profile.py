"""`cuzk-sim profile show NAME`: what a calibration profile prices, figure by figure.

Each figure is listed with its basis (measured, fitted, derived, assumed; "unstated"
when the profile does not say) and its source, so a user sees which numbers behind a
prediction were measured on which card, for which prover.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cuzk_sim.io.errors import InputError

profile_app = typer.Typer(
    help="Calibration profiles: what they price and where each figure is from."
)


@profile_app.command("show")
def show(
    name: Annotated[
        str,
        typer.Argument(help="A bundled profile (h200), a card's derived one (rtx4090) or a TOML."),
    ],
) -> None:
    """Print a profile's card, the prover it prices and every figure with its basis."""
    from cuzk_sim.io.units import format_size
    from cuzk_sim.profiles.profile import PROVER_NAMES, load_profile

    try:
        if Path(name).is_file():  # a scenario or spec given by mistake: say which it is
            from cuzk_sim.io.inputs import load_toml
            from cuzk_sim.scenario.files import refuse_other_kind

            refuse_other_kind(load_toml(Path(name), "profile"), name, "calibration profile")
        p = load_profile(name)
    except InputError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    console = Console(width=140)
    prover = PROVER_NAMES.get(p.prover or "", "not stated (no `prover` key)")
    console.print(f"profile [bold]{escape(p.name)}[/bold] ({escape(p.source)})")
    console.print(f"card:   {escape(p.gpu_model)}, {format_size(p.vram)}")
    console.print(f"prices: {escape(prover)}")
    if p.derived_from:
        console.print(
            f"kind:   derived for {escape(p.derived_for or '?')} from {escape(p.derived_from)} "
            "by the card scaling rules (cuzk_sim/profiles/derive.py); no figure measured on it"
        )
    else:
        # not "measured": such a profile mixes measured, fitted, derived and assumed figures
        console.print("kind:   its own card's figures, not derived (each one's basis below)")
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
    """The bundled profiles, then those derived for each card preset: name, card, prover."""
    from cuzk_sim.profiles.cards import derived_profiles
    from cuzk_sim.profiles.profile import BUNDLED, PROVER_NAMES, load_profile

    for name in (*BUNDLED, *derived_profiles()):
        p = load_profile(name)
        kind = f"derived from {p.derived_from}" if p.derived_from else "own card's figures"
        prover = PROVER_NAMES.get(p.prover or "", "?")
        typer.echo(f"{name:18} {p.gpu_model:32} {prover:32} {kind}")


def register(app: typer.Typer) -> None:
    app.add_typer(profile_app, name="profile")
