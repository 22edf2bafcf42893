"""Read an Nsight Systems SQLite export (`nsys export --type sqlite`) into the trace model.

The schema is NVIDIA's ("SQLite Export Schema Reference" of the Nsight Systems docs):
one table per data type, created lazily, so any of them may be missing, and columns that
vary between versions. This reader takes what is there and names what is not
(`Trace.missing`), refusing only a file that is no SQLite database or holds no CUDA
activity at all. The tables read:

- CUDA_GPU_MEMORY_USAGE_EVENTS: allocations and frees (address, bytes, memKind,
  memoryOperationType; correlationId to the API call; localMemoryPoolAddress: a pool);
- CUPTI_ACTIVITY_KIND_RUNTIME: the API calls (nameId -> StringIds), for the allocator
  and the time each GPU operation was issued;
- CUPTI_ACTIVITY_KIND_KERNEL / _MEMCPY / _MEMSET / _SYNCHRONIZATION: device work and
  host waits (start, end, deviceId, streamId, globalPid);
- NVTX_EVENTS: ranges (eventType 59 push/pop, 60 start/end) and marks (34);
- ENUM_CUDA_MEMCPY_OPER, ENUM_CUDA_MEM_KIND, ENUM_CUDA_DEV_MEM_EVENT_OPER,
  ENUM_CUPTI_SYNC_TYPE: the enums' meaning by symbol name (the documented values when
  the table is missing);
- PROCESSES (names), TARGET_INFO_CUDA_CONTEXT_INFO (each context's NULL stream).

A process id is the serialized GlobalId's pid: globalPid / 2^24 mod 2^24 (the docs'
"Serialized process and thread identifiers"). The export records no context size.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
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
    is_pinned_api,
)

SQLITE_MAGIC = b"SQLite format 3\x00"
CUDA_TABLES = (
    "CUDA_GPU_MEMORY_USAGE_EVENTS",
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
)

# The documented enum values (Nsight Systems' own numbering, not CUPTI's), used when an
# export lacks the ENUM_* table: symbol name by id.
DEFAULT_ENUMS: dict[str, dict[int, str]] = {
    "ENUM_CUDA_MEMCPY_OPER": {
        1: "CUDA_MEMCPY_KIND_HTOD",
        2: "CUDA_MEMCPY_KIND_DTOH",
        8: "CUDA_MEMCPY_KIND_DTOD",
        9: "CUDA_MEMCPY_KIND_HTOH",
        10: "CUDA_MEMCPY_KIND_PTOP",
    },
    "ENUM_CUDA_MEM_KIND": {
        0: "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE",
        1: "CUDA_MEMOPR_MEMORY_KIND_PINNED",
        2: "CUDA_MEMOPR_MEMORY_KIND_DEVICE",
        4: "CUDA_MEMOPR_MEMORY_KIND_MANAGED",
    },
    "ENUM_CUDA_DEV_MEM_EVENT_OPER": {
        0: "CUDA_DEV_MEM_EVENT_OPR_ALLOCATION",
        1: "CUDA_DEV_MEM_EVENT_OPR_DEALLOCATION",
    },
    "ENUM_CUPTI_SYNC_TYPE": {
        1: "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE",
        2: "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT",
        3: "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE",
        4: "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE",
    },
}
COPY_DIRECTIONS = {"HTOD": "HtoD", "DTOH": "DtoH", "DTOD": "DtoD", "HTOH": "HtoH", "PTOP": "PtoP"}
SYNC_KINDS = {
    "EVENT_SYNCHRONIZE": "event",
    "STREAM_WAIT_EVENT": "stream_wait_event",
    "STREAM_SYNCHRONIZE": "stream",
    "CONTEXT_SYNCHRONIZE": "context",
}
NVTX_MARK, NVTX_PUSH_POP, NVTX_START_END = 34, 59, 60


def pid_of(global_id: int | None) -> int:
    """The process id inside an Nsight Systems serialized GlobalId."""
    return (int(global_id) >> 24) & 0xFFFFFF if global_id is not None else 0


class _Export:
    """One open export: its tables, their columns, strings and enums."""

    def __init__(self, con: sqlite3.Connection, source: str) -> None:
        self.con, self.source = con, source
        self.missing: list[str] = []
        rows = con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
        self.tables = {r[0] for r in rows}
        self.strings: dict[int, str] = {}
        if "StringIds" in self.tables and {"id", "value"} <= self.columns("StringIds"):
            self.strings = {
                int(i): str(v) for i, v in con.execute("SELECT id, value FROM StringIds")
            }
        self.enums = {name: self._enum(name, default) for name, default in DEFAULT_ENUMS.items()}

    def columns(self, table: str) -> set[str]:
        return {r[1] for r in self.con.execute(f'PRAGMA table_info("{table}")')}

    def _enum(self, table: str, default: dict[int, str]) -> dict[int, str]:
        if table not in self.tables:
            return default
        cols = self.columns(table)
        name = "name" if "name" in cols else "label" if "label" in cols else None
        if "id" not in cols or name is None:
            return default
        return {
            int(i): str(v).upper() for i, v in self.con.execute(f"SELECT id, {name} FROM {table}")
        }

    def rows(
        self, table: str, need: tuple[str, ...], want: dict[str, Any], what: str
    ) -> Iterator[dict[str, Any]]:
        """The rows of `table` as dicts of the `need` columns (without one of them the
        table is not read: said in `missing`) and the `want` columns (a missing one takes
        its default: said in `missing`)."""
        if table not in self.tables:
            self.missing.append(f"no {table} table: no {what} recorded")
            return
        cols = self.columns(table)
        lacking = [c for c in need if c not in cols]
        if lacking:
            self.missing.append(f"{table} lacks {', '.join(lacking)}: its {what} not read")
            return
        for c, default in want.items():
            if c not in cols:
                self.missing.append(f"{table} lacks {c}: taken as {default!r} for every row")
        present = [c for c in (*need, *want) if c in cols]
        query = f"SELECT {', '.join(f'[{c}]' for c in present)} FROM {table}"
        for n, raw in enumerate(self.con.execute(query)):
            row = dict(zip(present, raw, strict=True))
            for c, default in want.items():
                if row.get(c) is None:
                    row[c] = default
            for c in need:
                if row[c] is None:
                    raise TraceError(f"{self.source}: {table} row {n + 1}: {c} is NULL")
            yield row

    def string(self, sid: Any) -> str:
        if isinstance(sid, str):
            return sid
        return self.strings.get(int(sid), f"<string {sid}>") if sid is not None else ""


def _int(row: dict[str, Any], col: str, table: str, source: str) -> int:
    v = row[col]
    if isinstance(v, bool) or not isinstance(v, int):
        raise TraceError(f"{source}: {table}.{col}: expected an integer, got {v!r}"[:300])
    return v


def _api_calls(ex: _Export) -> dict[tuple[int, int], tuple[int, str]]:
    """(pid, correlationId) -> (start ns, API name) of every recorded runtime/driver call."""
    out: dict[tuple[int, int], tuple[int, str]] = {}
    table = "CUPTI_ACTIVITY_KIND_RUNTIME"
    for r in ex.rows(
        table,
        ("start", "correlationId"),
        {"nameId": None, "globalTid": None},
        "API calls (the allocator is then read from the pool columns alone)",
    ):
        name = ex.string(r["nameId"]) if r["nameId"] is not None else ""
        out[(pid_of(r["globalTid"]), _int(r, "correlationId", table, ex.source))] = (
            _int(r, "start", table, ex.source),
            name,
        )
    return out


def _issued(calls: dict, pid: int, corr: Any) -> int | None:
    hit = calls.get((pid, corr)) if corr is not None else None
    return hit[0] if hit else None


def _memory(ex: _Export, calls: dict) -> list[MemEvent]:
    table = "CUDA_GPU_MEMORY_USAGE_EVENTS"
    need = ("start", "address", "bytes", "memoryOperationType")
    want = {"globalPid": None, "deviceId": 0, "memKind": 2, "correlationId": None}
    want |= {"streamId": None, "localMemoryPoolAddress": 0}
    out = []
    ops, kinds = ex.enums["ENUM_CUDA_DEV_MEM_EVENT_OPER"], ex.enums["ENUM_CUDA_MEM_KIND"]
    for r in ex.rows(table, need, want, "allocations"):
        pid = pid_of(r["globalPid"])
        op_name = ops.get(_int(r, "memoryOperationType", table, ex.source), "")
        op = "free" if op_name.endswith("DEALLOCATION") else "alloc"
        if not op_name.endswith("ALLOCATION"):
            raise TraceError(
                f"{ex.source}: {table}.memoryOperationType {r['memoryOperationType']} is "
                "neither allocation nor deallocation"
            )
        api = calls.get((pid, r["correlationId"]), (0, ""))[1]
        kind = kinds.get(r["memKind"], "")
        if is_pinned_api(api) or kind.endswith("_PINNED"):
            space = "host_pinned"
        elif kind.endswith("_DEVICE"):
            space = "device"
        elif kind.endswith("_MANAGED"):
            space = "managed"
        else:
            space = "other"
        allocator = allocator_of(api)
        if allocator is None and space == "device" and r["localMemoryPoolAddress"]:
            allocator = "async"
        out.append(
            MemEvent(
                t_ns=_int(r, "start", table, ex.source),
                pid=pid,
                device=int(r["deviceId"]),
                op=op,
                address=_int(r, "address", table, ex.source),
                bytes=_int(r, "bytes", table, ex.source),
                memory=space,
                api=api,
                allocator=allocator,
                stream=r["streamId"],
            )
        )
    return out


def _work(ex: _Export, calls: dict) -> tuple[list, list, list]:
    """Kernels, copies and memsets."""
    base = {"globalPid": None, "deviceId": 0, "streamId": 0, "correlationId": None}
    kernels, copies, memsets = [], [], []
    t = "CUPTI_ACTIVITY_KIND_KERNEL"
    for r in ex.rows(
        t, ("start", "end"), base | {"shortName": None, "demangledName": None}, "kernels"
    ):
        pid = pid_of(r["globalPid"])
        name = ex.string(r["shortName"] if r["shortName"] is not None else r["demangledName"])
        kernels.append(
            KernelEvent(
                _int(r, "start", t, ex.source),
                _int(r, "end", t, ex.source),
                pid,
                int(r["deviceId"]),
                name or "kernel",
                int(r["streamId"]),
                _issued(calls, pid, r["correlationId"]),
            )
        )
    t = "CUPTI_ACTIVITY_KIND_MEMCPY"
    kinds, opers = ex.enums["ENUM_CUDA_MEM_KIND"], ex.enums["ENUM_CUDA_MEMCPY_OPER"]
    want = base | {"srcKind": None, "dstKind": None}
    for r in ex.rows(t, ("start", "end", "bytes", "copyKind"), want, "copies"):
        pid = pid_of(r["globalPid"])
        oper = opers.get(_int(r, "copyKind", t, ex.source), "").rsplit("_", 1)[-1]
        direction = COPY_DIRECTIONS.get(oper, "other")
        host = {"HtoD": r["srcKind"], "DtoH": r["dstKind"]}.get(direction)
        host_kind = kinds.get(host, "") if host is not None else ""
        copies.append(
            CopyEvent(
                _int(r, "start", t, ex.source),
                _int(r, "end", t, ex.source),
                pid,
                int(r["deviceId"]),
                _int(r, "bytes", t, ex.source),
                direction,
                "pinned" if host_kind.endswith("_PINNED") else "pageable" if host_kind else None,
                int(r["streamId"]),
                _issued(calls, pid, r["correlationId"]),
            )
        )
    t = "CUPTI_ACTIVITY_KIND_MEMSET"
    for r in ex.rows(t, ("start", "end", "bytes"), base, "memsets"):
        pid = pid_of(r["globalPid"])
        memsets.append(
            MemsetEvent(
                _int(r, "start", t, ex.source),
                _int(r, "end", t, ex.source),
                pid,
                int(r["deviceId"]),
                _int(r, "bytes", t, ex.source),
                int(r["streamId"]),
                _issued(calls, pid, r["correlationId"]),
            )
        )
    return kernels, copies, memsets


def _syncs(ex: _Export) -> list[SyncEvent]:
    t = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
    want = {"globalPid": None, "deviceId": 0, "streamId": None, "eventId": None}
    types = ex.enums["ENUM_CUPTI_SYNC_TYPE"]
    out = []
    for r in ex.rows(t, ("start", "end", "syncType"), want, "synchronisations"):
        name = types.get(_int(r, "syncType", t, ex.source), "")
        kind = next((k for s, k in SYNC_KINDS.items() if name.endswith(s)), "other")
        out.append(
            SyncEvent(
                _int(r, "start", t, ex.source),
                _int(r, "end", t, ex.source),
                pid_of(r["globalPid"]),
                int(r["deviceId"]),
                kind,
                r["streamId"],
                r["eventId"],
            )
        )
    return out


def _ranges(ex: _Export) -> list[RangeEvent]:
    t = "NVTX_EVENTS"
    out = []
    want = {"end": None, "text": None, "textId": None, "globalTid": None}
    for r in ex.rows(t, ("start", "eventType"), want, "NVTX ranges or marks"):
        etype = r["eventType"]
        if etype not in (NVTX_MARK, NVTX_PUSH_POP, NVTX_START_END):
            continue
        name = r["text"] if r["text"] is not None else ex.string(r["textId"])
        end = None if etype == NVTX_MARK else r["end"]
        if etype != NVTX_MARK and end is None:
            continue  # a range never closed: no window
        kind = "mark" if etype == NVTX_MARK else "range"
        out.append(
            RangeEvent(_int(r, "start", t, ex.source), end, pid_of(r["globalTid"]), name, kind)
        )
    return out


def _processes(ex: _Export, pids: set[int]) -> tuple[Process, ...]:
    names: dict[int, str] = {}
    if "PROCESSES" in ex.tables and {"pid", "name"} <= ex.columns("PROCESSES"):
        names = {int(p): str(n or "") for p, n in ex.con.execute("SELECT pid, name FROM PROCESSES")}
    null: dict[int, dict[int, int]] = {}
    t = "TARGET_INFO_CUDA_CONTEXT_INFO"
    if t in ex.tables and {"nullStreamId", "processId", "deviceId"} <= ex.columns(t):
        for s, p, d in ex.con.execute(f"SELECT nullStreamId, processId, deviceId FROM {t}"):
            null.setdefault(int(p), {})[int(d)] = int(s)
    else:
        ex.missing.append(f"no {t}: each process's default stream taken as its busiest")
    return tuple(Process(p, names.get(p, ""), null.get(p, {})) for p in sorted(pids))


def read_nsys(path: Path) -> Trace:
    """The trace of an Nsight Systems SQLite export; TraceError (one line) when the file
    is no SQLite database, holds no CUDA activity, or a row breaks the schema."""
    source = str(path)
    try:
        with open(path, "rb") as f:
            head = f.read(len(SQLITE_MAGIC))
    except FileNotFoundError:
        raise TraceError(f"{source}: no such file") from None
    except OSError as e:
        raise TraceError(f"{source}: cannot read ({e.strerror or e})") from None
    if head != SQLITE_MAGIC:
        raise TraceError(
            f"{source}: not an SQLite database (make one with `nsys export --type sqlite`)"
        )
    try:
        con = sqlite3.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True)
    except sqlite3.Error as e:
        raise TraceError(f"{source}: cannot open as SQLite ({e})") from None
    try:
        return _read(con, source)
    except sqlite3.Error as e:
        raise TraceError(f"{source}: broken SQLite export ({e})") from None
    finally:
        con.close()


def _read(con: sqlite3.Connection, source: str) -> Trace:
    ex = _Export(con, source)
    if not any(t in ex.tables for t in CUDA_TABLES):
        raise TraceError(
            f"{source}: no CUDA activity (none of {', '.join(CUDA_TABLES)}): profile with "
            "`nsys profile --trace=cuda,nvtx --cuda-memory-usage=true`"
        )
    calls = _api_calls(ex)
    memory = _memory(ex, calls)
    kernels, copies, memsets = _work(ex, calls)
    syncs, ranges = _syncs(ex), _ranges(ex)
    pids = {e.pid for group in (memory, kernels, copies, memsets) for e in group}
    trace = Trace(
        source=source,
        recorder="nsys",
        processes=_processes(ex, pids),
        memory=tuple(memory),
        copies=tuple(copies),
        memsets=tuple(memsets),
        kernels=tuple(kernels),
        syncs=tuple(syncs),
        ranges=tuple(ranges),
        missing=(*ex.missing, "the export records no CUDA context size"),
    )
    trace.check()
    return trace
