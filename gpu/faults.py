"""Faults injected into a real-pipeline run (`gpu-run --fault`): OOMs and worker exceptions
at allocations, drawn from one seeded generator, and a card that shrinks mid-run."""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field
from typing import Literal

from .device import DeviceOutOfMemory


class InjectedError(RuntimeError):
    """A worker exception injected by a fault plan."""


class InjectedOom(DeviceOutOfMemory):
    """A device OOM injected by a fault plan at a named (or random) buffer."""


@dataclass(frozen=True)
class Fault:
    """One injected fault. kind: `oom` (at `buffer`, or any buffer when buffer is None,
    each matching allocation with probability `p`), `exception` (a worker exception at
    an allocation, probability `p` per allocation), `shrink` (at `at_s` the cap shrinks
    by `nbytes`, an extra ballast)."""

    kind: Literal["oom", "exception", "shrink"]
    p: float = 0.0
    buffer: str | None = None
    at_s: float = 0.0
    nbytes: int = 0

    @classmethod
    def parse(cls, text: str) -> Fault:
        """`oom:BUFFER:P`, `oom:random:P`, `exception:P`, `shrink:SECONDS:SIZE`."""
        from cuzk_sim.io.units import parse_duration, parse_size

        parts = text.split(":")
        try:
            if parts[0] == "oom" and len(parts) == 3:
                buf = None if parts[1] == "random" else parts[1]
                return cls("oom", p=_probability(parts[2]), buffer=buf)
            if parts[0] == "exception" and len(parts) == 2:
                return cls("exception", p=_probability(parts[1]))
            if parts[0] == "shrink" and len(parts) == 3:
                at = parse_duration(parts[1] if " " in parts[1] else parts[1] + " s")
                return cls("shrink", at_s=at, nbytes=parse_size(parts[2]))
        except ValueError as e:
            raise ValueError(f"--fault {text!r}: {e}") from None
        raise ValueError(
            f"--fault {text!r}: expected oom:BUFFER:P, oom:random:P, exception:P or "
            "shrink:SECONDS:SIZE (e.g. oom:msm_h.points:0.1, shrink:0.5:2GiB)"
        )


def _probability(text: str) -> float:
    p = float(text)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"probability must be in [0, 1], got {text}")
    return p


@dataclass
class FaultPlan:
    """The faults of one run, drawn from one seeded generator under a lock (the draws'
    order follows the threads' interleaving: the counts, not the victims, repeat)."""

    faults: tuple[Fault, ...] = ()
    seed: int = 0
    injected: dict[str, int] = field(default_factory=dict)
    _rng: random.Random = field(init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def check_buffers(self, buffers: set[str]) -> None:
        """ValueError (one line) when an `oom:BUFFER:P` names a buffer the run's plans do
        not allocate (it would never fire)."""
        for f in self.faults:
            if f.kind == "oom" and f.buffer is not None and f.buffer not in buffers:
                raise ValueError(
                    f"--fault oom:{f.buffer}:{f.p:g}: no buffer {f.buffer!r} in the plan; "
                    f"its buffers: {', '.join(sorted(buffers))}"
                )

    def at_alloc(self, buffer: str, nbytes: int, free: int | None, gpu: int) -> None:
        for f in self.faults:
            if f.kind == "shrink" or (f.buffer is not None and f.buffer != buffer):
                continue
            with self._lock:
                hit = self._rng.random() < f.p
                if hit:
                    key = f"{f.kind}:{f.buffer or 'random'}"
                    self.injected[key] = self.injected.get(key, 0) + 1
            if hit and f.kind == "oom":
                raise InjectedOom(buffer, nbytes, free, gpu)
            if hit:
                raise InjectedError(f"injected worker exception at alloc of {buffer}")
