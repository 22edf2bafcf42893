"""`cuzk-sim validate`: the model's predictions against real runs (docs/validation.md).

Exit codes: 0 every criterion met; 1 a criterion missed; 2 bad input.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cuzk_sim.cli.simulate import EXIT_MISMATCH, _fail_input
from cuzk_sim.io.errors import InputError

if TYPE_CHECKING:
    from cuzk_sim.validation.compare import Criteria


def validate(
    spec: Annotated[Path, typer.Argument(help="Validation spec TOML (scenarios/validation/).")],
    out: Annotated[
        Path, typer.Option("--out", help="Folder for predictions, real runs and the report.")
    ] = Path("validation-out"),
    device: Annotated[
        str,
        typer.Option(
            "--device",
            help="real (the GPU) or dry-run (no GPU: the pipeline on the model's allocator "
            "ledger; its report says dry runs and compares memory only, no timings).",
        ),
    ] = "real",
    only: Annotated[
        str | None, typer.Option("--only", help="Run only configurations matching this glob.")
    ] = None,
    predict_only: Annotated[
        bool, typer.Option("--predict-only", help="Write the predictions and stop.")
    ] = False,
    report_only: Annotated[
        bool, typer.Option("--report-only", help="Rebuild the report from the files in --out.")
    ] = False,
    fresh: Annotated[
        bool, typer.Option("--fresh", help="Predict again and drop earlier real runs in --out.")
    ] = False,
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile",
            help="Price every configuration with this profile (bundled name or TOML, e.g. "
            "one `cuzk-sim calibrate` fitted from gpu-run logs of this card).",
        ),
    ] = None,
) -> None:
    """Predict each configuration's VRAM boundary, run the real pipeline at caps around it,
    compare; resumable (runs already in --out are skipped)."""
    import json

    from cuzk_sim.io.outputs import write_text
    from cuzk_sim.validation.grid import (
        load_predictions,
        pipeline_executor,
        predict,
        run_grid,
        write_report,
    )
    from cuzk_sim.validation.spec import load_spec

    try:
        from cuzk_sim.io.inputs import load_toml
        from cuzk_sim.scenario.files import refuse_other_kind

        if spec.is_file():  # --report-only reports on a folder whose spec file is gone
            refuse_other_kind(load_toml(spec, "validation spec"), str(spec), "validation spec")
        _refuse_unread_options(report_only, predict_only, only, fresh, profile)
        if device not in ("real", "dry-run"):
            raise InputError(f"--device {device!r}: expected real or dry-run")
        if out.exists() and not out.is_dir():
            raise InputError(f"--out {out}: is a file; give a folder")
        if device == "real" and not (report_only or predict_only):
            from cuzk_sim.gpu.backends import gpu_missing

            missing = gpu_missing()
            if missing:
                raise InputError(
                    f"--device real: {missing}; --device dry-run runs without a GPU, "
                    "--predict-only writes the predictions alone"
                )
        if report_only:
            pred = out / "predictions.json"
            if not pred.is_file():
                raise InputError(f"--out {out}: no predictions.json to report on")
            predictions = load_predictions(pred)
            rows, summary = write_report(out, predictions, _spec_criteria(spec, predictions))
        else:
            vspec = load_spec(spec, profile)
            names = [c.name for c in vspec.configs]
            if only is not None and not fnmatch.filter(names, only):  # else a run of nothing
                raise InputError(
                    f"--only {only!r}: matches no configuration of {spec} ({', '.join(names)})"
                )
            if predict_only:
                out.mkdir(parents=True, exist_ok=True)
                write_text(out / "predictions.json", json.dumps(predict(vspec), indent=1))
                typer.echo(f"wrote {out / 'predictions.json'}")
                return
            rows, summary = run_grid(
                vspec, out, pipeline_executor(device), only=only, say=typer.echo, fresh=fresh
            )
    except InputError as e:
        raise _fail_input(e) from None
    typer.echo((out / "report.md").read_text())
    if not all(summary["criteria"].values()):
        raise typer.Exit(EXIT_MISMATCH)


def _refuse_unread_options(report_only, predict_only, only, fresh, profile) -> None:
    """Options the chosen mode would not read: refused (InputError), not ignored."""
    if report_only and predict_only:
        raise InputError("--report-only and --predict-only: give one")
    if report_only:
        given = [o for o, v in (("--only", only), ("--fresh", fresh), ("--profile", profile)) if v]
        if given:
            raise InputError(
                f"{given[0]}: --report-only rebuilds the report from the files in --out; it "
                "predicts and runs nothing"
            )
    if predict_only and only:
        raise InputError("--only: --predict-only predicts every configuration of the spec")


def _spec_criteria(spec: Path, predictions: dict) -> Criteria | None:
    """The criteria of `spec` for a report of its own predictions (criteria registered
    with the predictions come first, in write_report); None when the file is absent or
    is another spec's (the report then says it applied issue 9's defaults)."""
    from cuzk_sim.validation.spec import load_criteria

    if not spec.is_file():
        return None
    name, criteria = load_criteria(spec)
    return criteria if name == predictions["spec"] else None


def register(app: typer.Typer) -> None:
    app.command("validate")(validate)
