"""The recorder that runs inside the captured Python process (started by the
sitecustomize that `cuzk-sim capture` puts first on the child's PYTHONPATH).

It enables CUPTI's activity kinds before the program creates a CUDA context, keeps
every record as a plain dict (capture/cupti_records.py says the shape), and at exit
flushes CUPTI and writes `trace-<pid>.json` into the capture folder. It imports only the
standard library and `cupti` (NVIDIA's cupti-python), so it runs under any Python that
has them. Not testable without a GPU: docs/capture.md says what has run where.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os

KINDS = (
    "RUNTIME",
    "DRIVER",
    "CONTEXT",
    "MEMORY2",
    "MEMORY_POOL",
    "MEMCPY",
    "MEMSET",
    "CONCURRENT_KERNEL",
    "SYNCHRONIZATION",
    "MARKER",
)
FIELDS = (
    "start",
    "end",
    "timestamp",
    "correlation_id",
    "device_id",
    "context_id",
    "stream_id",
    "process_id",
    "name",
    "bytes",
    "address",
    "is_async",
    "null_stream_id",
    "cuda_event_id",
    "id",
    "flags",
    "value",
)
ENUM_FIELDS = {
    "memory_operation_type": "ActivityMemoryOperationType",
    "memory_kind": "ActivityMemoryKind",
    "copy_kind": "ActivityMemcpyKind",
    "src_kind": "ActivityMemoryKind",
    "dst_kind": "ActivityMemoryKind",
    "type": "ActivitySynchronizationType",
    "memory_pool_operation_type": "ActivityMemoryPoolOperationType",
}
BUFFER_BYTES = 8 << 20


def as_dict(activity, cupti) -> dict:  # noqa: ANN001 (CUPTI's objects)
    """One activity record as the plain dict cupti_records reads."""
    kind = cupti.ActivityKind(activity.kind).name
    out: dict = {"kind": kind}
    for f in FIELDS:
        v = getattr(activity, f, None)
        if isinstance(v, (int, str, bool)):
            out[f] = v
    for f, enum in ENUM_FIELDS.items():
        v = getattr(activity, f, None)
        if v is not None:
            try:
                out[f] = getattr(cupti, enum)(v).name
            except (AttributeError, ValueError):
                out[f] = int(v)
    if kind in ("RUNTIME", "DRIVER"):
        domain = (
            cupti.CallbackDomain.RUNTIME_API
            if kind == "RUNTIME"
            else cupti.CallbackDomain.DRIVER_API
        )
        try:
            out["api_name"] = cupti.get_callback_name(domain, activity.cbid)
        except Exception:  # noqa: BLE001 - an unnamed call is still a call
            out["api_name"] = ""
    return out


def start(folder: str) -> None:
    """Enable the activity kinds and register the exit handler that writes the records."""
    from cupti import cupti

    records: list[dict] = []
    notes: list[str] = []

    def requested():  # noqa: ANN202
        return BUFFER_BYTES, 0

    def completed(activities) -> None:  # noqa: ANN001
        records.extend(as_dict(a, cupti) for a in activities)

    cupti.activity_register_callbacks(requested, completed)
    enabled = []
    for name in KINDS:
        try:
            cupti.activity_enable(getattr(cupti.ActivityKind, name))
            enabled.append(name)
        except Exception as e:  # noqa: BLE001 - a kind this CUPTI lacks is said, not fatal
            notes.append(f"activity kind {name} not enabled: {e}")

    def finish() -> None:
        cupti.activity_flush_all(1)
        dropped = 0
        with contextlib.suppress(Exception):  # not every CUPTI has the count
            dropped = int(cupti.activity_get_num_dropped_records(None, 0))
        if dropped:
            notes.append(f"CUPTI dropped {dropped} records")
        if not records:
            return
        pid = os.getpid()
        path = os.path.join(folder, f"trace-{pid}.json")
        with open(path + ".tmp", "w") as f:
            json.dump({"pid": pid, "enabled": enabled, "notes": notes, "records": records}, f)
        os.replace(path + ".tmp", path)

    atexit.register(finish)
