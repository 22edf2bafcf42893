"""What changed in a plan, buffer by buffer: the gate's answer to "why did this fail?".

A plan is summarised by the life of every buffer it allocates: its bytes, the work step
(kernel, copy or cpu, by name) it is allocated after and freed after, and the mutexes held
at each end. The summary is stored in the gate's baseline, so a later run can say which
buffers grew, which moved across a lock, and which now outlive the step after which they
used to be freed — the three changes behind every OOM the incidents in cuzk-facts.md
record. The walk reads the steps in order (both sides of a fallback, as written): it is a
diff of the plan's text, not a simulation.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from cuzk_sim.plan import Alloc, Copy, Cpu, Free, Kernel, Lock, Plan, Unlock
from cuzk_sim.units import format_size

START = "(start)"  # allocated or freed before any work step


@dataclass(frozen=True)
class BufferLife:
    buffer: str  # the name, with "#n" for the n-th alloc of one name (n >= 2)
    bytes: int
    memory: str  # device or host_pinned
    allocated_after: str  # the last work step before the alloc, or START
    freed_after: str | None  # the last work step before the free; None: never freed
    locks_at_alloc: tuple[str, ...]
    locks_at_free: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["locks_at_alloc"], d["locks_at_free"] = (
            list(self.locks_at_alloc),
            list(self.locks_at_free),
        )
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BufferLife:
        return cls(
            buffer=str(d["buffer"]),
            bytes=int(d["bytes"]),
            memory=str(d["memory"]),
            allocated_after=str(d["allocated_after"]),
            freed_after=None if d["freed_after"] is None else str(d["freed_after"]),
            locks_at_alloc=tuple(map(str, d["locks_at_alloc"])),
            locks_at_free=tuple(map(str, d["locks_at_free"])),
        )


def buffer_lives(plan: Plan) -> list[BufferLife]:
    """Every alloc of `plan`, in order, with where it ends."""
    held: list[str] = []
    last_work = START
    seen: dict[str, int] = {}
    open_: dict[tuple[str, str], int] = {}  # (buffer, memory) -> index into lives
    lives: list[dict[str, Any]] = []
    for s in plan.steps:
        if isinstance(s, Lock) and s.scope != "none":
            held.append(s.mutex)
        elif isinstance(s, Unlock) and s.scope != "none" and s.mutex in held:
            held.remove(s.mutex)
        elif isinstance(s, Kernel | Copy | Cpu):
            last_work = s.name
        elif isinstance(s, Alloc):
            seen[s.buffer] = seen.get(s.buffer, 0) + 1
            name = s.buffer if seen[s.buffer] == 1 else f"{s.buffer}#{seen[s.buffer]}"
            if not s.persistent:
                open_[(s.buffer, s.memory)] = len(lives)
            lives.append(
                dict(
                    buffer=name,
                    bytes=s.bytes,
                    memory=s.memory,
                    allocated_after=last_work,
                    freed_after=None,
                    locks_at_alloc=tuple(held),
                    locks_at_free=(),
                )
            )
        elif isinstance(s, Free) and (s.buffer, s.memory) in open_:
            life = lives[open_.pop((s.buffer, s.memory))]
            life["freed_after"], life["locks_at_free"] = last_work, tuple(held)
    return [BufferLife(**d) for d in lives]


def plan_record(plans: dict[str, Plan]) -> dict[str, list[dict[str, Any]]]:
    """The JSON the baseline stores: buffer lives by proof kind."""
    return {kind: [b.to_dict() for b in buffer_lives(p)] for kind, p in sorted(plans.items())}


def _work_order(plan: Plan) -> dict[str, int]:
    order: dict[str, int] = {START: -1}
    for i, s in enumerate(plan.steps):
        if isinstance(s, Kernel | Copy | Cpu):
            order.setdefault(s.name, i)
    return order


def _locks(names: tuple[str, ...]) -> str:
    return "under " + ", ".join(names) if names else "outside any mutex"


def _diff_one(kind: str, old: BufferLife, new: BufferLife, order: dict[str, int]) -> list[str]:
    out: list[str] = []
    b = f"{kind}: {new.buffer}"
    if new.bytes != old.bytes:
        verb = "grew" if new.bytes > old.bytes else "shrank"
        change = f" ({new.bytes / old.bytes - 1:+.1%})" if old.bytes else ""
        out.append(f"{b} {verb} {format_size(old.bytes)} -> {format_size(new.bytes)}{change}")
    if new.locks_at_alloc != old.locks_at_alloc:
        out.append(
            f"{b} moved across a lock: allocated {_locks(new.locks_at_alloc)} "
            f"(was {_locks(old.locks_at_alloc)})"
        )
    if new.freed_after is not None and new.locks_at_free != old.locks_at_free:
        out.append(
            f"{b} moved across a lock: freed {_locks(new.locks_at_free)} "
            f"(was {_locks(old.locks_at_free)})"
        )
    if new.freed_after != old.freed_after:
        if new.freed_after is None:
            out.append(f"{b} is no longer freed (was freed after {old.freed_after})")
        elif old.freed_after is None:
            out.append(f"{b} is now freed after {new.freed_after} (was never freed)")
        else:
            was, now = order.get(old.freed_after), order.get(new.freed_after, 0)
            if was is not None and now > was:
                out.append(
                    f"{b} now outlives {old.freed_after}: freed after {new.freed_after} "
                    f"(was after {old.freed_after})"
                )
            else:
                out.append(f"{b} is freed after {new.freed_after} (was after {old.freed_after})")
    return out


def diff_plans(old: dict[str, list[BufferLife]], new_plans: dict[str, Plan]) -> list[str]:
    """One line per change, old (the baseline's record) -> new (this run's plans)."""
    out: list[str] = []
    for kind, plan in sorted(new_plans.items()):
        if kind not in old:
            out.append(f"{kind}: no plan record in the baseline for this kind")
            continue
        before = {b.buffer: b for b in old[kind]}
        after = {b.buffer: b for b in buffer_lives(plan)}
        order = _work_order(plan)
        for name, b in after.items():
            if name not in before:
                freed = "never freed" if b.freed_after is None else f"freed after {b.freed_after}"
                out.append(
                    f"{kind}: new buffer {name} ({format_size(b.bytes)}), allocated after "
                    f"{b.allocated_after} {_locks(b.locks_at_alloc)}, {freed}"
                )
            else:
                out += _diff_one(kind, before[name], b, order)
        for name, b in before.items():
            if name not in after:
                out.append(f"{kind}: buffer {name} ({format_size(b.bytes)}) is gone")
    return out
