"""CUPTI activity records -> the trace model. Pure: no CUPTI, no driver, so every rule
here is tested on hand-built records (tests/capture/test_cupti_records.py).

A record is a plain dict shaped like NVIDIA's `cupti-python` activity objects (their
attribute names, snake_case of the C structs): `kind` is the ActivityKind's name
(`MEMORY2`, `MEMCPY`, `MEMSET`, `CONCURRENT_KERNEL`, `KERNEL`, `SYNCHRONIZATION`,
`MARKER`, `CONTEXT`, `RUNTIME`, `DRIVER`, `MEMORY_POOL`); enum-valued fields
(`memory_operation_type`, `memory_kind`, `copy_kind`, `src_kind`, `dst_kind`, `type`)
hold the enum member's name, or its number in CUPTI's C headers (the tables below);
`api_name` on RUNTIME/DRIVER records is `cupti.get_callback_name(domain, cbid)`. The
recorder inside the captured process (capture/cupti_child.py) writes them so.

What CUPTI says and where it goes: MEMORY2 (CUpti_ActivityMemory4) -> allocations and
frees, `is_async` marking the stream-ordered pool (cudaMallocAsync); RUNTIME/DRIVER ->
the API behind each correlation id (the allocator when `is_async` is absent, and the
time each GPU operation was issued); CONTEXT -> each device's NULL stream;
SYNCHRONIZATION -> host waits (its device through its context); MARKER -> NVTX ranges
(a START and an END record sharing `id`) and instantaneous marks. MEMORY_POOL records
(pool created, trimmed, destroyed) are counted, not modelled.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from cuzk_sim.capture.trace import (
    CopyEvent,
    KernelEvent,
    MemEvent,
    MemsetEvent,
    Process,
    RangeEvent,
    SyncEvent,
    Trace,
    TraceError,
    allocator_of,
)

# CUPTI's C enum values (cupti_activity.h), for records that carry numbers
MEMCPY_KIND = {1: "HTOD", 2: "DTOH", 3: "HTOA", 4: "ATOH", 5: "ATOA", 6: "ATOD", 7: "DTOA"}
MEMCPY_KIND |= {8: "DTOD", 9: "HTOH", 10: "PTOP"}
MEMORY_KIND = {0: "UNKNOWN", 1: "PAGEABLE", 2: "PINNED", 3: "DEVICE", 4: "ARRAY", 5: "MANAGED"}
MEMORY_KIND |= {6: "DEVICE_STATIC", 7: "MANAGED_STATIC"}
MEMORY_OP = {0: "INVALID", 1: "ALLOCATION", 2: "RELEASE"}
SYNC_TYPE = {0: "UNKNOWN", 1: "EVENT_SYNCHRONIZE", 2: "STREAM_WAIT_EVENT"}
SYNC_TYPE |= {3: "STREAM_SYNCHRONIZE", 4: "CONTEXT_SYNCHRONIZE"}
MARKER_INSTANT, MARKER_START, MARKER_END = 1 << 0, 1 << 1, 1 << 2  # CUpti_ActivityFlag

DIRECTIONS = {"HTOD": "HtoD", "DTOH": "DtoH", "DTOD": "DtoD", "HTOH": "HtoH", "PTOP": "PtoP"}
SYNCS = {
    "EVENT_SYNCHRONIZE": "event",
    "STREAM_WAIT_EVENT": "stream_wait_event",
    "STREAM_SYNCHRONIZE": "stream",
    "CONTEXT_SYNCHRONIZE": "context",
}
SPACES = {"DEVICE": "device", "PINNED": "host_pinned", "MANAGED": "managed"}
KERNEL_KINDS = ("CONCURRENT_KERNEL", "KERNEL")


def enum_name(value: Any, table: dict[int, str]) -> str:
    """An enum field as its member name: `DEVICE` stays, 3 -> `DEVICE`,
    `ActivityMemoryKind.DEVICE` -> `DEVICE`."""
    if isinstance(value, int) and not isinstance(value, bool):
        return table.get(value, "UNKNOWN")
    return str(value).rsplit(".", 1)[-1].upper() if value is not None else "UNKNOWN"


class _Records:
    """The records of one process, indexed by what the others refer to."""

    def __init__(self, records: list[dict[str, Any]], pid: int, source: str) -> None:
        self.source, self.pid = source, pid
        self.by_kind: dict[str, list[dict[str, Any]]] = {}
        for i, r in enumerate(records):
            if not isinstance(r, dict) or not isinstance(r.get("kind"), str):
                raise TraceError(f"{source}: record {i}: expected an object with a 'kind' name")
            self.by_kind.setdefault(r["kind"], []).append(r)
        # a runtime call and the driver calls it makes share one correlation id: the
        # runtime's wins (the call the program made, issued first); the H200 capture of
        # 2026-12-03 named every cudaMalloc by its inner cuCtxGetDevice before this
        self.calls = {
            r.get("correlation_id"): (r.get("start"), str(r.get("api_name") or ""))
            for kind in ("DRIVER", "RUNTIME")
            for r in self.by_kind.get(kind, [])
        }
        self.device_of: dict[Any, int] = {}
        self.null_stream: dict[int, int] = {}
        for r in self.by_kind.get("CONTEXT", []):
            self.device_of[r.get("context_id")] = int(r.get("device_id", 0))
            if r.get("null_stream_id") is not None:
                self.null_stream[int(r.get("device_id", 0))] = int(r["null_stream_id"])

    def get(self, kind: str) -> list[dict[str, Any]]:
        return self.by_kind.get(kind, [])

    def field(self, r: dict[str, Any], name: str, i: int) -> int:
        v = r.get(name)
        if isinstance(v, bool) or not isinstance(v, int):
            raise TraceError(
                f"{self.source}: {r['kind']} record {i}: {name} must be an integer, got {v!r}"[:300]
            )
        return v

    def issued(self, r: dict[str, Any]) -> int | None:
        start = self.calls.get(r.get("correlation_id"), (None, ""))[0]
        return start if isinstance(start, int) else None

    def device(self, r: dict[str, Any]) -> int:
        if r.get("device_id") is not None:
            return int(r["device_id"])
        return self.device_of.get(r.get("context_id"), 0)


def _memory(rs: _Records) -> list[MemEvent]:
    out = []
    for i, r in enumerate(rs.get("MEMORY2")):
        op = enum_name(r.get("memory_operation_type"), MEMORY_OP)
        if op not in ("ALLOCATION", "RELEASE"):
            raise TraceError(f"{rs.source}: MEMORY2 record {i}: memory_operation_type {op}")
        api = rs.calls.get(r.get("correlation_id"), (None, ""))[1]
        is_async = r.get("is_async")
        allocator = "async" if is_async else allocator_of(api)
        if allocator is None and is_async is False:
            allocator = "sync"
        space = SPACES.get(enum_name(r.get("memory_kind"), MEMORY_KIND), "other")
        out.append(
            MemEvent(
                t_ns=rs.field(r, "timestamp", i),
                pid=rs.pid,
                device=rs.device(r),
                op="alloc" if op == "ALLOCATION" else "free",
                address=rs.field(r, "address", i),
                bytes=rs.field(r, "bytes", i),
                memory=space,  # type: ignore[arg-type]
                api=api,
                allocator=allocator if space == "device" else None,  # type: ignore[arg-type]
                stream=r.get("stream_id"),
            )
        )
    return out


def _work(rs: _Records) -> tuple[list[KernelEvent], list[CopyEvent], list[MemsetEvent]]:
    kernels = [
        KernelEvent(
            rs.field(r, "start", i),
            rs.field(r, "end", i),
            rs.pid,
            rs.device(r),
            str(r.get("name") or "kernel"),
            int(r.get("stream_id") or 0),
            rs.issued(r),
        )
        for kind in KERNEL_KINDS
        for i, r in enumerate(rs.get(kind))
    ]
    copies = []
    for i, r in enumerate(rs.get("MEMCPY")):
        direction = DIRECTIONS.get(enum_name(r.get("copy_kind"), MEMCPY_KIND), "other")
        host = {"HtoD": r.get("src_kind"), "DtoH": r.get("dst_kind")}.get(direction)
        host_kind = enum_name(host, MEMORY_KIND) if host is not None else None
        memory = {"PINNED": "pinned", "PAGEABLE": "pageable"}.get(host_kind or "")
        copies.append(
            CopyEvent(
                rs.field(r, "start", i),
                rs.field(r, "end", i),
                rs.pid,
                rs.device(r),
                rs.field(r, "bytes", i),
                direction,
                memory,
                int(r.get("stream_id") or 0),  # type: ignore[arg-type]
                rs.issued(r),
            )
        )
    memsets = [
        MemsetEvent(
            rs.field(r, "start", i),
            rs.field(r, "end", i),
            rs.pid,
            rs.device(r),
            rs.field(r, "bytes", i),
            int(r.get("stream_id") or 0),
            rs.issued(r),
        )
        for i, r in enumerate(rs.get("MEMSET"))
    ]
    return kernels, copies, memsets


def _syncs(rs: _Records) -> list[SyncEvent]:
    out = []
    for i, r in enumerate(rs.get("SYNCHRONIZATION")):
        kind = SYNCS.get(enum_name(r.get("type"), SYNC_TYPE), "other")
        stream = r.get("stream_id") if kind != "context" else None
        out.append(
            SyncEvent(
                rs.field(r, "start", i),
                rs.field(r, "end", i),
                rs.pid,
                rs.device(r),
                kind,
                stream,
                r.get("cuda_event_id"),  # type: ignore[arg-type]
            )
        )
    return out


def _markers(rs: _Records) -> list[RangeEvent]:
    out, open_ = [], {}
    for i, r in enumerate(sorted(rs.get("MARKER"), key=lambda r: r.get("timestamp") or 0)):
        flags = r.get("flags") or 0
        t = rs.field(r, "timestamp", i)
        if flags & MARKER_INSTANT:
            out.append(RangeEvent(t, None, rs.pid, str(r.get("name") or ""), "mark"))
        elif flags & MARKER_START:
            open_[r.get("id")] = (t, str(r.get("name") or ""))
        elif flags & MARKER_END and r.get("id") in open_:
            start, name = open_.pop(r.get("id"))
            out.append(RangeEvent(start, t, rs.pid, name, "range"))
    return out


def reconcile(memory: list[MemEvent]) -> tuple[list[MemEvent], list[str]]:
    """CUPTI records from the process's first CUDA call, so a free of an address no
    recorded allocation returned is a record CUPTI made for memory the program did not
    allocate (a pool's own release, say), not a late start: it is dropped; an address
    allocated again while live had its free unrecorded: the old buffer is freed there.
    Both are counted in the notes (Trace.check then holds what is left)."""
    live: dict[tuple[int, int, str, int], MemEvent] = {}
    kept: list[MemEvent] = []
    unmatched = implicit = 0
    for e in sorted(memory, key=lambda e: e.t_ns):
        key = (e.pid, -1 if e.memory == "host_pinned" else e.device, e.memory, e.address)
        if e.op == "alloc":
            old = live.pop(key, None)
            if old is not None:
                implicit += 1
                kept.append(MemEvent(e.t_ns, e.pid, e.device, "free", e.address, old.bytes,
                                     old.memory, "", old.allocator, e.stream))  # fmt: skip
            live[key] = e
        elif live.pop(key, None) is None:
            unmatched += 1
            continue
        kept.append(e)
    notes = []
    if unmatched:
        notes.append(f"{unmatched} frees of memory no recorded allocation returned: dropped")
    if implicit:
        notes.append(f"{implicit} addresses allocated again with no recorded free: freed there")
    return kept, notes


def records_to_trace(
    records: list[dict[str, Any]],
    pid: int,
    source: str,
    context_bytes: dict[int, int] | None = None,
) -> Trace:
    """The trace of one process's activity records (module docstring)."""
    rs = _Records(records, pid, source)
    memory, reconciled = reconcile(_memory(rs))
    kernels, copies, memsets = _work(rs)
    missing = list(reconciled)
    if not rs.get("MEMORY2"):
        missing.append("no MEMORY2 records: no allocations recorded")
    if not rs.get("CONTEXT"):
        missing.append("no CONTEXT records: each device's default stream taken as its busiest")
    if not rs.get("RUNTIME") and not rs.get("DRIVER"):
        missing.append("no RUNTIME/DRIVER records: no API names, work ordered by its start")
    if not context_bytes:
        missing.append("no CUDA context size measured")
    pools = Counter(str(r.get("memory_pool_operation_type")) for r in rs.get("MEMORY_POOL"))
    if pools:
        missing.append(f"memory pool operations not modelled: {dict(pools)}")
    trace = Trace(
        source=source,
        recorder="cupti",
        processes=(Process(pid, "", rs.null_stream, dict(context_bytes or {})),),
        memory=tuple(memory),
        copies=tuple(copies),
        memsets=tuple(memsets),
        kernels=tuple(kernels),
        syncs=tuple(_syncs(rs)),
        ranges=tuple(_markers(rs)),
        missing=tuple(missing),
    )
    trace.check()
    return trace


def merge(traces: list[Trace], source: str) -> Trace:
    """The traces of several processes (a captured program and its children) as one."""
    out = Trace(source, "cupti")
    for t in traces:
        out = Trace(
            source,
            "cupti",
            out.processes + t.processes,
            out.memory + t.memory,
            out.copies + t.copies,
            out.memsets + t.memsets,
            out.kernels + t.kernels,
            out.syncs + t.syncs,
            out.ranges + t.ranges,
            tuple(dict.fromkeys(out.missing + t.missing)),
        )
    return out
