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

import re
from dataclasses import asdict, dataclass
from typing import Any

from cuzk_sim.io.units import format_size
from cuzk_sim.plan.contract import Alloc, Copy, Cpu, Free, Kernel, Lock, Plan, Unlock

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


def family(buffer: str) -> str:
    """A buffer's family: its name without the `#n` of a repeated alloc (the chunks of one
    streamed MSM, the allocs of a loop, share one)."""
    return _REPEAT.sub("", buffer)


_REPEAT = re.compile(r"#\d+$")


@dataclass(frozen=True)
class Change:
    """One change of one buffer; `what` reads after the buffer's name (`{b}` in it, when
    the name sits inside the sentence)."""

    kind: str
    buffer: str
    what: str
    old_bytes: int | None = None  # a size change or a new buffer (None: new)
    new_bytes: int | None = None


def _size_change(old: int, new: int) -> str:
    verb = "grew" if new > old else "shrank"
    change = f" ({new / old - 1:+.1%})" if old else ""
    return f"{verb} {format_size(old)} -> {format_size(new)}{change}"


def _diff_one(kind: str, old: BufferLife, new: BufferLife, order: dict[str, int]) -> list[Change]:
    out: list[Change] = []

    def add(what: str, **sizes: int) -> None:
        out.append(Change(kind, new.buffer, what, **sizes))

    if new.bytes != old.bytes:
        add(_size_change(old.bytes, new.bytes), old_bytes=old.bytes, new_bytes=new.bytes)
    if new.locks_at_alloc != old.locks_at_alloc:
        add(
            f"moved across a lock: allocated {_locks(new.locks_at_alloc)} "
            f"(was {_locks(old.locks_at_alloc)})"
        )
    if new.freed_after is not None and new.locks_at_free != old.locks_at_free:
        add(
            f"moved across a lock: freed {_locks(new.locks_at_free)} "
            f"(was {_locks(old.locks_at_free)})"
        )
    if new.freed_after != old.freed_after:
        if new.freed_after is None:
            add(f"is no longer freed (was freed after {old.freed_after})")
        elif old.freed_after is None:
            add(f"is now freed after {new.freed_after} (was never freed)")
        else:
            was, now = order.get(old.freed_after), order.get(new.freed_after, 0)
            if was is not None and now > was:
                add(
                    f"now outlives {old.freed_after}: freed after {new.freed_after} "
                    f"(was after {old.freed_after})"
                )
            else:
                add(f"is freed after {new.freed_after} (was after {old.freed_after})")
    return out


def plan_changes(old: dict[str, list[BufferLife]], new_plans: dict[str, Plan]) -> list[Change]:
    """Every change, buffer by buffer, old (the baseline's record) -> new (this run's). An
    alloc of a family both sides have is compared with the alloc of the same name; allocs
    beyond the other side's count are one change of the family's count."""
    out: list[Change] = []
    for kind, plan in sorted(new_plans.items()):
        if kind not in old:
            out.append(Change(kind, "", "no plan record in the baseline for this kind"))
            continue
        before = {b.buffer: b for b in old[kind]}
        after = {b.buffer: b for b in buffer_lives(plan)}
        n_before, n_after = _family_counts(before), _family_counts(after)
        order = _work_order(plan)
        for name, b in after.items():
            if name in before:
                out += _diff_one(kind, before[name], b, order)
            elif family(name) not in n_before:
                freed = "never freed" if b.freed_after is None else f"freed after {b.freed_after}"
                what = (
                    f"new buffer {{b}} ({format_size(b.bytes)}), allocated after "
                    f"{b.allocated_after} {_locks(b.locks_at_alloc)}, {freed}"
                )
                out.append(Change(kind, name, what, None, b.bytes))
        for name, b in before.items():
            if family(name) not in n_after:
                out.append(Change(kind, name, f"buffer {{b}} ({format_size(b.bytes)}) is gone"))
        for fam, n in n_after.items():
            m = n_before.get(fam)
            if m is not None and m != n:
                out.append(Change(kind, fam, f"allocated {n} times (was {m})"))
    return out


def _family_counts(lives: dict[str, BufferLife]) -> dict[str, int]:
    out: dict[str, int] = {}
    for name in lives:
        out[family(name)] = out.get(family(name), 0) + 1
    return out


