"""From a recorded trace to the steps of our plan language.

One process on one device becomes one worker's plan, in host program order (each event
at the time the host issued it). The mapping:

- an allocation -> `alloc` (allocator from the API: cudaMalloc `sync`, cudaMallocAsync
  `async`; an unknown API is taken as `sync` and counted), page-locked host memory ->
  `alloc` with `memory = "host_pinned"`; a free -> `free` of the buffer at that address;
  buffers are named by allocation order and size (`d3_64MiB`, `h0_2GiB`): the prover's
  own names are not in a trace, but sizes, order and lifetimes are exact. A buffer
  still live at the end of the window is `persistent` (kept across partitions: the plan
  never frees it); one live when the window opens is allocated at its start;
- a kernel -> `kernel` of kind `captured`, a memset -> `kernel` of kind `memset`, each
  with its measured `seconds`; a copy -> `copy` (HtoD / DtoH / DtoD, a peer copy as
  DtoD; pinned when its host side is page-locked) with its measured `seconds`;
- the process's default stream is the plan's `compute` stream; any other stream is
  named `s<id>` (work on it runs beside the worker until a `sync` on it);
- a stream sync -> `sync` of that stream; a context sync, and an event sync whose
  stream is unknown, -> `sync` of every stream used so far; a stream-wait-event (a
  device-side dependency) is dropped and counted; the plan ends with a `sync` of every
  named stream (a process's work is done when it exits).

A window picks one partition's repeated work: (`window`, `occurrence`) the K-th NVTX
range of that name, or from the K-th marker of that name to the next one (or the end);
or (`span`) the K-th stretch of transient device memory, for a program that marks
nothing: from an allocation made while none of the process's transient device buffers is
live to the free that leaves none (a buffer never freed in the trace is not transient: a
key or cache held for the whole run does not join every partition into one span; K < 0
counts from the end). Our prover's partitions are such spans (each allocates and frees
its own buffers), so is its key generation and its warm-up partition before them.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from cuzk_sim.capture.trace import MemEvent, Trace, TraceError
from cuzk_sim.plan import Alloc, Copy, Free, Kernel, Plan, Step, Sync
from cuzk_sim.plan_json import MAX_STEPS

MAX_NAME = 200  # a kernel's demangled name can be long; the plan's names stop at 256
CAPTURED_KIND = "captured"


@dataclass(frozen=True)
class Imported:
    """A plan made from a trace, with what the summary says about how."""

    plan: Plan
    pid: int
    device: int
    window: tuple[float, float]  # ns; (-inf, inf) for the whole trace
    default_stream: int | None
    default_stream_known: bool
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> events
    missing: tuple[str, ...] = ()
    context_bytes: int | None = None


def size_tag(n: int) -> str:
    """64 MiB -> `64MiB`, 3 KiB -> `3KiB`, else bytes: a buffer name's size part."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return f"{n}B"


def _choose(what: str, options: list[int], given: int | None, flag: str, source: str) -> int:
    if given is not None:
        if given not in options:
            raise TraceError(f"{source}: {flag} {given}: the trace has {what} {options or 'none'}")
        return given
    if not options:
        raise TraceError(f"{source}: no device allocations, copies or kernels recorded")
    if len(options) > 1:
        raise TraceError(f"{source}: several {what} {options}: choose one with {flag}")
    return options[0]


def window_bounds(trace: Trace, pid: int, name: str | None, occurrence: int) -> tuple[float, float]:
    """[start, end) in ns of the `occurrence`-th (1-based) NVTX range named `name` of
    process `pid` (a range recorded without a process counts too), or from that marker to
    the next marker of the name; the whole trace without a name."""
    if name is None:
        return (-math.inf, math.inf)
    if occurrence < 1:
        raise TraceError(f"{trace.source}: --occurrence {occurrence}: must be 1 or more")
    mine = [r for r in trace.ranges if r.name == name and r.pid in (pid, 0)]
    ranges = sorted((r for r in mine if r.kind == "range"), key=lambda r: r.start_ns)
    marks = sorted(r.start_ns for r in mine if r.kind == "mark")
    if ranges:
        if occurrence > len(ranges):
            raise TraceError(
                f"{trace.source}: --occurrence {occurrence}: NVTX range {name!r} occurs "
                f"{len(ranges)} time(s)"
            )
        r = ranges[occurrence - 1]
        return (r.start_ns, r.end_ns if r.end_ns is not None else math.inf)
    if marks:
        if occurrence > len(marks):
            raise TraceError(
                f"{trace.source}: --occurrence {occurrence}: NVTX marker {name!r} occurs "
                f"{len(marks)} time(s)"
            )
        end = marks[occurrence] if occurrence < len(marks) else math.inf
        return (marks[occurrence - 1], end)
    known = sorted({r.name for r in trace.ranges})[:10]
    raise TraceError(
        f"{trace.source}: --window {name!r}: no NVTX range or marker of that name "
        f"(names: {', '.join(map(repr, known)) or 'none recorded'})"[:400]
    )


