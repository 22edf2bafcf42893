"""The scenario's clock in the real pipeline (gpu/pipeline.py): arrivals, lost GPUs,
daemon restarts and `shrink` faults, issued in time order by one dispatcher.

The clock is the scenario's: real time plus the idle time skipped. While partitions are
queued or running the dispatcher waits in real time for the next event; when nothing is
(every submitted partition has ended, or no worker is left to take one) it moves the
clock to the next event at once, so a `start = "1e9 s"` or `every = "1 h"` costs no wall
time and the proofs' submit and done times stay on the scenario's clock. Once every
arrival is issued and nothing is outstanding, the events left (a loss, a restart, a
shrink after the work) can change no proof: the run ends.

`duration` is the model's deadline on the scenario's clock: arrivals up to it are
submitted (one exactly at it is submitted and never runs, as in the model, where it is
still in synthesis when the run stops), no loss, restart or shrink at or after it
happens, and when the clock reaches it with work outstanding the run stops as with
`on_oom = "stop"`: partitions that end later are not counted (a GPU kernel is not cut
short, its result is dropped) and their proofs are left neither completed nor failed.
When the work ends before it, the run ends then (the idle time to it is not waited).
With every GPU lost, the queued work waits for the deadline as in the model: no stall.

At one time: lost GPUs and shrinks first, then arrivals, then restarts (as in the model,
where a partition reaches a GPU only after its arrival's instant and a restart at t
takes the proofs that arrived at t with it).
"""

from __future__ import annotations

import queue
import threading
from typing import Any

from .run_report import Job, ProofState
from .run_spec import Arrival

LOST, SHRINK, ARRIVAL, RESTART, DEADLINE = "lost", "shrink", "arrival", "restart", "deadline"
_ORDER = {LOST: 0, SHRINK: 0, ARRIVAL: 1, RESTART: 2, DEADLINE: 3}
POLL_S = 0.005  # the dispatcher's wait while work is outstanding


def scenario_events(spec: Any, faults: Any, gpus: list[int]) -> list[tuple[float, str, Any]]:
    """(time, what, argument) of every timed event of a run, in the order they happen."""
    ev: list[tuple[float, int, int, str, Any]] = []
    for i, a in enumerate(spec.arrivals):
        ev.append((a.at_s, _ORDER[ARRIVAL], i, ARRIVAL, i))
    for t, g in spec.lost:
        ev.append((t, _ORDER[LOST], len(ev), LOST, g))
    for f in faults.faults:
        if f.kind == "shrink":
            for g in gpus:
                ev.append((f.at_s, _ORDER[SHRINK], len(ev), SHRINK, (g, f.nbytes)))
    for t in spec.restarts_s:
        ev.append((t, _ORDER[RESTART], len(ev), RESTART, t))
    if spec.duration_s is not None:
        ev = [e for e in ev if e[0] < spec.duration_s or e[3] == ARRIVAL]
        ev.append((spec.duration_s, _ORDER[DEADLINE], len(ev), DEADLINE, None))
    return [(t, what, arg) for t, _, _, what, arg in sorted(ev)]


