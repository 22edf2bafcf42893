"""`cuzk-sim gpu-plan`: the dry-run plan of our GPU prover for a domain of 2^K (no GPU)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command("gpu-plan")
    def gpu_plan(
        domain_log2: int = typer.Option(..., "--domain-log2", help="Domain size 2^K, 1..31."),
        reduction: str = typer.Option("bellman", help="bellman or snarkjs."),
        prestage: bool = typer.Option(False, help="Allocate and upload a/b/c before the lock."),
        pinned: bool = typer.Option(False, help="Upload from pinned host memory."),
        free_bc_early: bool = typer.Option(True, help="Free d_bc right after the NTT phase."),
        memory_aware: bool = typer.Option(
            False, help="Pre-stage only if free memory >= the buffers + --margin-bytes."
        ),
        margin_bytes: int = typer.Option(512 << 20, help="Memory-aware margin in bytes."),
        assume_free_bytes: int | None = typer.Option(
            None,
            help="Free device bytes the memory-aware check sees (default: enough, so the "
            "plan pre-stages; give less than the buffers + margin to see the fallback).",
        ),
        allocator: str = typer.Option("caching", help="caching, async or sync."),
        msm_chunk: int = typer.Option(0, help="Stream key points in chunks of N (0: all)."),
        key_pinned: bool = typer.Option(
            False, help="The key's points in pinned host memory, kept across partitions."
        ),
        overlap_uploads: bool = typer.Option(
            False, help="Upload each MSM's points beside the MSM before (needs --key-pinned)."
        ),
        key_resident: bool = typer.Option(
            False,
            help="The key's points kept on the device across partitions (uploaded once "
            "per device).",
        ),
        key_tables: bool = typer.Option(
            False,
            help="Each MSM over precomputed bases 2^(t c) P_i kept on the device across "
            "partitions (13 x its points at c = 20; built once per device; needs "
            "--key-resident).",
        ),
        witness: str = typer.Option(
            "dense",
            help="Witness shape (gpu/witness_shape.py): dense, sha256 or porep (query "
            "densities and the share of 0/1 scalars).",
        ),
        split_msm: bool = typer.Option(
            False, help="Sum the scalars equal to 1 by additions, Pippenger over the rest."
        ),
        vram_budget: str | None = typer.Option(
            None,
            help="Device bytes one partition may use (e.g. '14 GiB'): the MSM chunk "
            "follows (with --key-pinned --overlap-uploads: streamed, double-buffered).",
        ),
        as_json: bool = typer.Option(False, "--json", help="Print the plan as JSON."),
    ) -> None:
        """Print the allocation/copy/kernel plan of one partition (dry run, no GPU)."""
        from cuzk_sim.gpu.prover import PartitionShape, ProverFlags, dry_run_plan

        if not 1 <= domain_log2 <= 31:
            raise typer.BadParameter("must be in 1..31", param_hint="--domain-log2")
        if reduction not in ("bellman", "snarkjs"):
            raise typer.BadParameter("must be bellman or snarkjs", param_hint="--reduction")
        if allocator not in ("caching", "async", "sync"):
            raise typer.BadParameter("must be caching, async or sync", param_hint="--allocator")
        if msm_chunk < 0:
            raise typer.BadParameter("must be >= 0", param_hint="--msm-chunk")
        if margin_bytes < 0:
            raise typer.BadParameter("must be >= 0", param_hint="--margin-bytes")
        if assume_free_bytes is not None and assume_free_bytes < 0:
            raise typer.BadParameter("must be >= 0", param_hint="--assume-free-bytes")
        from cuzk_sim.gpu.schedule import overlap_report
        from cuzk_sim.gpu.streaming import plan_peak
        from cuzk_sim.gpu.witness_shape import WITNESS_SHAPES
        from cuzk_sim.units import parse_size

        if witness not in WITNESS_SHAPES:
            raise typer.BadParameter(
                f"must be one of {sorted(WITNESS_SHAPES)}", param_hint="--witness"
            )
        budget = None
        if vram_budget is not None:
            try:
                budget = parse_size(vram_budget)
            except ValueError as e:
                raise typer.BadParameter(str(e), param_hint="--vram-budget") from None
        try:
            flags = ProverFlags(
                prestage,
                pinned,
                free_bc_early,
                memory_aware,
                margin_bytes=margin_bytes,
                allocator=allocator,
                msm_chunk=msm_chunk or None,
                key_pinned=key_pinned,
                overlap_uploads=overlap_uploads,
                key_resident=key_resident,
                key_tables=key_tables,
                split_msm=split_msm,
                vram_budget_bytes=budget,
            )
        except ValueError as e:  # the flags that do not combine (the others checked above)
            hint = "--overlap-uploads"
            for flag in ("vram_budget", "split_msm", "key_tables", "key_resident"):
                if f"ProverFlags.{flag}" in str(e):
                    hint = f"--{flag.replace('_', '-')}"
                    break
            raise typer.BadParameter(str(e), param_hint=hint) from None
        try:
            plan = dry_run_plan(
                PartitionShape.synthetic(domain_log2, reduction, witness), flags, assume_free_bytes
            )
        except ValueError as e:  # too many chunks, tables too large to index, a budget
            hint = "--key-tables" if "precomputed" in str(e) else "--msm-chunk"
            hint = "--vram-budget" if "vram_budget" in str(e) else hint
            raise typer.BadParameter(str(e), param_hint=hint) from None
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
