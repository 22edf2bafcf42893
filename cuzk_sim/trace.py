"""Chrome trace-event JSON of a run (opens in Perfetto / chrome://tracing).

One process per GPU (tracks: its workers' partitions, kernels, copies, mutex waits and
holds, and a VRAM counter), one "host" process for synthesis and CPU threads, with
counters of the host RAM budget in use (of which pinned) and of the CPU threads asked
for (when cores are counted); OOMs are instant events carrying the ledger.
"""

from __future__ import annotations

import json
from typing import Any

from cuzk_sim.result import SimResult

HOST_PID = 1000
US = 1e6


def chrome_trace(result: SimResult) -> dict[str, Any]:
    events: list[dict[str, Any]] = []
    tids: dict[tuple[int, str], int] = {}

    def tid(pid: int, track: str) -> int:
        key = (pid, track)
        if key not in tids:
            tids[key] = len(tids) + 1
            events.append(
                {
                    "ph": "M",
                    "name": "thread_name",
                    "pid": pid,
                    "tid": tids[key],
                    "args": {"name": track},
                }
            )
        return tids[key]

    for dev in sorted(result.vram_total_bytes):
        events.append(
            {"ph": "M", "name": "process_name", "pid": dev, "args": {"name": f"GPU {dev}"}}
        )
    events.append({"ph": "M", "name": "process_name", "pid": HOST_PID, "args": {"name": "host"}})
    for s in result.spans:
        pid = HOST_PID if s.device < 0 else s.device
        track = s.track if s.cat in ("partition", "synthesis") else f"{s.track} {s.cat}"
        events.append(
            {
                "ph": "X",
                "name": s.name,
                "cat": s.cat,
                "pid": pid,
                "tid": tid(pid, track),
                "ts": s.start_s * US,
                "dur": max(s.end_s - s.start_s, 0.0) * US,
            }
        )
    for t, dev, used in result.vram_samples:
        events.append(
            {
                "ph": "C",
                "name": "VRAM used (GiB)",
                "pid": dev,
                "ts": t * US,
                "args": {"used": used / 2**30},
            }
        )
    for t, used, pinned in result.host_samples:
        events.append(
            {
                "ph": "C",
                "name": "host RAM budget used (GiB)",
                "pid": HOST_PID,
                "ts": t * US,
                "args": {"reserved": (used - pinned) / 2**30, "pinned": pinned / 2**30},
            }
        )
    for t, threads in result.core_samples:
        events.append(
            {
                "ph": "C",
                "name": "CPU threads asked for",
                "pid": HOST_PID,
                "ts": t * US,
                "args": {"threads": threads},
            }
        )
    for e in result.oom_events:
        pid = HOST_PID if e.where == "host" else e.device
        events.append(
            {
                "ph": "i",
                "s": "g",
                "name": f"{'OOM' if e.fatal else 'fallback'} {e.buffer}",
                "pid": pid,
                "tid": tid(pid, e.worker),
                "ts": e.time_s * US,
                "args": {"requested": e.requested_bytes, "free": e.free_bytes, "ledger": e.ledger},
            }
        )
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {"scenario": result.scenario, "seed": result.seed},
    }


def write_chrome_trace(result: SimResult, path: str) -> None:
    with open(path, "w") as f:
        json.dump(chrome_trace(result), f)
