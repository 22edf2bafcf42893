"""`unlock`: release a mutex the worker holds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from cuzk_sim.model.fast_state import FastRun, at_instant
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


def step_unlock(m, w, cp, pc, seconds, part):
    s = cp.steps[pc]
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


def _fast(x: FastRun, pc: int) -> Any:
    """Never stamped: the next holder sees the release at the worker's time."""
    return at_instant(x, pc, _at, stamp=False)


def fast(s: Unlock, pc: int, x: FastRun) -> Any:
    return _fast


KIND = StepKind(
    op="unlock",
    step=Unlock,
    schema=UnlockIn,
    plain=step_unlock,
    fast=fast,
    gives=lambda s: s.mutex if s.scope != "none" else None,
)
