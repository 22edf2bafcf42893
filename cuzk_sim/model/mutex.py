"""A mutex that hands itself to waiters in FIFO order (std::mutex as cuzk uses it).

Taking a free mutex costs no SimPy event; only a worker that has to wait yields.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import simpy


@dataclass
class Mutex:
    name: str
    device: int | None = None  # the GPU of a per-device mutex; None: process or global
    owner: str | None = None
    waiters: deque[tuple[str, simpy.Event]] = field(default_factory=deque)
    # accumulators for results/metrics.py: seconds held, seconds waited (summed over waiters),
    # acquisitions that had to wait; times are the SimPy clock at acquire and release
    held_s: float = 0.0
    wait_s: float = 0.0
    waits: int = 0
    env: simpy.Environment | None = None
    _since: float = 0.0
    _asked: dict[str, float] = field(default_factory=dict)

    def acquire(self, env: simpy.Environment, who: str) -> simpy.Event | None:
        """None when taken at once; else an event that fires when `who` holds it."""
        self.env = env
        if self.owner is None:
            self.owner = who
            self._since = env.now
            return None
        ev = env.event()
        self.waiters.append((who, ev))
        self._asked[who] = env.now
        self.waits += 1
        return ev

    def release(self, who: str) -> None:
        if self.owner != who:
            raise RuntimeError(f"mutex {self.name!r}: {who} released it but {self.owner} holds it")
        now = self.env.now if self.env is not None else 0.0
        self.held_s += now - self._since
        self._since = now
        if self.waiters:
            self.owner, ev = self.waiters.popleft()
            self.wait_s += now - self._asked.pop(self.owner, now)
            ev.succeed()
        else:
            self.owner = None

    def held_until(self, now: float) -> float:
        """Seconds held by `now`, an ongoing hold counted up to it."""
        return self.held_s + (now - self._since if self.owner is not None else 0.0)

    def leave(self, who: str) -> None:
        """`who` stops waiting (its worker is gone: a lost device)."""
        self.waiters = deque(x for x in self.waiters if x[0] != who)

    def reset(self, now: float) -> None:
        """The process holding it died (a daemon restart): free, nobody waiting; the
        counters keep what was held and waited so far."""
        if self.owner is not None:
            self.held_s += now - self._since
        self.owner = None
        self.waiters.clear()
        self._asked.clear()
