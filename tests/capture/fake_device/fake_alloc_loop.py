#!/usr/bin/env python3
"""An emulated alloc_loop (tests/capture/fixtures/alloc_loop.cu) on an emulated card: the
card's used bytes live in $FAKE_CARD (a JSON file, under a lock), shared by every fake
process; each takes a 527 MiB context and the fixture's buffers as its source does and
prints the fixture's lines. A buffer that does not fit is an OOM (exit 3).

Run under `cuzk-sim capture` (CUDA_INJECTION64_PATH and CUZK_SIM_CAPTURE_DIR set), it
also writes the recorder file the injection library would: CUPTI's records of the
fixture's calls, in the library's format, enum fields as CUPTI's C numbers, with
cuMemGetInfo samples (recorded_trace below)."""

import fcntl
import json
import os
import sys
import time
from pathlib import Path

MiB = 1 << 20
CONTEXT, TOTAL = 527 * MiB, 143771 * MiB
PID = os.getpid()
HELD = [0]  # what this process holds (the driver takes it back when the process dies)


def card(delta: int, what: str) -> int:
    """Take (delta > 0) or give back bytes; the free bytes after; exit 3 if they do not fit."""
    with open(os.environ["FAKE_CARD"] + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = os.environ["FAKE_CARD"]
        used = json.loads(Path(path).read_text())["used"] if os.path.exists(path) else 0
        if used + delta > TOTAL:
            Path(path).write_text(json.dumps({"used": used - HELD[0]}))
            error = "cudaErrorMemoryAllocation"
            print(f"FIXTURE oom pid={PID} buffer={what} error={error}", flush=True)
            sys.exit(3)
        used += delta
        HELD[0] += delta
        Path(path).write_text(json.dumps({"used": used}))
        return TOTAL - used


def line(event: str, free: int, it: int | None = None) -> None:
    at = "" if it is None else f" iter={it}"
    used = TOTAL - free
    print(f"FIXTURE {event} pid={PID}{at} free={free} total={TOTAL} used={used}", flush=True)


class Recorder:
    """The records of the fixture's calls, as capture/inject/cuzk_capture.c writes them."""

    def __init__(self) -> None:
        self.t, self.corr, self.records = (
            1000,
            0,
            [{"kind": "CONTEXT", "context_id": 1, "device_id": 0, "null_stream_id": 7}],
        )

    def call(self, api: str) -> int:
        self.t += 100
        self.corr += 1
        self.records.append(
            {
                "kind": "RUNTIME",
                "cbid": 0,
                "start": self.t,
                "end": self.t + 5,
                "correlation_id": self.corr,
                "thread_id": 1,
                "api_name": api,
            }
        )
        return self.corr

    def mem(self, api: str, op: int, kind: int, address: int, nbytes: int, is_async: bool) -> None:
        corr = self.call(api)
        self.records.append(
            {
                "kind": "MEMORY2",
                "memory_operation_type": op,
                "memory_kind": kind,
                "correlation_id": corr,
                "address": address,
                "bytes": nbytes,
                "timestamp": self.t + 1,
                "device_id": 0,
                "context_id": 1,
                "stream_id": 13 if is_async else 0,
                "is_async": is_async,
            }
        )

    def work(self, kind: str, api: str, **fields) -> None:
        corr = self.call(api)
        self.records.append(
            {
                "kind": kind,
                "start": self.t + 10,
                "end": self.t + 60,
                "device_id": 0,
                "context_id": 1,
                "stream_id": 13,
                "correlation_id": corr,
                **fields,
            }
        )

    def meminfo(self, used: int) -> None:
        self.records.append(
            {
                "kind": "MEMINFO",
                "timestamp": self.t + 6,
                "device_id": 0,
                "free": TOTAL - used,
                "total": TOTAL,
                "after": "cudaMalloc",
            }
        )


def recorded_trace(iters: int) -> list[dict]:
    r = Recorder()
    r.mem("cudaHostAlloc_v3020", 1, 2, 0x7000, 256 * MiB, False)
    for _ in range(iters):
        r.mem("cudaMalloc_v3020", 1, 3, 0xA000, 1024 * MiB, False)
        r.meminfo(CONTEXT + 1024 * MiB)
        r.mem("cudaMalloc_v3020", 1, 3, 0xB000, 512 * MiB, False)
        r.mem("cudaMallocAsync_v11020", 1, 3, 0xC000, 64 * MiB, True)
        r.work(
            "MEMCPY", "cudaMemcpyAsync_v3020", copy_kind=1, src_kind=2, dst_kind=3, bytes=256 * MiB
        )
        r.work("MEMSET", "cudaMemsetAsync_v3020", bytes=64 * MiB)
        r.work("CONCURRENT_KERNEL", "cudaLaunchKernel_v7000", name="_Z5twicePKfPfm")
        r.work(
            "MEMCPY", "cudaMemcpyAsync_v3020", copy_kind=2, src_kind=3, dst_kind=2, bytes=256 * MiB
        )
        r.mem("cudaFreeAsync_v11020", 2, 3, 0xC000, 64 * MiB, True)
        r.work("SYNCHRONIZATION", "cudaStreamSynchronize_v3020", type=3)
        r.mem("cudaFree_v3020", 2, 3, 0xB000, 512 * MiB, False)
        r.mem("cudaFree_v3020", 2, 3, 0xA000, 1024 * MiB, False)
    r.mem("cudaFreeHost_v3020", 2, 2, 0x7000, 256 * MiB, False)
    return r.records


args = dict(zip(sys.argv[1::2], sys.argv[2::2], strict=False))
if os.environ.get("CUDA_INJECTION64_PATH") and os.environ.get("CUZK_SIM_CAPTURE_DIR"):
    trace = {"pid": PID, "records": recorded_trace(int(args.get("--iters", 2))), "notes": []}
    Path(os.environ["CUZK_SIM_CAPTURE_DIR"], f"trace-{PID}.json").write_text(json.dumps(trace))
if "--ballast" in args:
    free = card(CONTEXT, "context")
    want = max(free - int(args["--ballast"]), 0) // (2 * MiB) * (2 * MiB)
    free = card(want, "ballast")
    print(f"BALLAST free={free} total={TOTAL} held={want} pid={PID}", flush=True)
    for _ in range(1200):
        if os.path.exists(args["--stop-file"]):
            break
        time.sleep(0.05)
    card(-(want + CONTEXT), "")
    sys.exit(0)
line("context", card(CONTEXT, "context"))
for it in range(int(args.get("--iters", 2))):
    card(1024 * MiB, "a")
    card(512 * MiB, "b")
    free = card(64 * MiB if it == 0 else 0, "c")  # the pool keeps it after the first
    line("peak", free, it)
    time.sleep(0.6 if int(args.get("--hold-ms", 0)) else 0)
    card(-1536 * MiB, "")
card(-(64 * MiB + CONTEXT), "")
print(f"FIXTURE done pid={PID}", flush=True)
