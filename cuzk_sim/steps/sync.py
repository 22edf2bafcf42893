"""`sync`: wait until everything issued on a stream has finished."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import simpy

from cuzk_sim.model.fast_state import FastRun, at_instant, finish
from cuzk_sim.model.runtime import join, meet, settle, stream_end
from cuzk_sim.steps.base import Name, StepIn, StepKind


@dataclass(frozen=True)
class Sync:
    """Wait until everything issued on `stream` has finished."""

    stream: str
    op: Literal["sync"] = "sync"


class SyncIn(StepIn):
    op: Literal["sync"]
    stream: Name


def step_sync(m, w, cp, pc, seconds, part):
    s = cp.steps[pc]
    yield from join(m, w, s.stream)
    ready = w.streams.get(s.stream, 0.0)
    if ready > w.t_ready:
        w.t_ready = ready
    if s.stream == "compute":
        w.drain()
    mem = w.device.memory
    if mem.syncs_matter:  # a pool that gives bytes back at a sync point: meet the others
        yield from meet(m, w)
        settle(m, w, m.env.now)
        if mem.on_sync() and m.recorder.timeline is not None:
            m.recorder.timeline.vram_change(m.env.now, w.device.index, mem.used, None, 0, pc)
    return pc + 1


# --- the fast handler: stamped in a critical section, no pool trim while replaying ---


def _at(x: FastRun, pc: int, now: float) -> int:
    x.settle(now)
    mem, tl = x.mem, x.tl
    if x.replay is None and mem.on_sync() and tl is not None:
        tl.vram_change(now, x.dev.index, mem.used, None, 0, pc)
    return pc + 1


def _joined(x: FastRun, pc: int) -> Any:
    w, s = x.w, x.steps[pc]
    ready = w.streams.get(s.stream, 0.0)
    if ready > w.t_ready:
        w.t_ready = ready
    if s.stream == "compute":
        w.drain()
    if not x.mem.syncs_matter:
        return pc + 1
    return at_instant(x, pc, _at)


def _after_join(x: FastRun, pc: int) -> Any:
    yield from stream_end(x.m, x.w, x.steps[pc].stream)
    return (yield from finish(x, pc, _joined(x, pc)))


def _fast(x: FastRun, pc: int) -> Any:
    """Joins a helper thread's stream without a generator when its work has ended."""
    if x.shared_cores:
        streams, stream = x.w.streams, x.steps[pc].stream
        ev = streams.get(stream)
        if isinstance(ev, simpy.Event):
            if not ev.processed:
                return _after_join(x, pc)
            streams[stream] = ev.value  # runtime.stream_end, with nothing to wait for
    return _joined(x, pc)


def fast(s: Sync, pc: int, x: FastRun) -> Any:
    return _fast


KIND = StepKind(
    op="sync",
    step=Sync,
    schema=SyncIn,
    plain=step_sync,
    fast=fast,
    touches_host=lambda s: True,
    joins=lambda s: s.stream,
)
