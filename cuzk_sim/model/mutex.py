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
    owner: str | None = None
    waiters: deque[tuple[str, simpy.Event]] = field(default_factory=deque)

    def acquire(self, env: simpy.Environment, who: str) -> simpy.Event | None:
        """None when taken at once; else an event that fires when `who` holds it."""
        if self.owner is None:
            self.owner = who
            return None
        ev = env.event()
        self.waiters.append((who, ev))
        return ev

    def release(self, who: str) -> None:
        if self.owner != who:
            raise RuntimeError(f"mutex {self.name!r}: {who} released it but {self.owner} holds it")
        if self.waiters:
            self.owner, ev = self.waiters.popleft()
            ev.succeed()
        else:
            self.owner = None
