"""The trace model: the events of a CUDA program as recorded, before they become a plan.

Two recorders fill it: an Nsight Systems SQLite export (`capture/nsys.py`) and CUPTI's
activity records (`capture/cupti_records.py`). Both say the same things — device memory
allocated and freed (with the API that did it), page-locked host memory, copies, memsets,
kernels, synchronisations, NVTX ranges and markers — per process (pid) and device, with
nanosecond timestamps. What a recorder did not record is named in `Trace.missing`, so
the summary can say what the plan lacks instead of guessing silently.

Times: `start_ns`/`end_ns` are when the device ran the work; `issued_ns` is when the
host issued it (the API call's start), when known, else the work's start. A plan follows
host program order, so events are ordered by `issued_ns`. Memory events are host-side:
their `t_ns` is the API call's time.

`Trace.check()` holds the memory events to what CUDA allows (no negative size, no free
of an address that was never allocated, no second allocation of a live address) and
raises `TraceError` naming the event.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

from cuzk_sim.io.errors import InputError

MemOp = Literal["alloc", "free"]
# device: cudaMalloc & co; host_pinned: page-locked host memory; managed: unified memory
# (not charged to one device's VRAM by the plan); other: arrays, static, unknown kinds
MemSpace = Literal["device", "host_pinned", "managed", "other"]
Allocator = Literal["sync", "async"]
CopyDirection = Literal["HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "other"]
HostMemory = Literal["pageable", "pinned"]
SyncKind = Literal["stream", "context", "event", "stream_wait_event", "other"]
RangeKind = Literal["range", "mark"]

MAX_EVENT_BYTES = 2**50  # as plan.schema.MAX_BYTES: far beyond any card, finite


class TraceError(InputError):
    """A trace that does not describe a CUDA program; the message names the event."""


@dataclass(frozen=True)
class MemEvent:
    """One allocation or free. api: the call that did it (`cudaMalloc`, `cuMemAllocAsync`,
    `cudaHostAlloc`, ...; "" when not recorded); allocator: from the API (`async` for the
    stream-ordered pool calls), None when the API is unknown."""

    t_ns: int
    pid: int
    device: int
    op: MemOp
    address: int
    bytes: int
    memory: MemSpace = "device"
    api: str = ""
    allocator: Allocator | None = None
    stream: int | None = None


@dataclass(frozen=True)
class CopyEvent:
    start_ns: int
    end_ns: int
    pid: int
    device: int
    bytes: int
    direction: CopyDirection
    host_memory: HostMemory | None = None  # the host side's memory (None: no host side)
    stream: int = 0
    issued_ns: int | None = None


@dataclass(frozen=True)
class MemsetEvent:
    start_ns: int
    end_ns: int
    pid: int
    device: int
    bytes: int
    stream: int = 0
    issued_ns: int | None = None


@dataclass(frozen=True)
class KernelEvent:
    start_ns: int
    end_ns: int
    pid: int
    device: int
    name: str
    stream: int = 0
    issued_ns: int | None = None


@dataclass(frozen=True)
class SyncEvent:
    """A host wait: on a stream, the whole context, or an event (`event` names the CUDA
    event; `stream` is then the stream it was recorded on, when known)."""

    start_ns: int
    end_ns: int
    pid: int
    device: int
    kind: SyncKind
    stream: int | None = None
    event: int | None = None


@dataclass(frozen=True)
class RangeEvent:
    """An NVTX range (push/pop or start/end) or, with `end_ns` None, a marker."""

    start_ns: int
    end_ns: int | None
    pid: int
    name: str
    kind: RangeKind = "range"


@dataclass(frozen=True)
class Process:
    """A recorded process: its pid, the devices it used, and per device its default
    (NULL) stream and the bytes its CUDA context holds, where the recorder knew them."""

    pid: int
    name: str = ""
    default_stream: dict[int, int] = field(default_factory=dict)  # device -> stream id
    context_bytes: dict[int, int] = field(default_factory=dict)  # device -> bytes


EVENT_TYPES = {
    "memory": MemEvent,
    "copies": CopyEvent,
    "memsets": MemsetEvent,
    "kernels": KernelEvent,
    "syncs": SyncEvent,
    "ranges": RangeEvent,
}


@dataclass(frozen=True)
class Trace:
    source: str  # the file or command it was recorded from
    recorder: str  # "nsys" | "cupti"
    processes: tuple[Process, ...] = ()
    memory: tuple[MemEvent, ...] = ()
    copies: tuple[CopyEvent, ...] = ()
    memsets: tuple[MemsetEvent, ...] = ()
    kernels: tuple[KernelEvent, ...] = ()
    syncs: tuple[SyncEvent, ...] = ()
    ranges: tuple[RangeEvent, ...] = ()
    missing: tuple[str, ...] = ()  # what the recorder did not record, one line each

    def pids(self) -> list[int]:
        """Every pid with device work or memory, ascending."""
        seen = {e.pid for kind in ("memory", "copies", "memsets", "kernels") for e in self[kind]}
        return sorted(seen)

    def devices(self, pid: int) -> list[int]:
        seen = {
            e.device
            for kind in ("memory", "copies", "memsets", "kernels", "syncs")
            for e in self[kind]
            if e.pid == pid and not (kind == "memory" and e.memory == "host_pinned")
        }
        return sorted(seen)

    def __getitem__(self, kind: str) -> tuple[Any, ...]:
        return getattr(self, kind)

    def process(self, pid: int) -> Process:
        return next((p for p in self.processes if p.pid == pid), Process(pid))

    def check(self) -> None:
        """Sizes in range, and per process every free names a live allocation and no live
        address is allocated twice (TraceError names the event)."""
        live: dict[tuple[int, int, str, int], MemEvent] = {}
        for e in sorted(self.memory, key=lambda e: e.t_ns):
            where = f"{self.source}: memory event at {e.t_ns} ns (pid {e.pid}, {e.op} {e.api})"
            if not 0 <= e.bytes <= MAX_EVENT_BYTES:
                raise TraceError(f"{where}: bytes {e.bytes} out of range 0..2^50")
            space = "host" if e.memory == "host_pinned" else "device"
            key = (e.pid, -1 if space == "host" else e.device, space, e.address)
            if e.op == "alloc":
                if key in live:
                    raise TraceError(
                        f"{where}: address {e.address:#x} allocated again while live "
                        f"(allocated at {live[key].t_ns} ns)"
                    )
                live[key] = e
            elif live.pop(key, None) is None:
                raise TraceError(
                    f"{where}: free of address {e.address:#x}, which no recorded "
                    "allocation returned"
                )
        for kind in ("copies", "memsets", "kernels", "syncs"):
            for e in self[kind]:
                if e.end_ns < e.start_ns:
                    raise TraceError(
                        f"{self.source}: {kind[:-1]} at {e.start_ns} ns ends before it starts"
                    )
                if kind in ("copies", "memsets") and not 0 <= e.bytes <= MAX_EVENT_BYTES:
                    raise TraceError(
                        f"{self.source}: {kind[:-1]} at {e.start_ns} ns: bytes {e.bytes} "
                        "out of range 0..2^50"
                    )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source, "recorder": self.recorder}
        out["processes"] = [
            {
                "pid": p.pid,
                "name": p.name,
                "default_stream": {str(k): v for k, v in p.default_stream.items()},
                "context_bytes": {str(k): v for k, v in p.context_bytes.items()},
            }
            for p in self.processes
        ]
        for kind in EVENT_TYPES:
            out[kind] = [asdict(e) for e in self[kind]]
        out["missing"] = list(self.missing)
        return out

    @classmethod
    def from_dict(cls, data: Any, source: str = "<trace>") -> Trace:
        """The inverse of to_dict; a field of the wrong name or a missing one is a
        TraceError naming the list and index."""
        if not isinstance(data, dict):
            raise TraceError(f"{source}: a trace is a JSON object")
        try:
            procs = tuple(
                Process(
                    int(p["pid"]),
                    str(p.get("name", "")),
                    {int(k): int(v) for k, v in p.get("default_stream", {}).items()},
                    {int(k): int(v) for k, v in p.get("context_bytes", {}).items()},
                )
                for p in data.get("processes", [])
            )
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise TraceError(f"{source}: processes: {e}") from None
        events: dict[str, tuple[Any, ...]] = {}
        for kind, cls_ in EVENT_TYPES.items():
            names = {f.name for f in fields(cls_)}
            out = []
            for i, raw in enumerate(data.get(kind, [])):
                if not isinstance(raw, dict) or set(raw) - names:
                    raise TraceError(f"{source}: {kind}[{i}]: expected fields of {sorted(names)}")
                try:
                    out.append(cls_(**raw))
                except TypeError as e:
                    raise TraceError(f"{source}: {kind}[{i}]: {e}") from None
            events[kind] = tuple(out)
        return cls(
            source=str(data.get("source", source)),
            recorder=str(data.get("recorder", "?")),
            processes=procs,
            missing=tuple(str(m) for m in data.get("missing", [])),
            **events,
        )


ASYNC_APIS = frozenset(
    ("cudaMallocAsync", "cudaMallocFromPoolAsync", "cuMemAllocAsync", "cuMemAllocFromPoolAsync")
    + ("cudaFreeAsync", "cuMemFreeAsync")
)
SYNC_APIS = frozenset(
    ("cudaMalloc", "cudaMallocPitch", "cudaMalloc3D", "cuMemAlloc", "cuMemAllocPitch")
    + ("cudaFree", "cuMemFree")
)


def api_base(api: str) -> str:
    """`cudaMalloc_v3020` -> `cudaMalloc`, `cuMemAlloc_v2` -> `cuMemAlloc` (the version
    suffix Nsight Systems and CUPTI put on API names)."""
    return re.sub(r"_(v\d+|ptsz|ptds)$", "", re.sub(r"_v\d+(_ptsz|_ptds)?$", "", api))


def allocator_of(api: str) -> Allocator | None:
    """The plan's allocator for an allocation API: the stream-ordered pool calls
    (cudaMallocAsync, cudaMallocFromPoolAsync, cuMemAllocAsync, cuMemAllocFromPoolAsync)
    are `async`; cudaMalloc / cuMemAlloc / their pitch variants `sync`; else None."""
    base = api_base(api)
    if base in ASYNC_APIS:
        return "async"
    if base in SYNC_APIS:
        return "sync"
    return None


PINNED_APIS = (
    "cudaHostAlloc",
    "cudaMallocHost",
    "cudaHostRegister",
    "cuMemHostAlloc",
    "cuMemAllocHost",
    "cuMemHostRegister",
    "cudaFreeHost",
    "cudaHostUnregister",
    "cuMemFreeHost",
    "cuMemHostUnregister",
)


def is_pinned_api(api: str) -> bool:
    """Whether `api` pins or unpins host memory (its versioned name too: `_v2`)."""
    return api_base(api) in PINNED_APIS
