"""The five MSMs of a partition (msm_h, msm_a, msm_b_g1, msm_b_g2, msm_l) and how the key's
points reach them: whole, in chunks through one buffer, ahead on the upload stream, resident,
or streamed (ProverFlags.msm_chunk with overlap_uploads): chunks of every stage in one
sequence (msm_h's spread among the others': `interleaved`; G2's chunks half the points of
G1's, so every chunk's points take the same bytes) through a ring of `depth` slots (2 at
least; more as the VRAM budget allows: gpu/streaming.py `stream_depth`), chunks i + 1 ..
i + depth - 1 on their way on the upload streams while chunk i's MSM runs: the copy into
a slot is queued after the MSM that last read it, slot k's copies go on stream
`key_upload.k` and each MSM waits for its own slot with `sync key_upload.k` (in a run the
slots' streams share one CUDA stream, in order, as the model's one HtoD copy engine).
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

from . import encoding
from .blinding import scale_g1
from .device import Buffer, Device
from .msm import POINT_WORDS, SignedShape, WindowSums, msm
from .msm_split import msm_split
from .msm_tables import build_table
from .scalars import Scalars
from .schedule import slot_stream
from .streaming import stream_depth

SPLIT_STAGES = ("msm_a", "msm_b_g1", "msm_b_g2", "msm_l")  # witness scalars; H's are not
FR_BYTES = 32


@dataclass(frozen=True)
class Chunk:
    stage: str
    group: str
    start: int
    count: int


def interleaved(seq: list[Chunk]) -> list[Chunk]:
    """msm_h's chunks spread among the others': H's MSMs (random scalars) are compute-bound
    and the witness MSMs (mostly 0/1 scalars, split) upload-bound, so alternating them
    keeps the copy engine busy beside H's MSMs instead of idle until they end."""
    h = [c for c in seq if c.stage == "msm_h"]
    rest = [c for c in seq if c.stage != "msm_h"]
    if not h or not rest:
        return seq
    out: list[Chunk] = []
    for j, c in enumerate(h):
        out.append(c)
        out += rest[round(j * len(rest) / len(h)) : round((j + 1) * len(rest) / len(h))]
    return out


