"""Chrome trace-event JSON of a run (opens in Perfetto / chrome://tracing).

One process per GPU (tracks: its workers' partitions, kernels, copies, mutex waits and
holds; counters of VRAM in use and VRAM by buffer), one "host" process for synthesis and
CPU threads, with counters of the host RAM budget (reserved, pinned) and of the CPU
threads asked for; OOMs, fallbacks and skips are instant events carrying the ledger.

Bounded for long runs: it reads a bounded recording (cuzk_sim/recording.py), so counters
come one point per bucket (the bucket's peak), detail slices (kernels, copies, CPU steps,
locks) only inside the recording's detail window and budget, and `window` cuts everything
to an interval. Slices carry args: the partition, and the step's figures from the plan
(bytes, direction and pinned of a copy; kind and size of a kernel or CPU step; the mutex).
"""

from __future__ import annotations

import json
from typing import Any

from cuzk_sim.plan import Plan
from cuzk_sim.result import SimResult, Span

HOST_PID = 1000
US = 1e6
GIB = 2**30


def step_args(plans: dict[str, Plan]) -> dict[str, dict[str, Any]]:
    """Step name -> the args its slices carry (first plan that names it wins)."""
    out: dict[str, dict[str, Any]] = {}
    for plan in plans.values():
        for s in plan.steps:
            name = getattr(s, "name", None)
            if name is None or name in out or s.op not in ("copy", "kernel", "cpu"):
                continue
            if s.op == "copy":
                out[name] = {"bytes": s.bytes, "direction": s.direction, "pinned": s.pinned}
            else:
                out[name] = {"kind": s.kind, "size": s.size}
    return out


def _partition_of(spans: list[Span]) -> dict[str, list[tuple[float, float, str]]]:
    by_track: dict[str, list[tuple[float, float, str]]] = {}
    for s in spans:
        if s.cat == "partition":
            by_track.setdefault(s.track, []).append((s.start_s, s.end_s, s.name))
    for v in by_track.values():
        v.sort()
    return by_track


def _lookup(parts: list[tuple[float, float, str]], t: float) -> str | None:
    import bisect

    i = bisect.bisect_right(parts, (t, float("inf"), "")) - 1
    if i >= 0 and parts[i][0] <= t <= parts[i][1]:
        return parts[i][2]
    return None


def chrome_trace(
    result: SimResult,
    args: dict[str, dict[str, Any]] | None = None,
    window: tuple[float, float] | None = None,
) -> dict[str, Any]:
    ev = _Events()
    args = args or {}
    lo, hi = window if window is not None else (float("-inf"), float("inf"))
    for dev in sorted(result.vram_total_bytes):
        ev.events.append(
            {"ph": "M", "name": "process_name", "pid": dev, "args": {"name": f"GPU {dev}"}}
        )
    ev.events.append({"ph": "M", "name": "process_name", "pid": HOST_PID, "args": {"name": "host"}})
    _span_events(ev, result, args, lo, hi)
    if result.timeline is not None:  # decimated counters: one point per bucket, its peak
        _bucket_counters(ev.events, result, lo, hi)
    else:  # a full recording: every sample
        _sample_counters(ev.events, result)
    _oom_events(ev, result, lo, hi)
    return {"traceEvents": ev.events, "displayTimeUnit": "ms", "otherData": _other_data(result)}


