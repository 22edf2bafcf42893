"""The machine a worker runs on: everything plan execution may touch, and nothing else.

A worker executing a plan needs the clock, the host's RAM and cores, the mutexes, its
own device (reached through `Worker.device`), the timing noise and somewhere to write
what happened. `Machine` holds exactly those, so the interpreter and the fast layer
never see the engine (arrivals, synthesis, queues) and a worker can be tested on a
bare machine. The engine builds one per run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import simpy

from cuzk_sim.model.cores import HostCores
from cuzk_sim.model.host import HostMemory
from cuzk_sim.model.jitter import Jitter
from cuzk_sim.model.mutex import Mutex
from cuzk_sim.recording import Timeline
from cuzk_sim.result import OomEvent, Span


@dataclass
class Recorder:
    """What a run writes down: OOM post-mortems and log lines always; with `record`, the
    timeline too (spans, VRAM samples); with a `timeline`, the bounded recording's hooks.
    Recording never changes a number the model computes. `record` may change during a
    run (recording.py's detail window)."""

    record: bool = False
    oom_events: list[OomEvent] = field(default_factory=list)
    lines: list[tuple[float, str]] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    samples: list[tuple[float, int, int]] = field(default_factory=list)  # t, device, used
    timeline: Timeline | None = None  # the bounded recording (cuzk_sim/recording.py)


@dataclass
class Machine:
    env: simpy.Environment
    ram: HostMemory
    cores: HostCores
    recorder: Recorder
    jitter: Jitter = field(default_factory=Jitter)
    # can CPU work oversubscribe the host? Then CPU steps go through the shared cores,
    # else they are priced arithmetically (exact: the rate is always 1)
    cores_shared: bool = False
    mutexes: dict[tuple, Mutex] = field(default_factory=dict)
    events: int = 0  # SimPy wake-ups of workers (for benchmarks)
    fallback_ledgers: int = 0  # fallback OOM events that kept a ledger copy (interpreter.py)
    leaks: int = 0  # live buffers allocated again (each renamed `<buffer>#leak<n>`)
    # when each persistent pinned host buffer (the process's) is page-locked: a worker that
    # finds it live while another is still pinning it waits for that (interpreter.alloc_host)
    pinned_at: dict[str, float] = field(default_factory=dict)
    # CPU thread pools (Cpu.pool), per device: each one's queue (steps/cpu.py PoolChain)
    pools: dict[str, Any] = field(default_factory=dict)
    # seconds each pool (by its per-device key) had a job running, and the pools that ran
    # a job over all their threads (their jobs queue behind each other: metrics.py)
    pool_busy_s: dict[str, float] = field(default_factory=dict)
    pool_first_s: dict[str, float] = field(default_factory=dict)  # its first job's start
    serial_pools: set[str] = field(default_factory=set)
    # how much slower a pooled CPU job of this kind runs under the host's current load
    # (the syntheses sharing its memory bandwidth: model/host_side.py); 1.0 without
    cpu_slowdown: Callable[[str], float] = field(default=lambda kind: 1.0)

    def log(self, line: str, t: float | None = None) -> None:
        self.recorder.lines.append((self.env.now if t is None else t, line))

    def mutex(self, name: str, scope: str, device: int, process: str = "") -> Mutex:
        """The mutex a lock step names: one per (name, assigned GPU) for scope `device`,
        one per name for `process` and `global`; each of those per process when the
        workers are separate processes (`process` named: a mutex is a process's memory)."""
        key = (name, device) if scope == "device" else (name,)
        if process:
            key = (*key, process)
        m = self.mutexes.get(key)
        if m is None:
            per_device = scope == "device"
            label = f"{name}@gpu{device}" if per_device else name
            m = Mutex(f"{label}@{process}" if process else label, device if per_device else None)
            self.mutexes[key] = m
        return m
