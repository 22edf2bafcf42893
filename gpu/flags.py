"""The GPU prover's flags: cuzk's variants as flags, not forks (gpu/prover.py runs them).

Each field is one flag; what the flags must not combine is checked in one place,
`ProverFlags.__post_init__`. Every place that builds ProverFlags from outside -- the
scenario's `[plan] gpu_prover` (cuzk_sim/scenario/flags.py), `cuzk-sim gpu-plan`
(cuzk_sim/cli/gpu_plan.py), the benchmarks' `--flag` -- derives its keys or options from
these fields, so a new flag reaches them with no edit there. A field's `help` metadata is
its one-line description in `gpu-plan --help`. Light to import (no numpy): the CLI builds
its options from it at start-up.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from .device import AllocatorName

MsmAlgo = Literal["signed", "unsigned"]
MSM_ALGOS = ("signed", "unsigned")


def _flag(default: Any, help: str) -> Any:
    """A flag's field: its default and its one line of help (`gpu-plan --help`)."""
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class ProverFlags:
    """cuzk's variants as flags (not forks)."""

    # allocate d_a/d_bc and upload a/b/c before taking the lock
    prestage: bool = _flag(False, "Allocate and upload a/b/c before the lock.")
    pinned: bool = _flag(False, "Upload a/b/c and the witness from pinned host memory.")
    free_bc_early: bool = _flag(True, "Free d_bc right after the NTT phase (cuzk's fix).")
    # pre-stage only if free >= bytes + margin (cudaMemGetInfo)
    memory_aware: bool = _flag(
        False, "Pre-stage only if free device memory >= the buffers + the margin."
    )
    margin_bytes: int = _flag(512 << 20, "The memory-aware margin.")
    allocator: AllocatorName = _flag("caching", "Device allocator: caching, async or sync.")
    # upload key points and run each MSM in chunks of this many
    msm_chunk: int | None = _flag(None, "Stream the key's points in chunks of N points.")
    # gpu/msm.py: signed digits, balanced (or the unsigned one)
    msm_algo: MsmAlgo = _flag("signed", "MSM algorithm: signed or unsigned (gpu/msm.py).")
    # the key's points in pinned host memory, pinned once per key (host_key(pk, pinned=True))
    # and kept across partitions, as supraseal keeps the SRS: each upload is a DMA
    key_pinned: bool = _flag(
        False, "The key's points in pinned host memory, kept across partitions."
    )
    # upload each MSM's points on the upload stream while the MSM before it runs (needs
    # key_pinned: a pageable copy does not overlap; the next points are live meanwhile)
    overlap_uploads: bool = _flag(
        False, "Upload each MSM's points beside the MSM before (needs --key-pinned)."
    )
    # the key's points kept on the device across partitions (one cudaMalloc'd buffer per
    # MSM per GPU, filled by the first partition; later ones skip the five key uploads):
    # for cards where the key fits (2^27: 72 GiB). The plan says so: persistent per-device
    # allocs and copies that `fill` them, charged once per device by the model
    key_resident: bool = _flag(
        False, "The key's points kept on the device across partitions (uploaded once per device)."
    )
    # finish each MSM's deferred tail (Horner over its window sums, the affine point) in a
    # helper process while the GPU runs the next MSMs, not after all of them (prove path;
    # the plan is unchanged: the tails are host work outside it, as without the flag)
    overlap_tails: bool = _flag(
        False, "Finish each MSM's tail in a helper process beside the next MSMs (prove path)."
    )
    # each MSM over fixed-base tables 2^(t c) P_i (gpu/msm.py precompute: one bucket set, no
    # Horner doublings) kept on the device across partitions (needs key_resident): the
    # points go up into table 0 of a resident `<stage>.table` (13-14 x the points; no
    # separate points buffer) and `<stage>.table.build` fills the rest, both once per device
    key_tables: bool = _flag(
        False,
        "Each MSM over precomputed bases 2^(t c) P_i kept on the device across partitions "
        "(13 x its points at c = 20; built once per device; needs --key-resident).",
    )
    # each witness MSM (a, b_g1, b_g2, l) split (gpu/msm_split.py): the scalars equal to 1
    # summed by additions, the rest (not 0, not 1) by the signed Pippenger, zeros skipped
    split_msm: bool = _flag(
        False, "Sum the scalars equal to 1 by additions, Pippenger over the rest."
    )
    # device bytes one partition may use: msm_chunk (when not given) becomes the largest
    # power of two whose plan peaks within it (gpu/streaming.py `chunk_for_budget`)
    vram_budget_bytes: int | None = _flag(
        None,
        "Device bytes one partition may use: the MSM chunk follows (with --key-pinned "
        "--overlap-uploads: streamed through a ring of slots as deep as it allows).",
    )

    def __post_init__(self) -> None:
        for f in fields(self):  # every bool flag, a new one included
            if f.type == "bool" and not isinstance(getattr(self, f.name), bool):
                raise ValueError(
                    f"ProverFlags.{f.name} must be true or false, got {getattr(self, f.name)!r}"
                )
        if self.msm_algo not in MSM_ALGOS:
            raise ValueError(
                f"ProverFlags.msm_algo must be one of {MSM_ALGOS}, got {self.msm_algo!r}"
            )
        if self.msm_chunk is not None and (
            not isinstance(self.msm_chunk, int) or self.msm_chunk < 1
        ):
            raise ValueError(f"ProverFlags.msm_chunk must be None or >= 1, got {self.msm_chunk!r}")
        if self.overlap_uploads and not self.key_pinned:
            raise ValueError(
                "ProverFlags.overlap_uploads needs key_pinned=True (a copy from pageable "
                "memory does not run beside the MSMs)"
            )
        if self.vram_budget_bytes is not None and (
            not isinstance(self.vram_budget_bytes, int) or self.vram_budget_bytes < 1
        ):
            got = self.vram_budget_bytes
            raise ValueError(f"ProverFlags.vram_budget_bytes must be None or >= 1, got {got!r}")
        if self.vram_budget_bytes is not None and self.key_resident:
            raise ValueError(
                "ProverFlags.vram_budget_bytes does not combine with key_resident (a resident "
                "key is held whole; a budget streams it in chunks)"
            )
        if self.split_msm and (self.key_tables or self.msm_algo != "signed"):
            raise ValueError(
                "ProverFlags.split_msm needs msm_algo='signed' and no key_tables (the rest "
                "of a split runs the signed Pippenger over plain points)"
            )
        if self.key_resident and self.msm_chunk is not None:
            raise ValueError(
                "ProverFlags.key_resident does not combine with msm_chunk (a resident key is "
                "held whole; chunks stream it through one small buffer)"
            )
        if self.key_tables and not self.key_resident:
            raise ValueError(
                "ProverFlags.key_tables needs key_resident=True (the tables are built once "
                "from the resident key and kept on the device across partitions)"
            )
        if self.key_tables and self.msm_algo != "signed":
            raise ValueError(
                f"ProverFlags.key_tables needs msm_algo='signed', got {self.msm_algo!r} "
                "(precomputed bases are a signed-digit MSM)"
            )
        if self.margin_bytes < 0:
            raise ValueError(f"ProverFlags.margin_bytes must be >= 0, got {self.margin_bytes}")


