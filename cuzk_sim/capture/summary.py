"""What an imported plan holds, for people: peak device memory, the largest buffers with
their lifetimes, streams, time by kernel and by copy direction, and what the trace
lacked or what was dropped (the `gpu-plan` printout's counterpart for a captured plan).
`facts` is the same as data (`import-nsys --json-summary`, tests)."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from cuzk_sim.capture.to_plan import Imported
from cuzk_sim.io.units import format_size
from cuzk_sim.plan.contract import Alloc, Copy, Free, Kernel, Sync

TOP = 10  # buffers and kernels listed


def facts(imp: Imported) -> dict[str, Any]:
    """Peak bytes (device, pinned host), buffers (name, bytes, allocator, alloc step,
    free step or None = kept), per-stream work, kernel time by name, copies by direction."""
    plan = imp.plan
    live = {"device": 0, "host_pinned": 0}
    peak = {"device": 0, "host_pinned": 0}
    sizes: dict[str, tuple[str, int]] = {}
    buffers: list[dict[str, Any]] = []
    streams: dict[str, dict[str, float]] = defaultdict(
        lambda: {"kernels": 0, "copies": 0, "busy_s": 0.0}
    )
    kernels: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    copies: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0.0])
    syncs = 0
    for i, s in enumerate(plan.steps):
        if isinstance(s, Alloc):
            live[s.memory] += s.bytes
            peak[s.memory] = max(peak[s.memory], live[s.memory])
            sizes[s.buffer] = (s.memory, s.bytes)
            alloc = "host_pinned" if s.memory == "host_pinned" else s.allocator
            buffers.append(
                {
                    "name": s.buffer,
                    "bytes": s.bytes,
                    "allocator": alloc,
                    "alloc_step": i,
                    "free_step": None,
                }
            )
        elif isinstance(s, Free) and s.buffer in sizes:
            memory, n = sizes.pop(s.buffer)
            live[memory] -= n
            next(b for b in buffers if b["name"] == s.buffer)["free_step"] = i
        elif isinstance(s, Kernel):
            t = s.seconds or 0.0
            streams[s.stream]["kernels"] += 1
            streams[s.stream]["busy_s"] += t
            kernels[s.name][0] += 1
            kernels[s.name][1] += t
        elif isinstance(s, Copy):
            t = s.seconds or 0.0
            streams[s.stream]["copies"] += 1
            streams[s.stream]["busy_s"] += t
            c = copies[f"{s.direction} {'pinned' if s.pinned else 'pageable'}"]
            c[0], c[1], c[2] = c[0] + 1, c[1] + s.bytes, c[2] + t
        elif isinstance(s, Sync):
            syncs += 1
    t0, t1 = imp.window
    return {
        "plan": plan.name,
        "pid": imp.pid,
        "device": imp.device,
        "window_ns": None if math.isinf(t0) else [t0, t1 if not math.isinf(t1) else None],
        "steps": len(plan.steps),
        "syncs": syncs,
        "peak_device_bytes": peak["device"],
        "peak_pinned_host_bytes": peak["host_pinned"],
        "kept_device_bytes": sum(
            b["bytes"]
            for b in buffers
            if b["free_step"] is None and b["allocator"] != "host_pinned"
        ),
        "buffers": sorted(buffers, key=lambda b: (-b["bytes"], b["alloc_step"])),
        "streams": {k: dict(v) for k, v in streams.items()},
        "default_stream": imp.default_stream,
        "default_stream_known": imp.default_stream_known,
        "kernels": {k: {"count": int(v[0]), "seconds": v[1]} for k, v in kernels.items()},
        "copies": {
            k: {"count": int(v[0]), "bytes": int(v[1]), "seconds": v[2]} for k, v in copies.items()
        },
        "dropped": dict(imp.dropped),
        "missing": list(imp.missing),
        "context_bytes": imp.context_bytes,
    }


def _gib(n: int) -> str:
    return f"{n} ({format_size(n)})"


def render(imp: Imported) -> list[str]:
    """The summary as lines of text."""
    f = facts(imp)
    out = [f"plan {f['plan']!r}: {f['steps']} steps from pid {f['pid']}, gpu {f['device']}"]
    if f["window_ns"] is not None:
        out.append(f"window: {f['window_ns'][0]} ns .. {f['window_ns'][1] or 'end'} ns")
    out.append(f"peak device bytes: {_gib(f['peak_device_bytes'])}")
    if f["kept_device_bytes"]:
        out.append(
            f"of which kept (never freed, persistent in the plan): {_gib(f['kept_device_bytes'])}"
        )
    if f["peak_pinned_host_bytes"]:
        out.append(f"peak page-locked host bytes: {_gib(f['peak_pinned_host_bytes'])}")
    ctx = f["context_bytes"]
    out.append(
        f"CUDA context: {_gib(ctx)}"
        if ctx is not None
        else "CUDA context: not recorded (the scenario's hardware.context_overhead applies)"
    )
    out.append(f"buffers ({len(f['buffers'])}), largest first:")
    for b in f["buffers"][:TOP]:
        until = "kept" if b["free_step"] is None else f"freed at step {b['free_step']}"
        out.append(
            f"  {b['name']:>16} {format_size(b['bytes']):>11} {b['allocator']:>11}  "
            f"step {b['alloc_step']} .. {until}"
        )
    default = f["default_stream"]
    how = "recorded" if f["default_stream_known"] else "assumed: the busiest"
    out.append(f"streams (compute = stream {default}, {how}):")
    for name, s in f["streams"].items():
        out.append(
            f"  {name:>10}: {int(s['kernels'])} kernels, {int(s['copies'])} copies, "
            f"busy {s['busy_s']:.6f} s"
        )
    out.append("time by kernel (measured):")
    for name, k in sorted(f["kernels"].items(), key=lambda kv: -kv[1]["seconds"])[:TOP]:
        out.append(f"  {k['seconds']:12.6f} s  {k['count']:5d} x  {name[:80]}")
    for d, c in sorted(f["copies"].items()):
        out.append(f"copies {d}: {c['count']} x, {format_size(c['bytes'])}, {c['seconds']:.6f} s")
    for reason, n in sorted(f["dropped"].items()):
        out.append(f"dropped or assumed: {reason}: {n}")
    for line in f["missing"]:
        out.append(f"trace lacks: {line}")
    return out
