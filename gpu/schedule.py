"""What a plan's upload streams do: the copies on the `key_upload` stream (whole stages
ahead, ProverFlags.overlap_uploads) or on the streamed slots' `key_upload.k` (msm_chunk
with overlap_uploads: gpu/msm_stages.py) and the kernels they run beside, for
`cuzk-sim gpu-plan`. A copy is overlapped when a kernel is issued after it and before
the `sync` of its stream that waits for it (the model runs it on a copy engine meanwhile)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

UPLOAD_STREAM = "key_upload"


def slot_stream(k: int) -> str:
    """The upload stream of streamed slot k (each MSM waits for its own slot's copies)."""
    return f"{UPLOAD_STREAM}.{k}"


def gpu_streams(overlap_uploads: bool, depth: int = 0) -> str:
    """The plan's meta `gpu_stream`: the legacy default stream, then the streams whose
    copies the model runs on the copy engines beside it (the model's engine.py)."""
    if not overlap_uploads:
        return "legacy_default"
    return "+".join(["legacy_default", UPLOAD_STREAM, *(slot_stream(k) for k in range(depth))])


def is_upload(stream: str) -> bool:
    return stream == UPLOAD_STREAM or stream.startswith(UPLOAD_STREAM + ".")


@dataclass(frozen=True)
class Overlap:
    copies: int  # on the upload stream
    copy_bytes: int
    overlapped: int  # of them with a kernel issued before the sync that waits for them
    overlapped_bytes: int
    kernels: int  # on the compute stream


def overlap(plan: Any) -> Overlap:
    """The upload stream's copies and how many run beside a kernel (module docstring)."""
    copies = kernels = done = done_bytes = total = 0
    # per upload stream, (bytes, a kernel issued since) per open copy
    pending: dict[str, list[tuple[int, bool]]] = {}
    for s in plan.steps:
        if s.op == "copy" and is_upload(getattr(s, "stream", "compute")):
            copies += 1
            total += s.bytes
            pending.setdefault(s.stream, []).append((s.bytes, False))
        elif s.op == "kernel":
            kernels += 1
            pending = {n: [(b, True) for b, _ in p] for n, p in pending.items()}
        elif s.op == "sync" and is_upload(s.stream):
            closed = pending.pop(s.stream, [])
            done += sum(1 for _, k in closed if k)
            done_bytes += sum(b for b, k in closed if k)
    return Overlap(copies, total, done, done_bytes, kernels)


def overlap_report(plan: Any, echo: Callable[[str], None]) -> None:
    """One line per stream, when the plan uses the upload stream."""
    o = overlap(plan)
    if not o.copies:
        return
    slots = sorted({s.stream for s in plan.steps if s.op == "sync" and is_upload(s.stream)})
    ring = slots not in ([], [UPLOAD_STREAM])
    name = f"{UPLOAD_STREAM}.0-{len(slots) - 1}" if ring else UPLOAD_STREAM
    echo(
        f"stream {name}: {o.copies} copies, {o.copy_bytes} bytes "
        f"({o.copy_bytes / 2**30:.2f} GiB); {o.overlapped} of them "
        f"({o.overlapped_bytes / 2**30:.2f} GiB) beside a kernel of the compute stream"
    )
    echo(f"stream compute (legacy default): {o.kernels} kernels")
