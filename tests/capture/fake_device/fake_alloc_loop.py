#!/usr/bin/env python3
"""An emulated alloc_loop (tests/capture/fixtures/alloc_loop.cu) on an emulated card: the
card's used bytes live in $FAKE_CARD (a JSON file, under a lock), shared by every fake
process; each takes a 527 MiB context and the fixture's buffers as its source does and
prints the fixture's lines. A buffer that does not fit is an OOM (exit 3)."""

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


args = dict(zip(sys.argv[1::2], sys.argv[2::2], strict=False))
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