def with_texts(flags: ProverFlags, texts: Iterable[str]) -> ProverFlags:
    """`flags` with `NAME=VALUE` texts applied (the benchmarks' `--flag`): NAME is a field
    (a `*_bytes` field also by its name without the suffix, as the scenario's key); VALUE
    is true/false, an integer, none, a choice, or for a size field a size text ("14 GiB").
    Derived from the fields: a new flag is accepted with no edit. ValueError names the
    text."""
    by_name = {f.name: f for f in fields(flags)}
    by_name |= {f.name.removesuffix("_bytes"): f for f in fields(flags)}
    changes: dict[str, Any] = {}
    for text in texts:
        name, sep, value = text.partition("=")
        f = by_name.get(name.strip())
        if not sep or f is None:
            known = ", ".join(sorted(f.name for f in fields(flags)))
            raise ValueError(f"--flag {text!r}: expected NAME=VALUE with NAME one of {known}")
        try:
            changes[f.name] = _value(f.name, f.type, value.strip())
        except ValueError as e:
            raise ValueError(f"--flag {text!r}: {e}") from None
    try:
        return replace(flags, **changes)
    except ValueError as e:
        raise ValueError(f"--flag {' '.join(texts)}: {e}") from None


def _value(name: str, type_text: Any, value: str) -> Any:
    from cuzk_sim.units import parse_size

    if value.lower() == "none" and "None" in str(type_text):
        return None
    if type_text == "bool":
        if value.lower() not in ("true", "false"):
            raise ValueError("must be true or false")
        return value.lower() == "true"
    if name.endswith("_bytes"):
        return int(value) if value.lstrip("-").isdigit() else parse_size(value)
    if str(type_text).startswith("int"):
        return int(value)
    return value  # a choice: ProverFlags checks it
