"""The fast layer's switches and state: which speed-ups a run may use, what section
replay has learnt, and one worker's execution of a plan as the fast handlers see it.

The speed-ups themselves are the fast handlers of the step kinds (cuzk_sim/steps/) and
the loop of model/fast.py; the list, with the precondition of each, is in fast.py's
docstring. This module holds the state they share, including the critical-section
machinery (`FastRun.enter_section`, `FastRun.leave_section`) that the `lock` and `unlock`
fast handlers drive.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field, fields
from typing import Any

from cuzk_sim.model.machine import Machine
from cuzk_sim.model.runtime import Worker, release, settle_sink


@dataclass(frozen=True)
class FastPaths:
    """Which speed-ups may be used (each still only where its precondition holds)."""

    merge_kernels: bool = True
    inline_steps: bool = True
    section_stamping: bool = True
    section_replay: bool = True
    helper_without_process: bool = True
    arithmetic_cpu: bool = True

    @classmethod
    def none(cls) -> FastPaths:
        """Every speed-up off: the plain interpreter."""
        return cls(**{f.name: False for f in fields(cls)})

    @property
    def any(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self))


@dataclass
class FastLayer:
    """The speed-ups that apply to one run, and what section replay has learnt."""

    paths: FastPaths
    plain: bool = False  # every speed-up off: the plain interpreter runs
    stamping: bool = False
    replay: bool = False
    sections: dict[tuple, tuple] = field(default_factory=dict)
    # per (compiled plan, recording?, shared cores?, one in-order queue?): the fast
    # handler of each step (model/fast.py builds them)
    tables: dict[tuple, tuple] = field(default_factory=dict)
    runs: dict[str, FastRun] = field(default_factory=dict)  # per worker

    @classmethod
    def for_run(
        cls,
        paths: FastPaths,
        plans: Iterable[Any],
        workers: Iterable[Worker],
        record: bool,
        sections: dict[tuple, tuple] | None = None,
    ) -> FastLayer:
        """plans: the run's compiled plans (model/compiled.py)."""
        plans, workers = list(plans), list(workers)
        # a per-device mutex excludes a device's others only if each device's workers are
        # exactly the workers assigned to it (not so when routing sends all to device 0);
        # under two mutexes two workers can be in sections at once, and a worker must
        # yield at a lock to see another's hold
        # (separate processes each have their own mutexes: none excludes the others)
        one_to_one = all(w.assigned == w.device.index and not w.process for w in workers)
        section_mutexes = set().union(
            *(cp.analysis.section_mutexes for cp in plans if cp.analysis is not None)
        )
        stamping = (
            paths.section_stamping
            and one_to_one
            and len(section_mutexes) <= 1
            and all(cp.exclusive for cp in plans)
        )
        return cls(
            paths,
            plain=not paths.any,
            stamping=stamping,
            replay=stamping and paths.section_replay and not record,
            sections={} if sections is None else sections,
        )


