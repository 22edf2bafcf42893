"""Host cores shared by CPU work, as processor sharing.

Every CPU task (a synthesis round, a plan `cpu` step) asks for `threads` cores and
carries its calibrated duration: the time it takes when it gets them. While the threads
demanded by all running tasks fit the host's cores, every task runs at full speed. When
they exceed them, every running task progresses at cores / demand of its full speed —
the OS time-slicing rayon's pool and the C++ thread pools over too few cores. So two
tasks that each want the one core take twice as long; a task asking for more cores than
the host has runs at cores / threads even alone.

Every running task moves at the same rate, so one "virtual work clock" (full-speed
seconds done by any task since the start) describes them all: a task ends when the clock
reaches its start reading plus its seconds, and tasks sit in a heap by that reading.
Between two changes of the running set the rate is constant, so the next completion is
plain arithmetic: one SimPy timeout per change, stale ones ignored by a generation count;
while the host is not oversubscribed a new task only adds a timer when it ends first.
Demand is counted in thousandths of a thread (integers: no rounding drift).

Float time: at a large simulated time (1e8 s, where one float step is 15 ns) the timer's
`now + wait` is rounded, so the clock brought up to date when it fires may fall short of
the head task's end reading by more than DONE_EPS; a new timer of a wait shorter than
half a float step then fires at the very same `now`, and so on forever. So a timer
carries the reading it was set for, and when it fires the clock is taken to have reached
that reading (it has, up to the rounding of `now`): every timer ends at least one task.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field

import simpy

DONE_EPS = 1e-9  # seconds of full-speed work left that count as finished (float rounding)
MILLI = 1000  # demand is kept in thousandths of a thread


@dataclass
class HostCores:
    env: simpy.Environment
    cores: float
    demand: int = 0  # thousandths of threads asked for by the running tasks
    work_clock: float = 0.0  # full-speed seconds done by every running task so far
    tasks: list = field(default_factory=list)  # heap of (clock at end, id, milli-threads, event)
    last: float = 0.0  # when `work_clock` was last brought up to date
    generation: int = 0
    timer_at: float | None = None  # when the live timer fires (None: no timer)
    timer_reading: float = 0.0  # the work clock reading the live timer was set for
    peak_demand: float = 0.0  # threads
    samples: list[tuple[float, float]] | None = None  # (t, threads asked for) for a trace
    work_s: float = 0.0  # thread-seconds of CPU work given to the host (results/metrics.py)
    _ids: itertools.count = field(default_factory=itertools.count)

    def __post_init__(self) -> None:
        self._capacity = round(self.cores * MILLI)

    def rate(self) -> float:
        """Speed of every running task, as a fraction of its full speed."""
        return 1.0 if self.demand <= self._capacity else self._capacity / self.demand

    def run(self, seconds: float, threads: float, start: float | None = None) -> simpy.Event:
        """An event that fires, with its end time as value, when `seconds` of full-speed work
        on `threads` cores is done; the work joins the host at `start` (default: now)."""
        ev = self.env.event()
        self.run_into(ev, seconds, threads, start)
        return ev

    def run_into(
        self, ev: simpy.Event, seconds: float, threads: float, start: float | None = None
    ) -> None:
        """`run`, firing an event made beforehand (one that others may wait for already)."""
        if start is not None and start > self.env.now:
            self.env.timeout(start - self.env.now).callbacks.append(
                lambda _ev: self._submit(ev, seconds, threads)
            )
        else:
            self._submit(ev, seconds, threads)

    def _submit(self, ev: simpy.Event, seconds: float, threads: float) -> None:
        if seconds <= 0:
            ev.succeed(self.env.now)
            return
        self.work_s += seconds * threads
        self._advance()
        was_full_speed = self.demand <= self._capacity
        milli = round(threads * MILLI)
        heapq.heappush(self.tasks, (self.work_clock + seconds, next(self._ids), milli, ev))
        self.demand += milli
        if self.demand > self.peak_demand * MILLI:
            self.peak_demand = self.demand / MILLI
        if self.samples is not None:
            self.samples.append((self.env.now, self.demand / MILLI))
        if (
            was_full_speed
            and self.demand <= self._capacity
            and self.timer_at is not None
            and self.timer_at <= self.env.now + seconds
        ):
            return  # nobody's speed changed and the live timer still fires first
        self._schedule()

    def _advance(self) -> None:
        now = self.env.now
        if now > self.last and self.tasks:
            self.work_clock += (now - self.last) * self.rate()
        self.last = now

    def _schedule(self) -> None:
        self.generation += 1
        if not self.tasks:
            self.timer_at = None
            return
        gen = self.generation
        self.timer_reading = self.tasks[0][0]
        wait = max((self.timer_reading - self.work_clock) / self.rate(), 0.0)
        self.timer_at = self.env.now + wait
        self.env.timeout(wait).callbacks.append(lambda _ev: self._on_timer(gen))

    def _on_timer(self, gen: int) -> None:
        if gen != self.generation:  # the running set changed since: a newer timer rules
            return
        self._advance()
        # the head task's end was the target; `now` may only have reached it up to rounding
        self.work_clock = max(self.work_clock, self.timer_reading)
        tasks = self.tasks
        while tasks and tasks[0][0] - self.work_clock <= DONE_EPS:
            _, _, milli, ev = heapq.heappop(tasks)
            self.demand -= milli
            ev.succeed(self.env.now)
            if self.samples is not None:
                self.samples.append((self.env.now, self.demand / MILLI))
        self._schedule()
