"""A VRAM budget for one partition (ProverFlags.vram_budget_bytes): the MSM chunk follows.

The prover's device bytes peak either in the NTT phase (d_a, d_bc, the tables: fixed by
the domain) or in an MSM (its points chunk -- two with streaming, the double buffer --
and its scratch, which grows with the chunk). The chunk is the largest power of two whose
dry-run plan peaks within the budget: the peak is read off the plan the prover itself
records, so the budget holds for exactly what runs (and the model replays).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

MIN_BUDGET_CHUNK = 1 << 10  # below this the MSMs' fixed scratch dominates: refuse instead


def plan_peak(plan: Any) -> int:
    """Peak of the device bytes live at once along a plan's allocs and frees (a free
    returns what its buffer's latest alloc took: one name may be allocated again with
    another size, as a stage's last, shorter chunk is)."""
    live: dict[str, int] = {}
    total = peak = 0
    for s in plan.steps:
        if s.op == "alloc" and s.memory == "device":
            live[s.buffer] = s.bytes
            total += s.bytes
            peak = max(peak, total)
        elif s.op == "free" and s.buffer in live:
            total -= live.pop(s.buffer)
    return peak


@functools.lru_cache(maxsize=32)  # per (shape, flags): a partition asks once per run
def chunk_for_budget(shape: Any, flags: Any) -> int | None:
    """The largest power-of-two msm_chunk whose plan peaks within flags.vram_budget_bytes
    (None: the whole MSMs fit); ValueError naming the budget when even
    MIN_BUDGET_CHUNK does not."""
    from .prover import dry_run_plan

    budget = flags.vram_budget_bytes
    base = dataclasses.replace(flags, vram_budget_bytes=None)
    if plan_peak(dry_run_plan(shape, base)) <= budget:
        return None
    top = max(count for _, count in shape.msm_sizes().values())
    chunk = 1 << max(0, (top - 1).bit_length() - 1)  # the largest power of two below top
    peak, before = 0, None
    while chunk >= MIN_BUDGET_CHUNK:
        peak = plan_peak(dry_run_plan(shape, dataclasses.replace(base, msm_chunk=chunk)))
        if peak <= budget:
            return chunk
        if peak == before:  # the floor: the NTT phase, which no chunk changes
            break
        before, chunk = peak, chunk // 2
    raise ValueError(
        f"ProverFlags.vram_budget_bytes={budget} ({budget / 2**30:.2f} GiB) is below what a "
        f"2^{shape.log_n} partition needs: {peak} bytes ({peak / 2**30:.2f} GiB) with "
        f"{chunk}-point chunks (the NTT phase alone needs its three vectors)"
    )


def resolve_budget(shape: Any, flags: Any) -> Any:
    """`flags` with msm_chunk set from the budget (unchanged without a budget, or when
    msm_chunk is given: the budget then only records what the caller asked for)."""
    if flags.vram_budget_bytes is None or flags.msm_chunk is not None:
        return flags
    chunk = chunk_for_budget(shape, flags)
    return dataclasses.replace(flags, vram_budget_bytes=None, msm_chunk=chunk)
