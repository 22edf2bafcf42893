"""`unlock`: release a mutex the worker holds.

On a device with one in-order queue (our prover on CUDA's legacy default stream,
`SimDevice.shared_stream`) the unlock first synchronizes that stream, mutex or not: the
prover's `Device.unlock` (gpu/device.py) waits for the stream so that the GPU work ends
inside the lock, and a legacy-stream synchronize waits for everything issued to it so far
by any thread. So the worker goes on (and gives its mutex back) when the queue has run
what was in it at the worker's instant: with a mutex that is its own work, already waited
for by its last copy to the host; without one it is also what the other workers queued
meanwhile (docs/validation.md, "Races": why w2-nomutex-18 missed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from cuzk_sim.model.fast_state import MEET, FastRun, at_instant
from cuzk_sim.model.runtime import meet, release, settle
from cuzk_sim.steps.base import MutexScope, Name, StepIn, StepKind


@dataclass(frozen=True)
class Unlock:
    mutex: str
    scope: MutexScope = "device"
    op: Literal["unlock"] = "unlock"


class UnlockIn(StepIn):
    op: Literal["unlock"]
    mutex: Name
    scope: MutexScope = "device"


def queue_end(w: Any) -> float:
    """When the worker's synchronize of the in-order queue returns: the end of what is in
    it now (the worker's own queued work included); the worker's clock on a device with
    engines of its own."""
    dev = w.device
    if dev.shared_stream and dev.compute_free_at > w.t_ready:
        return dev.compute_free_at
    return w.t_ready


def step_unlock(m, w, cp, pc, seconds, part):
    s = cp.steps[pc]
    yield from meet(m, w)  # what the others queued up to the worker's instant
    w.t_ready = queue_end(w)
    yield from meet(m, w)
    settle(m, w, m.env.now)
    if s.scope != "none":
        release(m, w, s.mutex)
    return pc + 1


def _at(x: FastRun, pc: int, now: float) -> int:
    x.settle(now)
    s = x.steps[pc]
    if s.scope != "none":
        x.leave_section(s.mutex)  # the critical section ends (replayed, learnt or not)
    return pc + 1


def _synced(x: FastRun, pc: int, now: float) -> Any:
    """At the worker's instant: wait for the in-order queue to run dry, then release."""
    end = queue_end(x.w)
    if end > now:
        x.w.t_ready = end
        x.act = _at
        return MEET
    return _at(x, pc, now)


def _fast(x: FastRun, pc: int) -> Any:
    """Never stamped: the next holder sees the release at the worker's time."""
    return at_instant(x, pc, _at, stamp=False)


def _fast_shared(x: FastRun, pc: int) -> Any:
    """On one in-order queue: meet the others, then wait for the queue (`queue_end`)."""
    return at_instant(x, pc, _synced, stamp=False)


def fast(s: Unlock, pc: int, x: FastRun) -> Any:
    return _fast_shared if x.dev.shared_stream else _fast


KIND = StepKind(
    op="unlock",
    step=Unlock,
    schema=UnlockIn,
    plain=step_unlock,
    fast=fast,
    gives=lambda s: s.mutex if s.scope != "none" else None,
)