def busy_spans(trace: Trace, pid: int, device: int) -> list[tuple[float, float]]:
    """[start, end) in ns of each stretch of transient device memory of process `pid` on
    `device` (module docstring), in order. Every one ends: a buffer never freed is not
    transient."""
    events = sorted(
        (e for e in trace.memory if e.pid == pid and e.device == device and e.memory == "device"),
        key=lambda e: (e.t_ns, _ORDER[e.op]),
    )
    transient: set[int] = set()  # id() of each allocation freed later in the trace
    open_: dict[int, MemEvent] = {}
    for e in events:
        if e.op == "alloc":
            open_[e.address] = e
        elif e.address in open_:
            transient.add(id(open_.pop(e.address)))
    live: dict[int, bool] = {}  # address -> transient
    spans: list[tuple[float, float]] = []
    start: float | None = None
    for e in events:
        if e.op == "alloc":
            live[e.address] = id(e) in transient
            if live[e.address] and start is None:
                start = e.t_ns
        elif live.pop(e.address, False) and not any(live.values()) and start is not None:
            spans.append((start, e.t_ns + 1))
            start = None
    return spans


def span_bounds(trace: Trace, pid: int, device: int, span: int) -> tuple[float, float]:
    """The `span`-th (1-based; negative from the end) of `busy_spans`."""
    spans = busy_spans(trace, pid, device)
    if span == 0 or abs(span) > len(spans):
        raise TraceError(
            f"{trace.source}: --span {span}: process {pid} on GPU {device} has {len(spans)} "
            "stretch(es) of transient device memory (1.. or -1.. from the end)"
        )
    return spans[span - 1 if span > 0 else span]


def _default_stream(trace: Trace, pid: int, device: int) -> tuple[int | None, bool]:
    known = trace.process(pid).default_stream.get(device)
    if known is not None:
        return known, True
    busy = Counter(
        e.stream
        for kind in ("kernels", "copies", "memsets")
        for e in trace[kind]
        if e.pid == pid and e.device == device
    )
    return (busy.most_common(1)[0][0] if busy else None), False


class _Builder:
    """Walks the window's events in host order and writes the steps."""

    def __init__(self, default: int | None) -> None:
        self.default = default
        self.steps: list[Step] = []
        self.live: dict[tuple[str, int], str] = {}  # (space, address) -> buffer name
        self.count = {"device": 0, "host_pinned": 0, "copy": 0}
        self.streams: list[str] = []  # every stream used, in order of first use
        self.dropped: Counter[str] = Counter()

    def stream(self, sid: int | None) -> str:
        name = "compute" if sid is None or sid == self.default else f"s{sid}"
        if name not in self.streams:
            self.streams.append(name)
        return name

    def alloc(self, e: MemEvent, kept: bool) -> None:
        if e.memory not in ("device", "host_pinned"):
            self.dropped[f"{e.memory} memory allocation"] += 1
            return
        n = self.count[e.memory]
        self.count[e.memory] += 1
        name = f"{'d' if e.memory == 'device' else 'h'}{n}_{size_tag(e.bytes)}"
        self.live[(e.memory, e.address)] = name
        if e.memory == "host_pinned":
            self.steps.append(Alloc(name, e.bytes, persistent=kept, memory="host_pinned"))
            return
        if e.allocator is None:
            self.dropped["allocation by an unknown API, taken as sync"] += 1
        self.steps.append(Alloc(name, e.bytes, e.allocator or "sync", persistent=kept))

    def free(self, e: MemEvent) -> None:
        name = self.live.pop((e.memory, e.address), None)
        if name is not None:
            self.steps.append(Free(name, e.memory))  # type: ignore[arg-type]

    def work(self, kind: str, e: Any) -> None:
        seconds = (e.end_ns - e.start_ns) / 1e9
        if kind == "kernels":
            name = e.name[:MAX_NAME]
            self.steps.append(
                Kernel(name, CAPTURED_KIND, 0, self.stream(e.stream), seconds=seconds)
            )
        elif kind == "memsets":
            self.steps.append(
                Kernel("memset", "memset", e.bytes, self.stream(e.stream), seconds=seconds)
            )
        elif e.direction in ("HtoD", "DtoH", "DtoD", "PtoP"):
            direction = "DtoD" if e.direction == "PtoP" else e.direction
            n = self.count["copy"]
            self.count["copy"] += 1
            pinned = e.host_memory == "pinned"
            stream = self.stream(e.stream)
            label = f"copy{n}_{direction}"
            self.steps.append(Copy(label, e.bytes, direction, pinned, stream, seconds=seconds))
        else:
            self.dropped[f"{e.direction} copy"] += 1

    def sync(self, e: Any) -> None:
        if e.kind == "stream" and e.stream is not None:
            self.steps.append(Sync(self.stream(e.stream)))
        elif e.kind in ("context", "event", "stream"):
            self.steps.extend(Sync(s) for s in self.streams or ["compute"])
        else:
            self.dropped[f"{e.kind} synchronisation"] += 1


