"""A VRAM budget for one partition (ProverFlags.vram_budget_bytes): the MSM chunk and the
streamed ring's depth follow.

The prover's device bytes peak either in the NTT phase (d_a, d_bc, the tables: fixed by
the domain) or in an MSM (its points chunk -- `depth` slots with streaming -- and its
scratch, which grows with the chunk). The chunk is the largest power of two whose
dry-run plan with the least ring (2 slots: double buffering) peaks within the budget;
then the ring takes what the budget leaves: every slot (points and scalars) is allocated
before the first streamed MSM and freed after the last, so each slot more adds its bytes
to every live total of the streamed phase and to nothing outside it, and the deepest ring
within the budget is 2 + (budget - the streamed phase's peak at 2) // slot bytes, at most
MAX_STREAM_DEPTH (the NTT phase before it is within the budget already).
Every peak is read off the plan the prover itself records, so the budget holds for
exactly what runs (and the model replays).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Iterator
from typing import Any

MIN_BUDGET_CHUNK = 1 << 10  # below this the MSMs' fixed scratch dominates: refuse instead
# slots of the streamed ring at most: at 2^27 (porep, 2^24 chunks) the copies between two
# of msm_h's 8 MSMs are ~6 GiB (36.6 GiB of witness points and scalars / 8, and the next
# H chunk's 1.5): 3-4 slots of 2 GiB; 8 leaves room for smaller chunks, and a deeper ring
# only holds memory the copy engine cannot fill while one MSM runs
MAX_STREAM_DEPTH = 8
MIN_STREAM_DEPTH = 2  # double buffering: one chunk on its way while one is read
FIRST_SLOT = "key_chunk.0"  # live exactly while the ring is (gpu/msm_stages.py)


def plan_peak(plan: Any, within: str | None = None) -> int:
    """Peak of the device bytes live at once along a plan's allocs and frees (a free
    returns what its buffer's latest alloc took: one name may be allocated again with
    another size, as a stage's last, shorter chunk is); `within`: only while that buffer
    is live (the streamed phase: the ring's first slot)."""
    live: dict[str, int] = {}
    total = peak = 0
    for s in plan.steps:
        if s.op == "alloc" and s.memory == "device":
            live[s.buffer] = s.bytes
            total += s.bytes
            if within is None or within in live:
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
    msm_chunk is given); the budget stays, for the ring's depth (`stream_depth`)."""
    if flags.vram_budget_bytes is None or flags.msm_chunk is not None:
        return flags
    chunk = chunk_for_budget(shape, flags)
    if chunk is None:  # the whole MSMs fit: nothing streams, nothing more to decide
        return dataclasses.replace(flags, vram_budget_bytes=None)
    return dataclasses.replace(flags, msm_chunk=chunk)


def slot_bytes(plan: Any) -> int:
    """One slot of the streamed ring in a plan: its points and its scalars."""
    sizes = {s.buffer: s.bytes for s in plan.steps if s.op == "alloc"}
    return sizes.get(FIRST_SLOT, 0) + sizes.get("scalar_chunk.0", 0)


@functools.lru_cache(maxsize=32)
def stream_depth(shape: Any, flags: Any) -> int:
    """Slots of the streamed ring (module docstring): MIN_STREAM_DEPTH without a budget,
    else the most within it, up to MAX_STREAM_DEPTH (flags with msm_chunk set)."""
    if flags.vram_budget_bytes is None:
        return MIN_STREAM_DEPTH
    from .prover import dry_run_plan

    plan = dry_run_plan(shape, dataclasses.replace(flags, vram_budget_bytes=None))
    slot = slot_bytes(plan)
    if not slot:
        return MIN_STREAM_DEPTH
    more = max(0, flags.vram_budget_bytes - plan_peak(plan, within=FIRST_SLOT)) // slot
    return int(min(MAX_STREAM_DEPTH, MIN_STREAM_DEPTH + more))


# The caching pool's bytes beyond the plan's peak that benchmarks/production_bench.py
# allows a budgeted partition: CuPy rounds every block up to 512 bytes (a partition has
# ~100 live at once: 50 KiB), and a freed block split for a smaller buffer is held until
# its whole is free again; 256 MiB is 1/8 of one 2^24 slot of the streamed ring.
POOL_SLACK_BYTES = 256 << 20


def pool_limit(peaks: list[int]) -> int:
    """A limit for CuPy's pool on one GPU, for a measurement (production_bench: is the
    pool's high-water within the plan's peak?): the plan peaks of the partitions run at
    once and POOL_SLACK_BYTES. CuPy's pool (>= 12.2, cupy/cupy#7679), asked beyond its
    limit, frees its idle blocks that are whole cudaMalloc segments and retries, then
    raises OutOfMemoryError: the idle pieces of split segments still count against the
    limit, so a run can fail under it with the card's memory free. The real pipeline's
    runs set no limit (the model's pool has none; grid call 1808: every w1 run with a
    budget failed under it, docs/history/2026-12-03-validation.md, "Grid call 1808's
    memory misses", item 2)."""
    return sum(peaks) + POOL_SLACK_BYTES


@contextlib.contextmanager
def pool_limited(limit: int | None, gpu: int = 0) -> Iterator[None]:
    """CuPy's default pool on `gpu` limited to `limit` bytes for the block (None: as it
    is), its former limit restored after."""
    if limit is None:
        yield
        return
    import cupy

    with cupy.cuda.Device(gpu):
        pool = cupy.get_default_memory_pool()
        before = pool.get_limit()
        pool.set_limit(size=limit)
    try:
        yield
    finally:
        with cupy.cuda.Device(gpu):
            pool.set_limit(size=before)
