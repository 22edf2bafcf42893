"""The host: a RAM budget that synthesis waits on, pinned buffers, and the PCE cache.

cuzk's memory manager admits work against one budget (`memory.total_budget`, "auto" =
MemTotal − safety margin) and makes the caller wait, FIFO, until enough is released.
Pinned buffers (cudaHostAlloc / cudaHostRegister) are charged to the same budget but
never wait: like cudaMalloc they succeed or fail at once, and a failure names the
buffer and carries the host ledger (who holds what) at that instant.

The PCE (pre-compiled constraint evaluator) of a circuit kind is extracted on first use
(transient host memory, minutes), then saved to the param cache. If saving fails, every
restart of the daemon extracts it again.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass, field

import simpy


@dataclass
class HostMemory:
    """The host RAM budget: reservations that wait (synthesis, PCE) and pinned buffers
    that fail at once. `used` never exceeds `budget`."""

    env: simpy.Environment
    budget: int
    used: int = 0
    peak_used: int = 0
    pinned: int = 0  # bytes of live pinned buffers (part of `used`)
    live: dict[tuple[str, str], tuple[int, bool]] = field(default_factory=dict)  # pinned
    reserved: dict[tuple[str, str], int] = field(default_factory=dict)  # waiting kind
    waiters: deque[tuple[str, str, int, simpy.Event]] = field(default_factory=deque)
    samples: list[tuple[float, int, int]] | None = None  # (t, used, pinned) for a trace

    @property
    def free(self) -> int:
        return self.budget - self.used

    def _take(self, nbytes: int) -> None:
        self.used += nbytes
        if self.used > self.peak_used:
            self.peak_used = self.used

    def _sample(self) -> None:
        if self.samples is not None:
            self.samples.append((self.env.now, self.used, self.pinned))

    def reserve(self, owner: str, what: str, nbytes: int) -> simpy.Event:
        """An event that fires once `nbytes` are reserved (FIFO behind earlier waiters)."""
        ev = self.env.event()
        self.waiters.append((owner, what, nbytes, ev))
        self._admit()
        return ev

    def unreserve(self, owner: str, what: str, nbytes: int) -> None:
        key = (owner, what)
        left = self.reserved[key] - nbytes
        if left < 0:
            raise RuntimeError(f"host: {owner} {what} releases more than it reserved")
        if left:
            self.reserved[key] = left
        else:
            del self.reserved[key]
        self.used -= nbytes
        self._admit()
        self._sample()

    def _admit(self) -> None:
        while self.waiters and self.waiters[0][2] <= self.free:
            owner, what, nbytes, ev = self.waiters.popleft()
            self._take(nbytes)
            key = (owner, what)
            self.reserved[key] = self.reserved.get(key, 0) + nbytes
            ev.succeed()
            self._sample()

    def try_pin(self, owner: str, buffer: str, nbytes: int, persistent: bool) -> bool:
        """Pin at once or fail at once; never waits, never queues behind reservations."""
        if nbytes > self.free:
            return False
        self._take(nbytes)
        self.pinned += nbytes
        self.live[(owner, buffer)] = (nbytes, persistent)
        self._sample()
        return True

    def unpin(self, owner: str, buffer: str) -> bool:
        """Release a live non-persistent pinned buffer; False (a no-op) otherwise."""
        got = self.live.get((owner, buffer))
        if got is None or got[1]:
            return False
        del self.live[(owner, buffer)]
        self.used -= got[0]
        self.pinned -= got[0]
        self._admit()
        self._sample()
        return True

    def rename(self, owner: str, buffer: str, new_name: str) -> None:
        """Keep a still-live pinned buffer under another name (a leak: pinned again,
        never unpinned), as DeviceMemory.rename does for VRAM."""
        self.live[(owner, new_name)] = self.live.pop((owner, buffer))

    def ledger(self) -> dict[str, dict[str, int]]:
        """Bytes by owner, then by buffer or reservation, as an OOM post-mortem shows it."""
        out: dict[str, dict[str, int]] = {}
        for (owner, buffer), (nbytes, _) in self.live.items():
            out.setdefault(owner, {})[buffer] = nbytes
        for (owner, what), nbytes in self.reserved.items():
            out.setdefault(owner, {})[what] = nbytes
        out["(host)"] = {"free": self.free}
        return out


@dataclass
class PceCache:
    extract_seconds: Callable[[str], float]  # kind -> extraction time
    load_seconds: float
    host_bytes: int
    writable: bool  # can the param cache be written?
    on_disk: set[str] = field(default_factory=set)
    in_memory: set[str] = field(default_factory=set)
    pending: dict[str, simpy.Event] = field(default_factory=dict)
    extractions: int = 0

    def restart(self) -> None:
        """The daemon restarted: what was only in memory is gone."""
        self.in_memory.clear()

    def ensure(
        self, env: simpy.Environment, ram: HostMemory, kind: str, log: Callable[[str], None]
    ) -> Generator[simpy.Event, object, None]:
        """Make the kind's PCE available: load it, or extract (and try to save) it."""
        while kind not in self.in_memory:
            if kind in self.pending:  # another synthesizer is already on it
                yield self.pending[kind]
                continue
            done = self.pending[kind] = env.event()
            if kind in self.on_disk:
                yield env.timeout(self.load_seconds)
                log(f"PCE loaded kind={kind}")
            else:
                yield ram.reserve("pce", f"extract {kind}", self.host_bytes)
                yield env.timeout(self.extract_seconds(kind))
                ram.unreserve("pce", f"extract {kind}", self.host_bytes)
                self.extractions += 1
                if self.writable:
                    self.on_disk.add(kind)
                    log(f"PCE extracted and saved kind={kind}")
                else:
                    log(f"PCE extracted kind={kind}; save failed (param cache not writable)")
            self.in_memory.add(kind)
            del self.pending[kind]
            done.succeed()
