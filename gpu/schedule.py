"""What a plan's two streams do: the copies on the `key_upload` stream and the kernels
they run beside (ProverFlags.overlap_uploads; streamed chunks with msm_chunk), for
`cuzk-sim gpu-plan`. A copy is overlapped when a kernel is issued after it and before
the `sync key_upload` that waits for it (the model runs it on a copy engine meanwhile)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

UPLOAD_STREAM = "key_upload"


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
    pending: list[tuple[int, bool]] = []  # (bytes, a kernel issued since) per open copy
    for s in plan.steps:
        if s.op == "copy" and getattr(s, "stream", "compute") == UPLOAD_STREAM:
            copies += 1
            total += s.bytes
            pending.append((s.bytes, False))
        elif s.op == "kernel":
            kernels += 1
            pending = [(b, True) for b, _ in pending]
        elif s.op == "sync" and s.stream == UPLOAD_STREAM:
            done += sum(1 for _, k in pending if k)
            done_bytes += sum(b for b, k in pending if k)
            pending = []
    return Overlap(copies, total, done, done_bytes, kernels)


def overlap_report(plan: Any, echo: Callable[[str], None]) -> None:
    """One line per stream, when the plan uses the upload stream."""
    o = overlap(plan)
    if not o.copies:
        return
    echo(
        f"stream {UPLOAD_STREAM}: {o.copies} copies, {o.copy_bytes} bytes "
        f"({o.copy_bytes / 2**30:.2f} GiB); {o.overlapped} of them "
        f"({o.overlapped_bytes / 2**30:.2f} GiB) beside a kernel of the compute stream"
    )
    echo(f"stream compute (legacy default): {o.kernels} kernels")
