"""Static analysis of a plan: one walk over its paths answers every static question.

A plan's control flow is flat (an `alloc` may jump to its `fallback` label, `goto`
jumps, everything else falls through), and `validate` insists every jump goes forward,
so the paths are finite. `analyze` walks each path once, carrying the set of mutexes
held, and records what the validator, the compiler and the model's fast layer ask:

- problems: why the plan cannot run (a label defined twice, a jump to an undefined or an
  earlier label, a negative size, an unlock of a mutex not held, a lock the worker
  already holds, a mutex still held at the end) — in step order, then walk order;
- locks held at each step (the union over the paths that reach it);
- whether every device alloc/free runs under a mutex and no host-memory step does (the
  precondition of the fast layer's critical sections), and which mutexes guard sections;
- which steps meet the host (host memory, CPU work, a stream a helper thread may hold);
- the most CPU threads one worker running the plan may ask for at once;
- which kernels may be merged with the one before (consecutive compute-stream kernels,
  no label between).

It reads each step through the static facts its kind registers (cuzk_sim/steps/), so
`plan/contract.py` can use it for `validate` and a new kind needs no edit here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from cuzk_sim.steps.base import EXCLUSIVE_SCOPES
from cuzk_sim.steps.registry import KINDS

__all__ = ["EXCLUSIVE_SCOPES", "PlanAnalysis", "analyze", "touches_host"]

SIZE_FIELDS = ("bytes", "size", "margin", "threads")

Held = frozenset[tuple[str, int]]  # (mutex, index of the lock step that took it)


def touches_host(s: Any) -> bool:
    """May this step meet the host: host memory, CPU work, or a step on a non-compute
    stream (which a helper-thread CPU step may still hold)?"""
    return KINDS[s.op].touches_host(s)


@dataclass(frozen=True)
class PlanAnalysis:
    labels: dict[str, int]  # label -> index of its `label` step
    problems: tuple[str, ...]  # "steps[i] (op): ..." — empty for a valid plan
    locks_held: tuple[frozenset[str], ...]  # per step: mutexes held on some path there
    reachable: tuple[bool, ...]
    memory_all_locked: bool  # every device alloc/free under a mutex, no host one under one
    section_mutexes: frozenset[tuple[str, bool]]  # (mutex, per-device scope) of the locks
    host_touching: tuple[bool, ...]
    cpu_demand: float  # threads; inf when a helper-thread CPU step is never joined
    mergeable: tuple[bool, ...]  # kernel i may merge into kernel i - 1

    @property
    def valid(self) -> bool:
        return not self.problems


def analyze(plan: Any) -> PlanAnalysis:
    """plan: a cuzk_sim.plan.contract.Plan (its steps)."""
    steps = plan.steps
    labels: dict[str, int] = {}
    problems: list[str] = []
    for i, s in enumerate(steps):
        name = KINDS[s.op].defines_label(s)
        if name is not None:
            if name in labels:
                problems.append(f"steps[{i}]: label {name!r} defined twice")
            else:
                labels[name] = i
    targets_ok = True
    caches: set[str] = set()  # persistent per-device buffers allocated so far
    for i, s in enumerate(steps):
        kind = KINDS[s.op]
        problems += _field_problems(i, s)
        cache = kind.makes_cache(s)
        if cache is not None:
            caches.add(cache)
        fills = kind.fills(s)
        if fills is not None and (getattr(s, "direction", "HtoD") != "HtoD" or fills not in caches):
            problems.append(
                f"steps[{i}] ({s.op}).fills names {fills!r}, which is no persistent "
                "per-device buffer allocated before it (or the copy is not HtoD)"
            )
        target = kind.jump(s)
        if target is None:
            continue
        if target not in labels:
            targets_ok = False
            problems.append(f"steps[{i}] ({s.op}) jumps to undefined label {target!r}")
        elif labels[target] <= i:
            problems.append(
                f"steps[{i}] ({s.op}): jumps backwards to label {target!r} "
                f"(steps[{labels[target]}]); plans must make forward progress"
            )
    walk = _walk(steps, labels) if targets_ok else None
    host_touching = tuple(touches_host(s) for s in steps)
    return PlanAnalysis(
        labels=labels,
        problems=tuple(problems) + (walk.problems if walk else ()),
        locks_held=walk.locks_held if walk else tuple(frozenset() for _ in steps),
        reachable=walk.reachable if walk else tuple(True for _ in steps),
        memory_all_locked=walk.memory_all_locked if walk else False,
        section_mutexes=frozenset(
            g for g in (KINDS[s.op].section(s) for s in steps) if g is not None
        ),
        host_touching=host_touching,
        cpu_demand=_cpu_demand(steps),
        mergeable=_mergeable(steps),
    )


def _field_problems(i: int, s: Any) -> list[str]:
    out = []
    for fname in SIZE_FIELDS:
        v = getattr(s, fname, None)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
            out.append(f"steps[{i}] ({s.op}).{fname} must be a non-negative integer, got {v!r}")
    memory = getattr(s, "memory", "device")
    if memory not in ("device", "host_pinned"):
        out.append(f"steps[{i}] ({s.op}).memory must be 'device' or 'host_pinned', got {memory!r}")
    if memory == "host_pinned" and getattr(s, "per_device", False):
        out.append(
            f"steps[{i}] ({s.op}).per_device does not apply to host_pinned memory (host "
            "memory belongs to the process, not to a device)"
        )
    return out


@dataclass(frozen=True)
class _Walk:
    problems: tuple[str, ...]
    locks_held: tuple[frozenset[str], ...]
    reachable: tuple[bool, ...]
    memory_all_locked: bool


def _walk(steps: tuple, labels: dict[str, int]) -> _Walk:
    """Every path from step 0 (each fallback taken or not), carrying the mutexes held.
    Steps of scope `none` are no-ops. A state (step, held) is visited once, so the walk
    ends even on a plan that jumps backwards. The first problem on each kind is kept."""
    n = len(steps)
    held_at: list[set[str]] = [set() for _ in steps]
    reachable = [False] * n
    problems: list[str] = []
    all_locked = True
    seen: set[tuple[int, Held]] = set()
    todo: list[tuple[int, Held]] = [(0, frozenset())]
    while todo:
        pc, held = todo.pop()
        while (pc, held) not in seen:
            seen.add((pc, held))
            if pc == n:
                if held and not problems:
                    name, at = min(held, key=lambda h: h[1])
                    problems.append(
                        f"steps[{at}] (lock): mutex {name!r} is still held at the end of the "
                        "plan on some path; every lock needs a matching unlock"
                    )
                break
            s = steps[pc]
            kind = KINDS[s.op]
            reachable[pc] = True
            held_at[pc].update(name for name, _ in held)
            memory = kind.memory(s)
            if memory == "host":
                all_locked &= not held
            elif memory == "device":
                all_locked &= bool(held)
            owner = dict(held)
            takes, gives = kind.takes(s), kind.gives(s)
            if takes is not None:
                if takes in owner:
                    if not problems:
                        problems.append(
                            f"steps[{pc}] ({s.op}): mutex {takes!r} is already held (locked at "
                            f"steps[{owner[takes]}]); the worker would wait on itself"
                        )
                else:
                    held = held | {(takes, pc)}
            elif gives is not None:
                if gives not in owner:
                    if not problems:
                        problems.append(
                            f"steps[{pc}] ({s.op}): mutex {gives!r} is not held here on some "
                            "path; an unlock must release a held mutex"
                        )
                else:
                    held = held - {(gives, owner[gives])}
            target = kind.jump(s)
            if target is None:
                pc += 1
            elif kind.falls_through:  # a branch: both paths
                todo.append((labels[target], held))
                pc += 1
            else:
                pc = labels[target]
    return _Walk(
        tuple(problems), tuple(frozenset(h) for h in held_at), tuple(reachable), all_locked
    )


def _cpu_demand(steps: tuple) -> float:
    """The sum of the CPU steps' threads — unbounded when a helper-thread CPU step is not
    joined by a later `sync` on its stream (it could still run beside the worker's next
    partitions)."""
    joined: set[str] = set()  # streams a later `sync` joins (walking backwards)
    for s in reversed(steps):
        kind = KINDS[s.op]
        joins, helper = kind.joins(s), kind.helper_stream(s)
        if joins is not None:
            joined.add(joins)
        elif helper is not None and helper not in joined:
            return math.inf
    return sum(KINDS[s.op].threads(s) for s in steps)


def _mergeable(steps: tuple) -> tuple[bool, ...]:
    """Kernel i may fold into the kernel run before it: both on the compute stream, and no
    label lies between (nothing can jump into the middle of the run); a kernel that
    `fills` a buffer stays alone (whether it is charged is decided when it runs)."""
    return tuple(bool(i) and KINDS[s.op].merges_with(steps[i - 1], s) for i, s in enumerate(steps))
