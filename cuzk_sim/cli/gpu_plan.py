"""`cuzk-sim gpu-plan`: the dry-run plan of our GPU prover for a domain of 2^K (no GPU).

Its prover options are generated from ProverFlags' fields (gpu/flags.py), so a new flag is
an option here with no edit: a bool field is `--name/--no-name`; a `*_bytes` field takes a
size text or a number of bytes, as `--name-bytes` or `--name` (the scenario's key); an
optional count (`int | None`) takes 0 for none; a Literal field one of its values. Each
option's help is the field's `help` metadata.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from typing import Any

import typer

KW = inspect.Parameter.KEYWORD_ONLY
# a size field's option is also its scenario key, the name without the suffix (the rule of
# cuzk_sim/scenario/flags.py, not imported: the scenario package is slow to import and the
# CLI builds these options at every start)
SIZE_SUFFIX = "_bytes"


def _names(f: dataclasses.Field) -> list[str]:
    names = [f"--{f.name.replace('_', '-')}"]
    if f.name.endswith(SIZE_SUFFIX):
        names.insert(0, f"--{f.name.removesuffix(SIZE_SUFFIX).replace('_', '-')}")
    return names


def _flag_option(f: dataclasses.Field, hint: Any) -> inspect.Parameter:
    """The typer option of one ProverFlags field (the module docstring's rule)."""
    help = f.metadata.get("help", f"ProverFlags.{f.name}")
    optional = type(None) in typing.get_args(hint)
    if hint is bool:
        return inspect.Parameter(
            f.name, KW, default=typer.Option(f.default, help=help), annotation=bool
        )
    if f.name.endswith(SIZE_SUFFIX):
        shown = "none" if f.default is None else f"{f.default} B"
        opt = typer.Option(
            None, *_names(f), help=f"{help} A size ('14 GiB') or bytes; default {shown}."
        )
        return inspect.Parameter(f.name, KW, default=opt, annotation=str | None)
    if optional:
        opt = typer.Option(0, *_names(f), help=f"{help} (0: none)")
        return inspect.Parameter(f.name, KW, default=opt, annotation=int)
    if typing.get_origin(hint) is typing.Literal:
        return inspect.Parameter(
            f.name, KW, default=typer.Option(f.default, *_names(f), help=help), annotation=str
        )
    return inspect.Parameter(
        f.name, KW, default=typer.Option(f.default, *_names(f), help=help), annotation=hint
    )


def _flag_fields() -> list[tuple[dataclasses.Field, Any]]:
    from cuzk_sim.gpu.flags import ProverFlags

    hints = typing.get_type_hints(ProverFlags)
    return [(f, hints[f.name]) for f in dataclasses.fields(ProverFlags) if f.init]


def _bytes(f: dataclasses.Field, text: str) -> int:
    from cuzk_sim.io.units import parse_size

    try:
        return int(text) if re.fullmatch(r"-?[0-9]+", text.strip()) else parse_size(text)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="/".join(_names(f))) from None


def flags_from_options(values: dict[str, Any]) -> Any:
    """ProverFlags from the generated options' values; a value ProverFlags refuses is a
    BadParameter naming the option of the flag its message names."""
    from cuzk_sim.gpu.flags import ProverFlags

    kwargs: dict[str, Any] = {}
    fields = _flag_fields()
    for f, hint in fields:
        v = values[f.name]
        if f.name.endswith(SIZE_SUFFIX):
            v = f.default if v is None else _bytes(f, v)
        elif hint is not bool and type(None) in typing.get_args(hint):
            v = v or None  # an optional count: 0 is none
        elif typing.get_origin(hint) is typing.Literal and v not in typing.get_args(hint):
            known = ", ".join(typing.get_args(hint))
            raise typer.BadParameter(f"must be one of {known}", param_hint="/".join(_names(f)))
        kwargs[f.name] = v
    try:
        return ProverFlags(**kwargs)
    except ValueError as e:  # the flags that do not combine, or a value out of range
        named = re.search(r"ProverFlags\.(\w+)", str(e))
        f = next((f for f, _ in fields if named and f.name == named.group(1)), None)
        raise typer.BadParameter(str(e), param_hint="/".join(_names(f)) if f else None) from None


def _refuse_unread(flags: Any, assume_free_bytes: int | None, margin_given: bool) -> None:
    """Options only the memory-aware pre-staging check reads (gpu/prover.py `upload_abc`):
    without `--prestage --memory-aware` the plan would silently be the one without them."""
    if flags.memory_aware and not flags.prestage:
        raise typer.BadParameter(
            "only decides whether to pre-stage a/b/c: add --prestage", param_hint="--memory-aware"
        )
    needs = "needs --prestage --memory-aware (only the memory-aware pre-staging check reads it)"
    if margin_given and not flags.memory_aware:
        raise typer.BadParameter(needs, param_hint="--margin/--margin-bytes")
    if assume_free_bytes is not None and not (flags.prestage and flags.memory_aware):
        raise typer.BadParameter(needs, param_hint="--assume-free-bytes")