class FastRun:
    """One worker executing one partition's plan on the fast layer: what its fast
    handlers read (set once per partition by `begin`) and the critical section it is in."""

    __slots__ = (
        "m", "env", "w", "layer", "cp", "steps", "seconds", "parts", "labels", "part",
        "dev", "mem", "rec", "tl", "record", "inline", "without_process", "shared_cores",
        "host_touching", "in_section", "replay", "learning", "replay_peak", "act", "table",
    )  # fmt: skip

    def __init__(self, m: Machine, w: Worker, layer: FastLayer) -> None:
        """Built at the worker's first partition; what stays for the whole run."""
        self.m, self.env, self.w, self.layer = m, m.env, w, layer
        self.without_process = layer.paths.helper_without_process
        self.dev = w.device
        self.rec = m.recorder
        self.tl = m.recorder.timeline  # the bounded recording (cuzk_sim/recording.py)
        self.shared_cores = m.cores_shared
        self.cp = self.table = None  # the last partition's plan and its handlers
        self.record = None
        self.in_section = False  # holding a mutex that makes it alone on its device's memory
        self.replay: tuple | None = None  # the memory state this section is known to end in
        self.learning: tuple | None = None  # (key, oom events, log lines) while learning
        self.replay_peak: tuple | None = None  # a replayed section's peak (pc, used, parts)

    def begin(self, cp: Any, part: str, seconds: tuple[float, ...]) -> bool:
        """A new partition of plan `cp`; True when the fast handlers of the last one
        serve it (same plan, recording neither switched on nor off)."""
        record = self.rec.record  # the detail window of a bounded recording switches it
        same = cp is self.cp and record == self.record
        if not same:
            self.cp, self.steps, self.parts, self.labels = cp, cp.steps, cp.parts, cp.labels
            self.host_touching = cp.host_touching
            self.record = record
            self.inline = self.layer.paths.inline_steps and not record
        self.part, self.seconds = part, seconds
        self.mem = self.dev.memory  # a daemon restart replaces it between partitions
        if self.in_section:  # the last partition ended inside one (a restart, a lost device)
            self.in_section = False
            self.replay = self.learning = self.replay_peak = None
        return same

    def settle(self, now: float) -> None:
        """Apply the device's frees due by `now` before its ledger is read."""
        mem = self.mem
        if mem.pending_frees:
            mem.settle(now, settle_sink(self.m, mem))

    def replayed(self, pc: int) -> int:
        """A memory step of a replayed section: skipped (its outcome is applied at the
        unlock); the section's learnt peak is shown where it happened."""
        peak = self.replay_peak
        if peak is not None and pc == peak[0]:
            self.tl.replayed_peak(self.w.t_ready, self.dev.index, peak)
        return pc + 1

    def enter_section(self, pc: int) -> None:
        """After a lock: with stamping, the worker is alone on its device's memory until
        the unlock; with replay, a section seen before from this memory state is replayed,
        else learnt."""
        layer = self.layer
        if not layer.stamping or self.in_section:
            return
        self.in_section = True
        if not layer.replay:
            return
        mem, tl, rec = self.mem, self.tl, self.rec
        key = (id(self.cp), pc, self.dev.index, mem.snapshot())
        self.replay = layer.sections.get(key)
        if self.replay is None:
            self.learning = (key, len(rec.oom_events), len(rec.lines))
        if tl is not None:  # follow the section's peak (learnt or replayed)
            tl.section_begin(self.dev.index, mem.used)
            self.replay_peak = tl.learnt.get(key) if self.replay is not None else None

    def leave_section(self, mutex: str) -> None:
        """At an unlock: a replayed section's end state is restored; a learnt one is kept
        if it logged nothing and left the same live buffers; the mutex is released."""
        mem, tl, dev = self.mem, self.tl, self.dev
        learnt = None
        if self.replay is not None:
            mem.restore(self.replay)
            if tl is not None:  # live buffers as at entry: only the pools moved
                tl.vram_change(self.env.now, dev.index, mem.used, None, 0)
        elif self.learning is not None:
            key, ooms, lines = self.learning
            end = mem.snapshot()
            clean = len(self.rec.oom_events) == ooms and len(self.rec.lines) == lines
            if clean and end[-1] == key[-1][-1]:  # no event, same live buffers
                self.layer.sections[key] = end
                learnt = key
        if tl is not None and (self.replay is not None or self.learning is not None):
            tl.section_end(dev.index, learnt)
        self.replay = self.learning = self.replay_peak = None
        release(self.m, self.w, mutex)
        self.in_section = False


Act = Callable[[FastRun, int, float], Any]


class _Meet:
    """What a fast handler returns to have the loop meet the other workers at the
    worker's time (one timeout, no generator) and then call `FastRun.act` at that
    instant."""

    __slots__ = ()


MEET = _Meet()


def at_instant(x: FastRun, pc: int, act: Act, stamp: bool = True) -> Any:
    """Run `act(x, pc, now)` at the worker's instant: inside a critical section (stamp)
    at its own clock without waking up, else after meeting the others (MEET)."""
    w = x.w
    if stamp and x.in_section:
        return act(x, pc, w.t_ready)
    if w.t_ready > x.env.now:
        x.act = act
        return MEET
    return act(x, pc, x.env.now)


def finish(x: FastRun, pc: int, r: Any) -> Generator[object, object, int]:
    """Inside a handler's generator: carry out what a fast handler returned (a next pc,
    MEET, or a generator), as the loop of model/fast.py does."""
    env = x.env
    while r.__class__ is not int:
        if r is MEET:
            x.m.events += 1
            yield env.timeout(x.w.t_ready - env.now)
            r = x.act(x, pc, env.now)
        else:
            r = yield from r
    return r


def then(gen: Generator, nxt: int) -> Generator[object, object, int]:
    """Run a handler generator that returns nothing, then go on at `nxt`."""
    yield from gen
    return nxt


def plain_adapter(kind_plain: Callable[..., Any]) -> Callable[[FastRun, int], Any]:
    """The fast table's entry for a step whose plain handler runs as is."""

    def run(x: FastRun, pc: int) -> Any:
        return kind_plain(x.m, x.w, x.cp, pc, x.seconds[pc], x.part)

    return run
