"""The CUDA context's size from the injection library's cuMemGetInfo samples.

The library (capture/inject/cuzk_capture.c) writes a `MEMINFO` record (timestamp,
device_id, free, total) after the runtime's allocation, free and first kernel-launch
calls. At such an instant the device's used bytes (total − free) are the context plus
the program's live buffers (each a whole number of 2 MiB granules, as cudaMalloc takes
them) plus whatever other processes hold. So per device

    context = max over samples of (total − free − live buffers, rounded, at that instant)

taking only samples before the first free into the async pool (after it, the pool's
idle bytes are reserved but in no live buffer, and would be counted as context). The
largest sample is the context once lazily loaded kernels are in (CUDA loads a module at
its first launch). Capture on a card nothing else uses: another process's memory would
be counted as this one's context.
"""

from __future__ import annotations

import bisect
from typing import Any

from cuzk_sim.capture.trace import MemEvent

GRANULE = 2 << 20  # cudaMalloc's granule (model/allocator.py CUDA_GRANULE)


def _rounded(n: int) -> int:
    return -(-n // GRANULE) * GRANULE


def context_bytes(records: list[dict[str, Any]], memory: tuple[MemEvent, ...]) -> dict[int, int]:
    """device -> the context's bytes, from the MEMINFO records and the process's memory
    events (one process); {} when there are no samples."""
    samples = [r for r in records if isinstance(r, dict) and r.get("kind") == "MEMINFO"]
    out: dict[int, int] = {}
    for device in sorted({int(r.get("device_id", 0)) for r in samples}):
        events = sorted(
            (e for e in memory if e.device == device and e.memory == "device"),
            key=lambda e: e.t_ns,
        )
        async_frees = [e.t_ns for e in events if e.op == "free" and e.allocator == "async"]
        until = min(async_frees, default=None)
        times = [e.t_ns for e in events]
        live_after: list[int] = []  # live rounded bytes after each event
        live, sizes = 0, {}
        for e in events:
            if e.op == "alloc":
                sizes[e.address] = _rounded(e.bytes)
                live += sizes[e.address]
            else:
                live -= sizes.pop(e.address, 0)
            live_after.append(live)
        best = None
        for r in samples:
            if int(r.get("device_id", 0)) != device:
                continue
            t, free, total = r.get("timestamp"), r.get("free"), r.get("total")
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in (t, free, total)):
                continue
            if until is not None and t >= until:
                continue
            k = bisect.bisect_right(times, t)
            held = live_after[k - 1] if k else 0
            est = total - free - held
            best = est if best is None else max(best, est)
        if best is not None and best > 0:
            out[device] = best
    return out