def gpu_plan(
    domain_log2: int,
    reduction: str,
    witness: str,
    assume_free_bytes: int | None,
    as_json: bool,
    **flag_values: Any,
) -> None:
    """Print the allocation/copy/kernel plan of one partition (dry run, no GPU)."""
    from cuzk_sim.gpu.prover import PartitionShape, dry_run_plan

    if not 1 <= domain_log2 <= 31:
        raise typer.BadParameter("must be in 1..31", param_hint="--domain-log2")
    if reduction not in ("bellman", "snarkjs"):
        raise typer.BadParameter("must be bellman or snarkjs", param_hint="--reduction")
    if assume_free_bytes is not None and assume_free_bytes < 0:
        raise typer.BadParameter("must be >= 0", param_hint="--assume-free-bytes")
    from cuzk_sim.gpu.witness_shape import WITNESS_SHAPES

    if witness not in WITNESS_SHAPES:
        raise typer.BadParameter(f"must be one of {sorted(WITNESS_SHAPES)}", param_hint="--witness")
    flags = flags_from_options(flag_values)
    _refuse_unread(flags, assume_free_bytes, margin_given=flag_values["margin_bytes"] is not None)
    try:
        shape = PartitionShape.synthetic(domain_log2, reduction, witness)
        plan = dry_run_plan(shape, flags, assume_free_bytes)
    except ValueError as e:  # too many chunks, tables too large to index, a budget
        hint = "--key-tables" if "precomputed" in str(e) else "--msm-chunk"
        hint = "--vram-budget" if "vram_budget" in str(e) else hint
        raise typer.BadParameter(str(e), param_hint=hint) from None
    print_plan(plan, as_json)
    if not as_json and flags.vram_budget_bytes is not None and flags.msm_chunk is None:
        _print_budget_choice(shape, flags)


def _print_budget_choice(shape: Any, flags: Any) -> None:
    """What --vram-budget chose: the plan's meta records the flags as given (msm_chunk
    null), so the text says which chunk and ring the budget set."""
    from cuzk_sim.gpu.msm_stages import streams
    from cuzk_sim.gpu.streaming import resolve_budget, stream_depth

    resolved = resolve_budget(shape, flags)
    chunk = resolved.msm_chunk
    if chunk is None:
        typer.echo("--vram-budget: the whole MSMs fit within it (no chunks)")
        return
    depth = stream_depth(shape, resolved) if streams(resolved) else 0
    ring = f", streamed through a ring of {depth} slots" if depth else ""
    typer.echo(
        f"--vram-budget: MSM chunks of {chunk} points (2^{chunk.bit_length() - 1}), the "
        f"largest power of two whose plan peaks within it{ring}"
    )


def _signature() -> inspect.Signature:
    fixed = [
        inspect.Parameter(
            "domain_log2",
            KW,
            annotation=int,
            default=typer.Option(..., "--domain-log2", help="Domain size 2^K, 1..31."),
        ),
        inspect.Parameter(
            "reduction",
            KW,
            annotation=str,
            default=typer.Option("bellman", help="bellman or snarkjs."),
        ),
        inspect.Parameter(
            "witness",
            KW,
            annotation=str,
            default=typer.Option(
                "dense",
                help="Witness shape (gpu/witness_shape.py): dense, sha256 or porep (query "
                "densities and the share of 0/1 scalars).",
            ),
        ),
        inspect.Parameter(
            "assume_free_bytes",
            KW,
            annotation=int | None,
            default=typer.Option(
                None,
                help="Free device bytes the memory-aware check sees (needs --prestage "
                "--memory-aware; default: enough, so the plan pre-stages; give less than the "
                "buffers + margin to see the fallback).",
            ),
        ),
    ]
    flags = [_flag_option(f, hint) for f, hint in _flag_fields()]
    as_json = inspect.Parameter(
        "as_json",
        KW,
        annotation=bool,
        default=typer.Option(False, "--json", help="Print the plan as JSON."),
    )
    return inspect.Signature([*fixed, *flags, as_json])


def register(app: typer.Typer) -> None:
    def command(**values: Any) -> None:
        gpu_plan(**values)

    sig = _signature()
    command.__signature__ = sig  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in sig.parameters.values()}
    command.__doc__ = gpu_plan.__doc__
    app.command("gpu-plan")(command)


def print_plan(plan: Any, as_json: bool) -> None:
    """The plan as JSON, or its steps, peak and overlaps as text."""
    from cuzk_sim.gpu.schedule import overlap_report
    from cuzk_sim.gpu.streaming import plan_peak

    if as_json:
        typer.echo(plan.to_json())
        return
    for i, step in enumerate(plan.steps):
        detail = {k: v for k, v in step.__dict__.items() if k != "op"}
        typer.echo(f"{i:4d} {step.op:7s} {detail}")
    peak = plan_peak(plan)  # each free returns what its buffer's latest alloc took
    typer.echo(f"peak device bytes: {peak} ({peak / 2**30:.2f} GiB)")
    overlap_report(plan, typer.echo)
    kept = sum(s.bytes for s in plan.steps if s.op == "alloc" and s.persistent and s.per_device)
    if kept:
        typer.echo(
            f"of which kept on the device across partitions (persistent, per device): "
            f"{kept} ({kept / 2**30:.2f} GiB); a card needs at least that much beside "
            "one partition's working memory"
        )
    tables = [s for s in plan.steps if s.op == "alloc" and s.note.startswith("key_tables.")]
    for s in tables:  # key_tables: each MSM's precomputed bases, in place of its points
        pts = next(c.bytes for c in plan.steps if c.op == "copy" and c.fills == s.buffer)
        typer.echo(
            f"precomputed tables {s.buffer}: {s.bytes // max(pts, 1)} x its points "
            f"({pts / 2**30:.2f} GiB) = {s.bytes} ({s.bytes / 2**30:.2f} GiB)"
        )
