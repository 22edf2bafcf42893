"""Hand-made Nsight Systems SQLite exports for the tests: the tables and columns of
NVIDIA's "SQLite Export Schema Reference" (export schema 3.16, Nsight Systems 2024.6),
written by us with sqlite3. Only the tables a test asks for are created (an export
creates its tables lazily)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

SCHEMA = {
    "StringIds": "id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL",
    "PROCESSES": "globalPid INTEGER, pid INTEGER, name TEXT",
    "TARGET_INFO_CUDA_CONTEXT_INFO": "nullStreamId INTEGER NOT NULL, hwId INTEGER NOT NULL, "
    "vmId INTEGER NOT NULL, processId INTEGER NOT NULL, deviceId INTEGER NOT NULL, "
    "contextId INTEGER NOT NULL, parentContextId INTEGER, isGreenContext INTEGER",
    "CUPTI_ACTIVITY_KIND_RUNTIME": "start INTEGER NOT NULL, end INTEGER NOT NULL, "
    "eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, "
    "nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER",
    "CUPTI_ACTIVITY_KIND_KERNEL": "start INTEGER NOT NULL, end INTEGER NOT NULL, "
    "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, "
    "streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, "
    "demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER, "
    "gridX INTEGER NOT NULL DEFAULT 1, blockX INTEGER NOT NULL DEFAULT 1",
    "CUPTI_ACTIVITY_KIND_MEMCPY": "start INTEGER NOT NULL, end INTEGER NOT NULL, "
    "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, "
    "streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, "
    "bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, "
    "srcKind INTEGER, dstKind INTEGER",
    "CUPTI_ACTIVITY_KIND_MEMSET": "start INTEGER NOT NULL, end INTEGER NOT NULL, "
    "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, "
    "streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, "
    "value INTEGER NOT NULL, bytes INTEGER NOT NULL, graphNodeId INTEGER, memKind INTEGER",
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": "start INTEGER NOT NULL, end INTEGER NOT NULL, "
    "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, "
    "streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, "
    "syncType INTEGER NOT NULL, eventId INTEGER NOT NULL",
    "CUDA_GPU_MEMORY_USAGE_EVENTS": "start INTEGER NOT NULL, globalPid INTEGER NOT NULL, "
    "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, address INTEGER NOT NULL, "
    "pc INTEGER NOT NULL, bytes INTEGER NOT NULL, memKind INTEGER NOT NULL, "
    "memoryOperationType INTEGER NOT NULL, name TEXT, correlationId INTEGER, "
    "streamId INTEGER, localMemoryPoolAddress INTEGER",
    "NVTX_EVENTS": "start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, "
    "rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, "
    "endGlobalTid INTEGER, textId INTEGER, domainId INTEGER",
}
ENUMS = {
    "ENUM_CUDA_MEMCPY_OPER": [
        (0, "CUDA_MEMCPY_KIND_UNKNOWN", "Unknown"),
        (1, "CUDA_MEMCPY_KIND_HTOD", "Host-to-Device"),
        (2, "CUDA_MEMCPY_KIND_DTOH", "Device-to-Host"),
        (8, "CUDA_MEMCPY_KIND_DTOD", "Device-to-Device"),
        (9, "CUDA_MEMCPY_KIND_HTOH", "Host-to-Host"),
        (10, "CUDA_MEMCPY_KIND_PTOP", "Peer-to-Peer"),
    ],
    "ENUM_CUDA_MEM_KIND": [
        (0, "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE", "Pageable"),
        (1, "CUDA_MEMOPR_MEMORY_KIND_PINNED", "Pinned"),
        (2, "CUDA_MEMOPR_MEMORY_KIND_DEVICE", "Device"),
        (4, "CUDA_MEMOPR_MEMORY_KIND_MANAGED", "Managed"),
    ],
    "ENUM_CUDA_DEV_MEM_EVENT_OPER": [
        (0, "CUDA_DEV_MEM_EVENT_OPR_ALLOCATION", "Allocation"),
        (1, "CUDA_DEV_MEM_EVENT_OPR_DEALLOCATION", "Deallocation"),
    ],
    "ENUM_CUPTI_SYNC_TYPE": [
        (1, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE", "Event sync"),
        (2, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT", "Stream wait sync"),
        (3, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE", "Stream sync"),
        (4, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE", "Context sync"),
    ],
}
HTOD, DTOH = 1, 2
PAGEABLE, PINNED, DEVICE = 0, 1, 2
ALLOC, FREE = 0, 1
STREAM_SYNC, CONTEXT_SYNC = 3, 4
PUSH_POP, MARK = 59, 34


def gpid(pid: int) -> int:
    """A serialized GlobalId of process `pid` (vm 0)."""
    return pid << 24


def gtid(pid: int, tid: int) -> int:
    return (pid << 24) | tid


class Export:
    """Builds one export: `api(...)` records a runtime call and returns its correlation id."""

    def __init__(self, pid: int = 4242, enums: bool = True) -> None:
        self.pid = pid
        self.rows: dict[str, list[dict]] = {}
        self.strings: dict[str, int] = {}
        self.corr = 0
        self.enums = enums

    def string(self, s: str) -> int:
        return self.strings.setdefault(s, len(self.strings) + 1)

    def add(self, table: str, **row) -> None:
        self.rows.setdefault(table, []).append(row)

    def api(self, name: str, t: int) -> int:
        self.corr += 1
        self.add(
            "CUPTI_ACTIVITY_KIND_RUNTIME",
            start=t,
            end=t + 5,
            eventClass=1,
            globalTid=gtid(self.pid, 1),
            correlationId=self.corr,
            nameId=self.string(name),
            returnValue=0,
        )
        return self.corr

    def mem(self, t, op, addr, n, api, kind=DEVICE, pool=None, device=0) -> None:
        corr = self.api(api, t)
        self.add(
            "CUDA_GPU_MEMORY_USAGE_EVENTS",
            start=t,
            globalPid=gpid(self.pid),
            deviceId=device,
            contextId=1,
            address=addr,
            pc=0,
            bytes=n,
            memKind=kind,
            memoryOperationType=op,
            correlationId=corr,
            localMemoryPoolAddress=pool,
        )

    def activity(self, kind, start, end, stream, corr, device=0, **cols) -> None:
        """A CUPTI_ACTIVITY_KIND_<kind> row: the columns every activity table shares."""
        self.add(
            f"CUPTI_ACTIVITY_KIND_{kind}",
            start=start,
            end=end,
            deviceId=device,
            contextId=1,
            streamId=stream,
            correlationId=corr,
            globalPid=gpid(self.pid),
            **cols,
        )

    def kernel(self, issued, start, end, name, stream=7, device=0) -> None:
        corr = self.api("cudaLaunchKernel_v7000", issued)
        sid = self.string(name)
        self.activity("KERNEL", start, end, stream, corr, device, demangledName=sid, shortName=sid)

    def copy(self, issued, start, end, n, kind, src, dst, stream=7) -> None:
        corr = self.api("cudaMemcpyAsync_v3020", issued)
        self.activity(
            "MEMCPY", start, end, stream, corr, bytes=n, copyKind=kind, srcKind=src, dstKind=dst
        )

    def memset(self, issued, start, end, n, stream=7) -> None:
        corr = self.api("cudaMemsetAsync_v3020", issued)
        self.activity("MEMSET", start, end, stream, corr, value=0, bytes=n)

    def sync(self, start, end, kind, stream) -> None:
        corr = self.api("cudaStreamSynchronize_v3020", start)
        self.activity("SYNCHRONIZATION", start, end, stream, corr, syncType=kind, eventId=0)

    def nvtx(self, start, end, text, etype=PUSH_POP) -> None:
        self.add(
            "NVTX_EVENTS",
            start=start,
            end=end,
            eventType=etype,
            text=text,
            globalTid=gtid(self.pid, 1),
        )

    def context(self, null_stream=7, device=0) -> None:
        self.add(
            "TARGET_INFO_CUDA_CONTEXT_INFO",
            nullStreamId=null_stream,
            hwId=0,
            vmId=0,
            processId=self.pid,
            deviceId=device,
            contextId=1,
        )

    def write(self, path: Path, drop: tuple[str, ...] = (), schema: dict | None = None) -> Path:
        schema = {**SCHEMA, **(schema or {})}
        path.unlink(missing_ok=True)  # a fresh export each time
        con = sqlite3.connect(path)
        if self.strings:
            self.rows["StringIds"] = [{"id": i, "value": s} for s, i in self.strings.items()]
        for table, rows in self.rows.items():
            if table in drop:
                continue
            con.execute(f"CREATE TABLE {table} ({schema[table]})")
            have = {r[1] for r in con.execute(f"PRAGMA table_info({table})")}
            for full in rows:  # an older schema's table: the columns it has
                row = {c: v for c, v in full.items() if c in have}
                cols = ", ".join(f"[{c}]" for c in row)
                con.execute(
                    f"INSERT INTO {table} ({cols}) VALUES ({', '.join('?' * len(row))})",
                    tuple(row.values()),
                )
        if self.enums:
            for table, rows in ENUMS.items():
                con.execute(
                    f"CREATE TABLE {table} (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT)"
                )
                con.executemany(f"INSERT INTO {table} VALUES (?, ?, ?)", rows)
        con.commit()
        con.close()
        return path