class Dispatch:
    """The dispatching half of RealRun: the clock, the events, lost GPUs and restarts."""

    def _init_dispatch(self: Any) -> None:
        self.outstanding = 0  # partitions put in the queue and not yet ended
        self.alive = 0  # worker threads still taking partitions
        self.lost: set[int] = set()  # GPUs lost
        self.epoch = 0  # daemon restarts so far
        self.skipped_s = 0.0  # idle time skipped on the scenario's clock
        self.submitted = 0  # proofs issued
        self.stop_reason = "the run stopped (on_oom = stop)"  # of partitions it cut short

    def _idle(self: Any) -> bool:
        with self._stats:
            return self.outstanding == 0 or self.alive == 0

    def _wait_until(self: Any, at: float, more_arrivals: bool) -> bool:
        """Wait for the scenario's time `at` (skip it when idle); False when the run
        stopped, or when it is idle and no arrival is left (nothing can change)."""
        while not self.stopped.is_set():
            wait = at - self.now()
            if wait <= 0:
                return True
            if self._idle():
                if not more_arrivals:
                    return False
                self.t0 -= wait  # the clock jumps: nothing is running to see it move
                self.skipped_s += wait
                return True
            self.stopped.wait(min(wait, POLL_S))
        return False

    def _dispatch(self: Any, q: queue.PriorityQueue, seq: Any) -> None:
        """Issue the scenario's events in order on its clock (module docstring)."""
        events = scenario_events(self.spec, self.faults, self._devices_used())
        last = max((i for i, e in enumerate(events) if e[1] == ARRIVAL), default=-1)
        restarts = set(self.spec.restarts_s)
        for i, (at, what, arg) in enumerate(events):
            if not self._wait_until(at, i <= last):
                break
            if what == LOST:
                self._lose(arg)
            elif what == SHRINK:
                self.shrink(*arg)
            elif what == RESTART:
                self._restart(at)
            elif what == DEADLINE:  # partitions ending later are not counted (as on_oom stop)
                self.stop_reason = "the scenario's duration ended first"
                self.log(f"duration {at:g} s reached: the run stops")
                self.stopped.set()
            else:
                a: Arrival = self.spec.arrivals[arg]
                proof = self.proofs[arg]
                # a restart at this instant takes it with it (the model's order)
                proof.failed = proof.failed or at in restarts
                with self._stats:
                    self.submitted += 1
                if self.spec.duration_s is not None and at >= self.spec.duration_s:
                    self.dispatched += a.partitions  # at the deadline: submitted, never run
                    for p in range(a.partitions):
                        why = "the scenario's duration ended first"
                        self.jobs.append(Job(f"{proof.id}/{p}", "-", "stopped", why))
                    continue
                with self._stats:
                    self.outstanding += a.partitions
                for p in range(a.partitions):
                    self.event("gpu_queue", job=proof.id, partition=p)
                    self.dispatched += 1
                    q.put(((-a.priority, next(seq)), (proof, p)))

    def _lose(self: Any, gpu: int) -> None:
        """GPU `gpu` is lost: its workers take no more partitions; the partition each is
        proving fails with its proof when it returns (`_lost_during`)."""
        with self._stats:
            self.lost.add(gpu)
        routed = [0 if self.spec.routing == "device0" else d for d in self.spec.devices]
        n = routed.count(gpu) * self.spec.workers_per_device
        self.log(f"gpu{gpu} lost: {n} workers stopped")

    def _restart(self: Any, at: float) -> None:
        """A daemon restart: every proof in flight fails (its queued partitions are
        dropped, its running ones' results discarded); the workers go on, as the
        restarted daemon's, and the lost GPUs stay lost."""
        with self._stats:
            self.epoch += 1
            lost = [p for p in self.proofs[: self.submitted] if not _finished(p)]
            for p in lost:
                p.failed = True
        for p in lost:
            self.log(f"proof {p.id} failed: lost in a daemon restart")
        text = f"; {len(lost)} proofs in flight lost" if lost else ""
        self.log(f"daemon restart at {at:g} s{text}")

    def _take(self: Any, gpu: int, q: queue.PriorityQueue, done: threading.Event) -> Any:
        """The next partition for a worker on `gpu`; None when it is to stop (its GPU
        lost, the run stopped or over)."""
        while not self.stopped.is_set():
            if gpu in self.lost:
                return None
            try:
                key, item = q.get(timeout=0.01)
            except queue.Empty:
                if done.is_set() and q.empty():
                    return None
                continue
            if gpu in self.lost:  # lost while it waited: the partition goes back
                q.put((key, item))
                return None
            return item
        return None

    def _stranded(self: Any, q: queue.PriorityQueue) -> None:
        """Partitions left in the queue once the workers are gone: the run stopped
        first, or every GPU that could run them was lost (the model's stall)."""
        left: list[ProofState] = []
        while not q.empty():
            _, (proof, p) = q.get()
            reason = "the run stopped first"
            if not self.stopped_at_oom and self.lost and self.spec.duration_s is None:
                reason = "no worker left: its GPU was lost"
                if proof not in left:  # failed or not, it never finishes (the model's)
                    left.append(proof)
            self.jobs.append(Job(f"{proof.id}/{p}", "-", "stopped", reason))
        if left:
            ids = ", ".join(p.id for p in left[:10])
            self.stall = (
                f"deadlock/stall at t={self.now():.3f} s: {len(left)} of {len(self.proofs)} "
                f"proofs never finish ({ids}): partitions of theirs wait for a worker and "
                f"every GPU that could run them was lost "
                f"({', '.join(f'gpu{g}' for g in sorted(self.lost))})"
            )


def _finished(p: ProofState) -> bool:
    return p.returned == p.partitions