MAX_FAMILIES_NAMED = 4  # per line of the grouped diff


def _names(buffers: list[str]) -> str:
    """`msm_a.buckets x8, msm_l.buckets x8` (families with their counts), at most
    MAX_FAMILIES_NAMED of them and how many more."""
    counts: dict[str, int] = {}
    for b in buffers:
        counts[family(b)] = counts.get(family(b), 0) + 1
    named = [f if n == 1 else f"{f} x{n}" for f, n in list(counts.items())[:MAX_FAMILIES_NAMED]]
    more = len(counts) - MAX_FAMILIES_NAMED
    text = ", ".join(named) + (f", +{more} more" if more > 0 else "")
    return text if len(buffers) == 1 or len(counts) == 1 else f"{text} ({len(buffers)} buffers)"


def grouped_lines(changes: list[Change]) -> list[str]:
    """One line per change: the buffers a change applies to alike (the chunks of a
    streamed MSM that all grew 72 -> 144 MiB) share it, named by family with counts."""
    groups: dict[tuple[str, str], list[str]] = {}
    for c in changes:
        groups.setdefault((c.kind, c.what), []).append(c.buffer)
    out = []
    for (kind, what), buffers in groups.items():
        names = _names(buffers) if any(buffers) else ""
        if "{b}" in what:
            out.append(f"{kind}: " + what.replace("{b}", names))
        else:
            out.append(f"{kind}: {names} {what}" if names else f"{kind}: {what}")
    return out


def diff_plans(old: dict[str, list[BufferLife]], new_plans: dict[str, Plan]) -> list[str]:
    """The grouped diff: one line per change, old (the baseline's record) -> new."""
    return grouped_lines(plan_changes(old, new_plans))


def capped(lines: list[str] | tuple[str, ...], limit: int) -> list[str]:
    """At most `limit` lines, the last saying how many more there are."""
    if len(lines) <= limit:
        return list(lines)
    return [
        *lines[: limit - 1],
        f"... and {len(lines) - limit + 1} more changes (--json lists all)",
    ]


@dataclass(frozen=True)
class BufferFinding:
    """A buffer family that grew past both thresholds (or is new and larger than the size
    threshold): a gate failure even when the peak holds."""

    kind: str
    family: str
    count: int  # allocs of the family
    old_bytes: int | None  # None: a new buffer
    new_bytes: int
    site: str | None = None  # the prover line that allocates it (file:line), when known

    @property
    def sentence(self) -> str:
        n = f" x{self.count}" if self.count > 1 else ""
        if self.old_bytes is None:
            return f"{self.kind}: new buffer {self.family}{n} of {format_size(self.new_bytes)}"
        grown = format_size(self.new_bytes - self.old_bytes)
        change = _size_change(self.old_bytes, self.new_bytes)
        return f"{self.kind}: buffer {self.family}{n} {change}, +{grown}"


def buffer_findings(
    old: dict[str, list[BufferLife]],
    new_plans: dict[str, Plan],
    max_share: float,
    min_bytes: int,
    sites: dict[str, dict[str, str]],
) -> list[BufferFinding]:
    """The buffer families whose largest alloc grew by more than both `max_share` (of the
    old size) and `min_bytes`, and the new families larger than `min_bytes`; sites: by
    kind, buffer -> allocating line. A family is compared by its largest alloc, so more
    chunks of a smaller size (a streamed MSM's) are no growth."""
    out: list[BufferFinding] = []
    for kind, plan in sorted(new_plans.items()):
        if kind not in old:
            continue
        before, after = _largest(old[kind]), _largest(buffer_lives(plan))
        for fam, (new, n) in after.items():
            was = before.get(fam)
            grew = new - (was[0] if was else 0)
            if grew > min_bytes and (was is None or was[0] == 0 or grew > max_share * was[0]):
                site = sites.get(kind, {}).get(fam)
                out.append(BufferFinding(kind, fam, n, was[0] if was else None, new, site))
    return out


def _largest(lives: list[BufferLife]) -> dict[str, tuple[int, int]]:
    """By family: the largest alloc's bytes and how many allocs the family has."""
    out: dict[str, tuple[int, int]] = {}
    for b in lives:
        size, n = out.get(family(b.buffer), (0, 0))
        out[family(b.buffer)] = (max(size, b.bytes), n + 1)
    return out