# at one instant: allocations before the work that uses them, frees after it
_ORDER = {"alloc": 0, "kernels": 1, "copies": 1, "memsets": 1, "syncs": 2, "free": 3}


def _events(trace: Trace, pid: int, device: int) -> list[tuple[int, int, str, Any]]:
    """(host time, tie order, kind, event) of the process's events on the device (and its
    page-locked host memory), in host order."""
    out = []
    for e in trace.memory:
        if e.pid == pid and (e.device == device or e.memory == "host_pinned"):
            out.append((e.t_ns, _ORDER[e.op], e.op, e))
    for kind in ("kernels", "copies", "memsets", "syncs"):
        for e in trace[kind]:
            if e.pid == pid and e.device == device:
                t = e.start_ns if kind == "syncs" or e.issued_ns is None else e.issued_ns
                out.append((t, _ORDER[kind], kind, e))
    out.sort(key=lambda x: (x[0], x[1]))
    return out


def trace_to_plan(
    trace: Trace,
    pid: int | None = None,
    device: int | None = None,
    window: str | None = None,
    occurrence: int = 1,
    name: str | None = None,
    span: int | None = None,
) -> Imported:
    """The plan of one process on one device (chosen when the trace has several), over
    the whole trace or one window: an NVTX range or marker, or a span (module docstring)."""
    pid = _choose("processes", trace.pids(), pid, "--pid", trace.source)
    device = _choose("devices", trace.devices(pid), device, "--device", trace.source)
    if span is not None and window is not None:
        raise TraceError(f"{trace.source}: --window and --span: choose one")
    if span is not None:
        t0, t1 = span_bounds(trace, pid, device, span)
    else:
        t0, t1 = window_bounds(trace, pid, window, occurrence)
    default, known = _default_stream(trace, pid, device)
    events = _events(trace, pid, device)
    freed_at: dict[int, int] = {}  # id(alloc event) -> time of its free
    open_: dict[tuple[str, int], MemEvent] = {}
    for t, _, kind, e in events:
        if kind == "alloc":
            open_[(e.memory, e.address)] = e
        elif kind == "free" and (e.memory, e.address) in open_:
            freed_at[id(open_.pop((e.memory, e.address)))] = t
    b = _Builder(default)
    for t, _, kind, e in events:  # live when the window opens: allocated at its start
        if kind == "alloc" and t < t0 and freed_at.get(id(e), math.inf) >= t0:
            b.alloc(e, kept=freed_at.get(id(e), math.inf) >= t1)
    for t, _, kind, e in events:
        if not t0 <= t < t1:
            continue
        if kind == "alloc":
            b.alloc(e, kept=freed_at.get(id(e), math.inf) >= t1)
        elif kind == "free":
            b.free(e)
        elif kind == "syncs":
            b.sync(e)
        else:
            b.work(kind, e)
    b.steps.extend(Sync(s) for s in b.streams if s != "compute")
    if len(b.steps) > MAX_STEPS:
        raise TraceError(
            f"{trace.source}: {len(b.steps)} steps, more than a plan holds ({MAX_STEPS}): "
            "choose one partition's work with --window NAME (docs/capture.md)"
        )
    ctx = trace.process(pid).context_bytes.get(device)
    meta: dict[str, Any] = {
        "builder": "cuzk_sim.capture",
        "recorder": trace.recorder,
        "source": trace.source,
        "pid": pid,
        "device": device,
        "window": None if window is None else {"name": window, "occurrence": occurrence},
        "default_stream": default,
    }
    if span is not None:
        meta["span"] = span
    if ctx is not None:
        meta["context_bytes"] = ctx
    label = window if window is not None else f"span {span}" if span is not None else "whole trace"
    plan = Plan(name or f"captured pid {pid} gpu {device} ({label})", tuple(b.steps), meta)
    plan.validate(trace.source)
    return Imported(
        plan, pid, device, (t0, t1), default, known, dict(b.dropped), trace.missing, ctx
    )
