"""What the engine's entities share during one run: the clock, the configuration, the
machine the workers execute on, the daemon's queues and processes, the PCE cache, the
host side (model/host_side.py) and the run's counters; and the proof's way back (a
partition returned, the run finished).

The entities (model/synthesis.py, model/gpu_loop.py, model/faults.py) read and write
only this; model/engine.py builds it, starts them and assembles the result.
"""

from __future__ import annotations

import itertools
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import simpy

from cuzk_sim.model.config import EngineConfig
from cuzk_sim.model.counters import Proof, RunCounters
from cuzk_sim.model.device import SimDevice
from cuzk_sim.model.fast import FastLayer
from cuzk_sim.model.host import PceCache
from cuzk_sim.model.host_side import HostSide
from cuzk_sim.model.jitter import Jitter
from cuzk_sim.model.machine import Machine
from cuzk_sim.model.queues import Queues
from cuzk_sim.model.runtime import Worker
from cuzk_sim.plan.builders.circuits import CircuitShape
from cuzk_sim.profiles.profile import Profile


@dataclass
class RunContext:
    env: simpy.Environment
    config: EngineConfig
    shapes: dict[str, CircuitShape]
    profile: Profile
    plans: dict[str, Any]  # kind -> CompiledPlan (model/compiled.py)
    machine: Machine
    devices: list[SimDevice]
    workers: list[Worker]
    jitter: Jitter
    pce: PceCache
    host_side: HostSide  # residency, RSS, synthesis contention (model/host_side.py)
    queues: Queues
    layer: FastLayer
    stop: simpy.Event
    counters: RunCounters = field(default_factory=RunCounters)
    daemon: list[simpy.Process] = field(default_factory=list)  # what a restart kills
    arrivals_open: int = 0
    lost_devices: set[int] = field(default_factory=set)
    seq: itertools.count = field(default_factory=itertools.count)  # FIFO among equals

    def log(self, line: str, t: float | None = None) -> None:
        self.machine.log(line, t)

    def spawn(self, gen: Generator) -> None:
        """A daemon process started during the run (a partition's synthesis)."""
        self.daemon.append(self.env.process(killable(gen)))

    def partition_back(self, proof: Proof, reserved: bool = True) -> None:
        """A partition is back from the GPU workers (done, failed or dropped): its host
        memory is released; the proof finishes with its last partition."""
        if reserved:
            self.machine.ram.unreserve("synthesis", proof.id, self.shapes[proof.kind].host_bytes)
            self.host_side.partition_done(proof.kind)
        proof.returned += 1
        if proof.returned == proof.partitions:  # every partition is back (done or not)
            proof.finished = True
            self.counters.unfinished -= 1
            if not proof.failed:
                self.counters.done_times.append((proof.id, proof.kind, self.env.now))
                self.log(f"proof {proof.id} done")
            else:
                self.log(f"proof {proof.id} failed")
            self.maybe_finish()

    def maybe_finish(self) -> None:
        if self.arrivals_open == 0 and self.counters.unfinished == 0 and not self.stop.triggered:
            self.stop.succeed()


def killable(gen: Generator) -> Generator:
    """A daemon process: a restart or a lost device ends it (simpy.Interrupt)."""
    try:
        return (yield from gen)
    except simpy.Interrupt:
        return None