def chunks(shape: Any, chunk: int | None, by_bytes: bool = False) -> list[Chunk]:
    """Every stage's chunks in order (one chunk of all its points without `chunk`);
    `by_bytes`: G2's chunks of chunk / 2 points, the bytes of `chunk` G1 points."""
    out = []
    for stage, (group, count) in shape.msm_sizes().items():
        step = chunk
        if chunk and by_bytes:
            step = max(1, chunk * POINT_WORDS["g1"] // POINT_WORDS[group])
        step = min(count, step) if step else count
        for start in range(0, count, step) if count else [0]:
            out.append(Chunk(stage, group, start, min(step, count - start)))
    return out


def _run_msm(
    dev: Device,
    shape: Any,
    flags: Any,
    part: Chunk,
    d_p: Buffer,
    scalars: Scalars,
    table: Buffer | None,
) -> list[Any]:
    """One chunk's MSM: its partial results (two with the split: ones, rest)."""
    buf, offset = scalars.acquire(part.stage)
    return _chunk_msm(dev, shape, flags, part, d_p, buf, offset + 8 * part.start, table)


def _chunk_msm(
    dev: Device,
    shape: Any,
    flags: Any,
    part: Chunk,
    d_p: Buffer,
    buf: Buffer,
    offset: int,
    table: Buffer | None,
) -> list[Any]:
    if flags.split_msm and part.stage in SPLIT_STAGES:
        expected = shape.witness_shape().split(part.count)
        return msm_split(dev, part.stage, part.group, d_p, buf, part.count, offset, expected)
    return [
        msm(
            dev,
            part.stage,
            part.group,
            d_p,
            buf,
            part.count,
            offset,
            algo=flags.msm_algo,
            table=table,
            defer=True,
            expect=expected_scalars(shape, part.stage, part.count),
        )
    ]


def expected_scalars(shape: Any, stage: str, n: int) -> tuple[int, int] | None:
    """(zeros, ones) the plan expects among the n scalars of a witness MSM's chunk (the
    witness shape's `split`); None for H's (random: the quotient's coefficients) and for
    the dense shape (all random), so that their steps read as before."""
    ws = shape.witness_shape()
    if stage not in SPLIT_STAGES or ws.bit_fraction == 0.0:
        return None
    zeros, ones, _ = ws.split(n)
    return zeros, ones


def _collect(
    parts: list[Any],
    stage: str,
    tails: Executor | None,
    scale: Mapping[str, int] | None,
) -> list[Any]:
    if tails is None:
        return parts
    k = (scale or {}).get(stage)
    return [tails.submit(finish_tail, p, k) if isinstance(p, WindowSums) else p for p in parts]


def finish_tail(sums: WindowSums, k: int | None = None) -> Any:
    """A deferred MSM's result: the Horner over its window sums, as affine limbs (what
    `tail_pool` runs in its process); with k, (those limbs, k times the point as a py_ecc
    point: gpu/blinding.py)."""
    limbs = sums.point()
    if k is None:
        return limbs
    return limbs, scale_g1(encoding.g1_from_limbs(limbs), k)


def run_msms(
    dev: Device,
    shape: Any,
    flags: Any,
    data: Any,
    scalars: Scalars,
    tails: Executor | None = None,
    scale: Mapping[str, int] | None = None,
) -> dict[str, list[Any]]:
    """Every MSM of the partition; per stage, its chunks' partial results."""
    return _staged(dev, shape, flags, data, scalars, tails, scale)


def streams(flags: Any) -> bool:
    """Whether the MSMs stream the key in chunks through a ring of slots (`run_streamed`)."""
    return bool(flags.msm_chunk and flags.overlap_uploads)


def run_streamed(
    dev: Device,
    shape: Any,
    flags: Any,
    data: Any,
    d_a: Buffer,
    tails: Executor | None = None,
    scale: Mapping[str, int] | None = None,
) -> dict[str, list[Any]]:
    """Every MSM, streamed (`streams(flags)`); frees d_a once msm_h is done."""
    return _streamed(dev, shape, flags, data, d_a, tails, scale)


def _streamed(
    dev: Device,
    shape: Any,
    flags: Any,
    data: Any,
    d_a: Buffer,
    tails: Executor | None,
    scale: Mapping[str, int] | None,
) -> dict[str, list[Any]]:
    """Chunks of every stage through a ring of `stream_depth` slots, the next depth - 1
    chunks' points and witness scalars on their way on the slots' upload streams while
    one MSM runs (module docstring); no whole witness on the device, and d_a (H's
    scalars) freed after msm_h."""
    seq = interleaved(chunks(shape, flags.msm_chunk, by_bytes=True))
    depth = stream_depth(shape, flags)
    size = max(4 * POINT_WORDS[c.group] * c.count for c in seq)
    bufs = [dev.alloc(f"key_chunk.{k}", size) for k in range(depth)]
    most = max(c.count for c in seq if c.stage != "msm_h") if len(shape.msm_sizes()) > 1 else 1
    sbufs = [dev.alloc(f"scalar_chunk.{k}", FR_BYTES * max(1, most)) for k in range(depth)]
    results: dict[str, list[Any]] = {stage: [] for stage in shape.msm_sizes()}

    def upload(i: int) -> None:
        c, k = seq[i], i % depth
        host = data.key_points[c.stage][c.start : c.start + c.count] if data else None
        dev.copy_htod(
            f"upload_{c.stage}_points",
            bufs[k],
            host,
            4 * POINT_WORDS[c.group] * c.count,
            pinned=flags.key_pinned,
            stream=slot_stream(k),
            concurrent=True,
        )
        if c.stage == "msm_h":
            return
        dev.copy_htod(
            f"upload_{c.stage}_scalars",
            sbufs[k],
            _host_scalars(shape, data, c) if data else None,
            FR_BYTES * c.count,
            pinned=flags.pinned,
            stream=slot_stream(k),
            concurrent=True,
        )

    for i in range(min(depth - 1, len(seq))):
        upload(i)
    for i, c in enumerate(seq):
        if i + depth - 1 < len(seq):  # into the slot MSM i - 1 read, queued after it
            upload(i + depth - 1)
        dev.sync(slot_stream(i % depth))  # chunk i is on the device
        buf, offset = (d_a, 8 * c.start) if c.stage == "msm_h" else (sbufs[i % depth], 0)
        parts = _chunk_msm(dev, shape, flags, c, bufs[i % depth], buf, offset, None)
        results[c.stage] += _collect(parts, c.stage, tails, scale)
        if c.stage == "msm_h" and all(later.stage != "msm_h" for later in seq[i + 1 :]):
            dev.free("d_a")  # H's scalars: no later MSM reads them
    for k in reversed(range(depth)):
        dev.free(f"scalar_chunk.{k}")
    for k in reversed(range(depth)):
        dev.free(f"key_chunk.{k}")
    return results


def _host_scalars(shape: Any, data: Any, c: Chunk) -> Any:
    """Chunk c's witness scalars on the host: the gathered ones of a query that leaves
    variables out, else the witness (L: from its aux part)."""
    q = {"msm_a": "a", "msm_b_g1": "b", "msm_b_g2": "b"}.get(c.stage)
    if q is not None and q in data.scalars:
        src, first = data.scalars[q], 0
    else:
        src, first = data.witness, (shape.num_public + 1 if c.stage == "msm_l" else 0)
    return src[first + c.start : first + c.start + c.count]


def _staged(
    dev: Device,
    shape: Any,
    flags: Any,
    data: Any,
    scalars: Scalars,
    tails: Executor | None,
    scale: Mapping[str, int] | None,
) -> dict[str, list[Any]]:
    """Stage by stage: each stage's points whole (ahead on the upload stream with
    overlap_uploads, kept on the device with key_resident) or in chunks through one buffer."""
    stages = list(shape.msm_sizes().items())
    ahead: dict[str, Any] = {}  # overlap_uploads: the next stage's points, on their way
    results: dict[str, list[Any]] = {}

    def points_buffer(stage: str, nbytes: int) -> Any:
        """Stage's points buffer: a fresh one, or with key_resident the one kept on this
        GPU across partitions for this key (whose upload then `fills` it once); with
        key_tables the stage's resident tables, whose table 0 the points go to."""
        if not flags.key_resident:
            return dev.alloc(f"{stage}.points", nbytes)
        owner = data.key_points[stage] if data else None
        if flags.key_tables:
            group, count = shape.msm_sizes()[stage]
            table = SignedShape.of(group, count, precomputed=True).table_bytes()
            return dev.resident(f"{stage}.table", table, owner, note=f"key_tables.{stage}")
        return dev.resident(f"{stage}.points", nbytes, owner, note=f"key_resident.{stage}")

    def fills(stage: str) -> str | None:
        if not flags.key_resident:
            return None
        return f"{stage}.table" if flags.key_tables else f"{stage}.points"

    def upload_ahead(i: int) -> None:
        """Allocate stage i's points and start their upload on the key_upload stream, so
        that it runs beside the MSM issued next (the whole key, no chunks)."""
        stage, (group, count) = stages[i]
        nbytes = 4 * POINT_WORDS[group] * count
        ahead[stage] = points_buffer(stage, nbytes)
        host = data.key_points[stage] if data else None
        dev.copy_htod(
            f"upload_{stage}_points",
            ahead[stage],
            host,
            nbytes,
            pinned=flags.key_pinned,
            stream="key_upload",
            concurrent=True,
            fills=fills(stage),
        )
        scalars.ahead(stage, "key_upload")  # its scalars too (gpu/scalars.py)

    for i, (stage, (group, count)) in enumerate(stages):
        # the key's points go up in chunks of at most msm_chunk (one buffer, reused)
        chunk = min(count, flags.msm_chunk) if flags.msm_chunk else count
        words = POINT_WORDS[group]
        arrived = stage in ahead
        if arrived:
            dev.sync("key_upload")
            d_p = ahead.pop(stage)
        else:
            d_p = points_buffer(stage, 4 * words * chunk)
        partials: list[Any] = []
        for start in range(0, count, chunk) if count else [0]:
            m = min(chunk, count - start)
            host = data.key_points[stage][start : start + m] if data else None
            if not arrived:
                dev.copy_htod(
                    f"upload_{stage}_points",
                    d_p,
                    host,
                    4 * words * m,
                    pinned=flags.key_pinned,
                    fills=fills(stage),
                )
            if flags.key_tables:  # tables 1.. from table 0, once per device
                build_table(dev, f"{stage}.table.build", group, d_p, d_p, m, fills(stage))
            if flags.overlap_uploads and i + 1 < len(stages):
                upload_ahead(i + 1)
            table = d_p if flags.key_tables else None
            parts = _run_msm(dev, shape, flags, Chunk(stage, group, start, m), d_p, scalars, table)
            partials += _collect(parts, stage, tails, scale)
        results[stage] = partials
        scalars.release(stage)
        if not flags.key_resident:
            dev.free(f"{stage}.points")
    return results
