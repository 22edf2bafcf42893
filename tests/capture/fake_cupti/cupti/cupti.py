"""The part of cupti-python's activity API that cuzk_sim.capture.cupti_child uses
(names as NVIDIA documents them), replaying canned records from $FAKE_CUPTI_RECORDS:
a JSON list of records whose `kind` and enum fields are member names, as the real
activity objects carry numbers of those enums. Our own test double, not NVIDIA's code."""

import enum
import json
import os
from types import SimpleNamespace

ActivityKind = enum.IntEnum(
    "ActivityKind",
    "MEMCPY MEMSET KERNEL DRIVER RUNTIME CONTEXT CONCURRENT_KERNEL MARKER SYNCHRONIZATION "
    "MEMORY2 MEMORY_POOL",
)
ActivityMemoryOperationType = enum.IntEnum(
    "ActivityMemoryOperationType", "INVALID ALLOCATION RELEASE", start=0
)
ActivityMemoryKind = enum.IntEnum(
    "ActivityMemoryKind", "UNKNOWN PAGEABLE PINNED DEVICE ARRAY MANAGED", start=0
)
ActivityMemcpyKind = enum.IntEnum(
    "ActivityMemcpyKind", "UNKNOWN HTOD DTOH HTOA ATOH ATOA ATOD DTOA DTOD HTOH PTOP", start=0
)
ActivitySynchronizationType = enum.IntEnum(
    "ActivitySynchronizationType",
    "UNKNOWN EVENT_SYNCHRONIZE STREAM_WAIT_EVENT STREAM_SYNCHRONIZE CONTEXT_SYNCHRONIZE",
    start=0,
)
ActivityMemoryPoolOperationType = enum.IntEnum(
    "ActivityMemoryPoolOperationType", "INVALID CREATED DESTROYED TRIMMED", start=0
)
CallbackDomain = enum.IntEnum("CallbackDomain", "DRIVER_API RUNTIME_API")
ENUMS = {
    "memory_operation_type": ActivityMemoryOperationType,
    "memory_kind": ActivityMemoryKind,
    "copy_kind": ActivityMemcpyKind,
    "src_kind": ActivityMemoryKind,
    "dst_kind": ActivityMemoryKind,
    "type": ActivitySynchronizationType,
}
_state = {"callbacks": None, "enabled": [], "names": {}}


def activity_register_callbacks(requested, completed):
    _state["callbacks"] = (requested, completed)


def activity_enable(kind):
    _state["enabled"].append(ActivityKind(kind).name)


def get_callback_name(domain, cbid):
    return _state["names"][cbid]


def _objects():
    out = []
    with open(os.environ["FAKE_CUPTI_RECORDS"]) as f:
        canned = json.load(f)
    for i, raw in enumerate(canned):
        rec = dict(raw)
        rec["kind"] = ActivityKind[rec["kind"]].value
        for field, enum_cls in ENUMS.items():
            if isinstance(rec.get(field), str):
                rec[field] = enum_cls[rec[field]].value
        if "api_name" in rec:
            _state["names"][i] = rec.pop("api_name")
            rec["cbid"] = i
        out.append(SimpleNamespace(**rec))
    return out


def activity_flush_all(flag):
    requested, completed = _state["callbacks"]
    size, _ = requested()
    assert size > 0
    wanted = set(_state["enabled"])
    completed([a for a in _objects() if ActivityKind(a.kind).name in wanted])


def activity_get_num_dropped_records(context, stream):
    return 0
