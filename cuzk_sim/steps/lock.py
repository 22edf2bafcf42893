"""`lock`: acquire a mutex (FIFO, std::mutex as cuzk uses it)."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Literal

import simpy

from cuzk_sim.model.fast_state import FastRun, at_instant
from cuzk_sim.model.machine import Machine
from cuzk_sim.model.runtime import Worker, meet, settle
from cuzk_sim.result import Span
from cuzk_sim.steps.base import EXCLUSIVE_SCOPES, MutexScope, Name, StepIn, StepKind


@dataclass(frozen=True)
class Lock:
    """Acquire a mutex. scope: one per `device`, per `process`, one `global` for all devices,
    or `none` (the step is a no-op: workers enter unguarded)."""

    mutex: str
    scope: MutexScope = "device"
    op: Literal["lock"] = "lock"


class LockIn(StepIn):
    op: Literal["lock"]
    mutex: Name
    scope: MutexScope = "device"


def acquire(m: Machine, w: Worker, s: Lock) -> Generator[simpy.Event, object, None]:
    """Take the step's mutex (FIFO), waiting if another worker holds it."""
    env = m.env
    mx = m.mutex(s.mutex, s.scope, w.assigned, w.process)
    asked = env.now
    ev = mx.acquire(env, w.name)
    if ev is not None:
        m.events += 1
        yield ev
        if m.recorder.record:
            m.recorder.spans.append(
                Span(w.name, w.device.index, f"wait {s.mutex}", "lock", asked, env.now)
            )
    w.held.append((s.mutex, mx, env.now))
    w.t_ready = env.now


def step_lock(m, w, cp, pc, seconds, part):
    s = cp.steps[pc]
    yield from meet(m, w)
    settle(m, w, m.env.now)
    if s.scope != "none":
        yield from acquire(m, w, s)
    return pc + 1


# --- the fast handler: acquire inlined, then the critical section begins ---


def _recorded(x: FastRun, pc: int, s: Lock) -> Generator[object, object, int]:
    yield from acquire(x.m, x.w, s)
    x.enter_section(pc)
    return pc + 1


def _wait(x: FastRun, pc: int, s: Lock, mx: Any, ev: simpy.Event) -> Generator:
    x.m.events += 1
    yield ev
    x.w.held.append((s.mutex, mx, x.env.now))
    x.w.t_ready = x.env.now
    x.enter_section(pc)
    return pc + 1


def _at(x: FastRun, pc: int, now: float) -> Any:
    x.settle(now)
    s = x.steps[pc]
    if s.scope == "none":
        return pc + 1
    if x.record:
        return _recorded(x, pc, s)
    w, env = x.w, x.env
    mx = x.m.mutex(s.mutex, s.scope, w.assigned, w.process)
    ev = mx.acquire(env, w.name)
    if ev is not None:
        return _wait(x, pc, s, mx, ev)
    w.held.append((s.mutex, mx, env.now))
    w.t_ready = env.now
    x.enter_section(pc)
    return pc + 1


def _fast(x: FastRun, pc: int) -> Any:
    return at_instant(x, pc, _at)


def fast(s: Lock, pc: int, x: FastRun) -> Any:
    return _fast


KIND = StepKind(
    op="lock",
    step=Lock,
    schema=LockIn,
    plain=step_lock,
    fast=fast,
    takes=lambda s: s.mutex if s.scope != "none" else None,
    section=lambda s: (s.mutex, s.scope == "device") if s.scope in EXCLUSIVE_SCOPES else None,
)