class _Events:
    """The trace's events, and a thread id per (process, track) named when first used."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.tids: dict[tuple[int, str], int] = {}

    def tid(self, pid: int, track: str) -> int:
        key = (pid, track)
        if key not in self.tids:
            self.tids[key] = len(self.tids) + 1
            self.events.append(
                {
                    "ph": "M",
                    "name": "thread_name",
                    "pid": pid,
                    "tid": self.tids[key],
                    "args": {"name": track},
                }
            )
        return self.tids[key]


def _span_events(
    ev: _Events, result: SimResult, args: dict[str, dict[str, Any]], lo: float, hi: float
) -> None:
    """One complete event per span in the window, its partition (or proof) in its args."""
    # partition spans: where a worker's detail slice belongs (its own track's partition)
    partitions = _partition_of(result.spans)
    for s in result.spans:
        if s.end_s < lo or s.start_s > hi:
            continue
        pid = HOST_PID if s.device < 0 else s.device
        track = s.track if s.cat in ("partition", "synthesis") else f"{s.track} {s.cat}"
        a: dict[str, Any] = {}
        if s.cat == "partition":
            a["partition"] = s.name
        elif s.cat == "synthesis":
            a["proof"] = s.name
        else:
            part = _lookup(partitions.get(s.track, []), s.start_s)
            if part is not None:
                a["partition"] = part
            if s.cat == "lock":
                a["mutex"] = s.name.split(" ", 1)[-1]
            a.update(args.get(s.name, {}))
        ev.events.append(
            {
                "ph": "X",
                "name": s.name,
                "cat": s.cat,
                "pid": pid,
                "tid": ev.tid(pid, track),
                "ts": s.start_s * US,
                "dur": max(s.end_s - s.start_s, 0.0) * US,
                "args": a,
            }
        )


def _bucket_counters(events: list[dict[str, Any]], result: SimResult, lo: float, hi: float) -> None:
    """VRAM (used and by buffer), host RAM and CPU threads: each bucket's peak."""
    tl = result.timeline
    assert tl is not None
    end = result.sim_time_s
    for dev in sorted(tl.vram):
        for t, b in tl.device_series(dev, end):
            if lo <= t <= hi:
                events.append(
                    {
                        "ph": "C",
                        "name": "VRAM used (GiB)",
                        "pid": dev,
                        "ts": t * US,
                        "args": {"used": b.peak / GIB},
                    }
                )
                parts = b.peak_parts or {}
                events.append(
                    {
                        "ph": "C",
                        "name": "VRAM by buffer (GiB)",
                        "pid": dev,
                        "ts": t * US,
                        "args": {k: v / GIB for k, v in sorted(parts.items())},
                    }
                )
    pinned = {t: b.peak for t, b in tl.pinned.series(end)}
    for t, b in tl.host.series(end):
        if lo <= t <= hi:
            p = pinned.get(t, 0)
            events.append(
                {
                    "ph": "C",
                    "name": "host RAM budget used (GiB)",
                    "pid": HOST_PID,
                    "ts": t * US,
                    "args": {"reserved": (b.peak - p) / GIB, "pinned": p / GIB},
                }
            )
    for t, b in tl.cores.series(end):
        if lo <= t <= hi:
            events.append(
                {
                    "ph": "C",
                    "name": "CPU threads asked for",
                    "pid": HOST_PID,
                    "ts": t * US,
                    "args": {"threads": b.peak},
                }
            )


def _sample_counters(events: list[dict[str, Any]], result: SimResult) -> None:
    """VRAM, host RAM and CPU threads: every sample of a full recording."""
    for t, dev, used in result.vram_samples:
        events.append(
            {
                "ph": "C",
                "name": "VRAM used (GiB)",
                "pid": dev,
                "ts": t * US,
                "args": {"used": used / GIB},
            }
        )
    for t, used, pinned_b in result.host_samples:
        events.append(
            {
                "ph": "C",
                "name": "host RAM budget used (GiB)",
                "pid": HOST_PID,
                "ts": t * US,
                "args": {"reserved": (used - pinned_b) / GIB, "pinned": pinned_b / GIB},
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


def _oom_events(ev: _Events, result: SimResult, lo: float, hi: float) -> None:
    """An instant event per OOM, fallback or skip, on its worker's track."""
    for e in result.oom_events:
        if not lo <= e.time_s <= hi:
            continue
        pid = HOST_PID if e.where == "host" else e.device
        what = "OOM" if e.fatal else "skip" if e.reason.startswith("skip") else "fallback"
        ev.events.append(
            {
                "ph": "i",
                "s": "g",
                "name": f"{what} {e.buffer}",
                "pid": pid,
                "tid": ev.tid(pid, e.worker),
                "ts": e.time_s * US,
                "args": {
                    "partition": e.partition,
                    "buffer": e.buffer,
                    "requested": e.requested_bytes,
                    "free": e.free_bytes,
                    "ledger": e.ledger,
                },
            }
        )


def _other_data(result: SimResult) -> dict[str, Any]:
    """The trace's otherData: scenario, seed, device, and notes on what it leaves out."""
    tl = result.timeline
    other: dict[str, Any] = {"scenario": result.scenario, "seed": result.seed}
    if result.device is not None:  # gpu-run: real, or a dry run whose times are the host's
        other["device"] = result.device
    if result.dry_run:
        other["note_device"] = (
            "DRY RUN: no GPU, memory from the model's allocator ledger; the slices' times "
            "are the host's, not a GPU's"
        )
    if tl is not None and tl.detail_cut_at is not None:
        other["detail_until_s"] = tl.detail_cut_at
        other["note"] = (
            "kernel/copy/lock slices stop at detail_until_s (the span budget); "
            "use --trace-window START..END for detail elsewhere"
        )
    return other


def write_chrome_trace(
    result: SimResult,
    path: str,
    args: dict[str, dict[str, Any]] | None = None,
    window: tuple[float, float] | None = None,
) -> None:
    """Written to a temporary file in the same folder, renamed into place when complete."""
    from cuzk_sim.outputs import write_text

    trace = chrome_trace(result, args, window)
    write_text(path, json.dumps(trace, separators=(",", ":")))  # the C encoder: fast
