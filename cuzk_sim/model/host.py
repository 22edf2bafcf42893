"""The host: a RAM budget that synthesis waits on, and the PCE cache.

cuzk's memory manager admits work against one budget (`memory.total_budget`, "auto" =
MemTotal − safety margin) and makes the caller wait until enough is released — here a
`simpy.Container`, whose FIFO wait is exactly that semantic (unlike VRAM).

The PCE (pre-compiled constraint evaluator) of a circuit kind is extracted on first use
(transient host memory, minutes), then saved to the param cache. If saving fails, every
restart of the daemon extracts it again.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field

import simpy


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
        self, env: simpy.Environment, ram: simpy.Container, kind: str, log: Callable[[str], None]
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
                yield ram.get(self.host_bytes)
                yield env.timeout(self.extract_seconds(kind))
                yield ram.put(self.host_bytes)
                self.extractions += 1
                if self.writable:
                    self.on_disk.add(kind)
                    log(f"PCE extracted and saved kind={kind}")
                else:
                    log(f"PCE extracted kind={kind}; save failed (param cache not writable)")
            self.in_memory.add(kind)
            del self.pending[kind]
            done.succeed()
