"""The daemon's host side: what stays resident, what a partition holds, and how
concurrent syntheses slow each other. One object per run (`HostSide`, held by the
RunContext), called at four points: a kind is first used and a partition is synthesized
(model/synthesis.py), a partition is back from the GPU (RunContext.partition_back), the
daemon restarts (model/faults.py).

**Residency** (curio cuzk-memory-manager.md 1.1, 2.3): the first proof of a kind loads
its SRS into pinned host memory and its PCE onto the heap; both stay for the daemon's
life and are charged to the one budget (`memory.total_budget`) as permanent
reservations, so a 128 GiB host keeps 44 GiB SRS + 25.7 GiB PCE of PoRep ("Baseline RSS
before any proof = 70 GiB"; the RAM table's 69 GiB). A budget too small for them waits
for ever and the run ends as a stall naming the reservation.

**Two ledgers.** The budget admits work by cuzk's own estimates (memory.rs: 14 GiB per
PoRep partition, reserved before synthesis, released when the partition is done). What
the process really holds (its RSS, `peak_host_rss_bytes`) follows the published
per-partition sizes, stage by stage (cuzk-project.md Phase 5 "Memory analysis",
Phase 12 "Memory Per-Partition Analysis"; per element 32 bytes):

- witness generation (the first `WITNESS_SHARE` of synthesis, Phase 5: 26.5 of 35.5 s):
  the witness, aux = constraints x witness_fraction elements (PoRep 3.9 GiB);
- the PCE's MatVec (the rest): + a/b/c (3 x constraints elements, 11.6 GiB) + the
  temporary unified witness copy (another aux, 3.9 GiB: "~4.2 GiB per concurrent
  synthesis"); without the PCE (the old path) there is no MatVec phase and no copy;
- synthesized, until the partition is back from the GPU: a/b/c + aux (15.5 GiB).

**Synthesis contention** (a host mechanism, not a scenario's): every synthesis shares
the host's memory bandwidth with the others. A profile may state the law
(`[cpu.synthesis] memory_bound = f`, `saturating = k0`): a synthesis spends a share f of
its full-speed time on memory traffic, and k0 syntheses at once saturate the bandwidth,
so with k running each progresses at 1 / ((1 - f) + f * max(1, k / k0)) of its speed
(times min(1, cores / (k x threads)) when they also oversubscribe the cores) — processor
sharing of the bandwidth among the memory-bound parts. A host with more cores than the
profile's (`hardware.host_cores` above `[host] cores`) is taken as that many such hosts
(sockets, each with its memory channels): k0 x host cores / profile cores; one with fewer
keeps the profile host's memory system. That is why cuzk's synthesis of
one proof's 10 partitions took 35.5 s and of two proofs' 20 partitions 46-49 s
(cuzk-project.md Phase 5, j=2), and why the RAM table's s/proof is not 10 x t / pw with
one t. Without the law, syntheses share the cores only (model/cores.py). The GPU workers'
CPU pool jobs (prep_msm, B_G2 MSM: `Cpu.pool`) are memory-bound too and slow by the same
factor while k syntheses run (`cpu_slowdown`, fixed at each job's start).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

import simpy

from cuzk_sim.calibration import Profile
from cuzk_sim.model.cores import MILLI, HostCores
from cuzk_sim.model.host import PceCache
from cuzk_sim.model.machine import Machine
from cuzk_sim.plans.circuits import FR_BYTES, CircuitShape

WITNESS_SHARE = 26.5 / 35.5  # cuzk-project.md Phase 5: witness generation of PCE synthesis


@dataclass(frozen=True)
class Footprint:
    """What one partition of a kind holds in host memory (RSS), by stage."""

    witness: int  # aux assignment
    abc: int  # the a, b, c evaluation vectors
    transient: int  # the PCE's temporary unified witness copy (0 without the PCE)

    @classmethod
    def of(cls, shape: CircuitShape) -> Footprint:
        witness = round(shape.constraints * shape.witness_fraction) * FR_BYTES
        return cls(witness, 3 * shape.constraints * FR_BYTES, witness if shape.pce else 0)

    @property
    def synthesized(self) -> int:
        return self.witness + self.abc


class Contention(HostCores):
    """Syntheses sharing the host's memory bandwidth (and cores): every running synthesis
    progresses at the same rate (see the module docstring), so HostCores' virtual work
    clock applies with another rate law; a task asks for one unit per synthesis."""

    def __init__(
        self, env: simpy.Environment, saturating: float, memory_bound: float, cores: float,
        threads: float,
    ) -> None:  # fmt: skip
        super().__init__(env, min(saturating, cores / threads))
        self.saturating, self.memory_bound = saturating, memory_bound
        self.host_cores, self.threads = cores, threads

    def rate(self) -> float:
        k = self.demand / MILLI
        if k <= 0:
            return 1.0
        f = self.memory_bound
        slow = (1.0 - f) + f * max(1.0, k / self.saturating)
        return min(1.0, self.host_cores / (k * self.threads)) / slow


class RssLedger:
    """The process's resident host memory: the fixed part and every partition's stage."""

    def __init__(self) -> None:
        self.used = 0
        self.peak = 0

    def add(self, nbytes: int) -> None:
        self.used += nbytes
        self.peak = max(self.peak, self.used)

    def sub(self, nbytes: int) -> None:
        self.used -= nbytes


class HostSide:
    """The run's host side, built from the pieces of the run it reads (the RunContext of
    model/context.py holds it: it cannot name that class without an import circle)."""

    def __init__(
        self, machine: Machine, shapes: dict[str, CircuitShape], profile: Profile,
        pce: PceCache, host_cores: int,
    ) -> None:  # fmt: skip
        self.machine, self.shapes, self.profile = machine, shapes, profile
        self.pce, self.host_cores = pce, host_cores
        self.rss = RssLedger()
        self.loaded: set[str] = set()
        self.pending: dict[str, simpy.Event] = {}
        self.contention = self._contention()
        machine.cpu_slowdown = self.cpu_slowdown

    def cpu_slowdown(self, kind: str) -> float:
        """How much slower a job of the GPU workers' CPU pool (prep_msm, B_G2 MSM: Cpu
        steps with a `pool`) runs while the syntheses running now load the host's memory
        bandwidth: the same law, (1 - f) + f * max(1, k / k0), fixed at the job's start
        (cuzk-project.md Phase 9: with 10 synthesis workers "CPU memory-intensive
        operations slow down 12-27%"). 1.0 without the law."""
        c = self.contention
        if c is None:
            return 1.0
        f = c.memory_bound
        return (1.0 - f) + f * max(1.0, (c.demand / MILLI) / c.saturating)

    def _contention(self) -> Contention | None:
        p = self.profile
        if p.synthesis_saturating is None:
            return None
        cores = self.host_cores
        hosts = max(1.0, cores / p.host_cores)  # more cores than the profile's host: sockets
        return Contention(
            self.machine.env, p.synthesis_saturating * hosts, p.synthesis_memory_bound, cores,
            p.synthesis_threads,
        )  # fmt: skip

    def load_kind(self, kind: str) -> Generator:
        """The kind's SRS (pinned) and PCE (heap) resident before its first synthesis:
        permanent reservations of the budget, in RSS; the PCE loaded or extracted first."""
        m = self.machine
        shape = self.shapes[kind]
        while kind not in self.loaded:
            if kind in self.pending:  # another synthesizer is loading it
                yield self.pending[kind]
                continue
            done = self.pending[kind] = m.env.event()
            ram = m.ram
            if shape.srs_bytes:
                yield ram.reserve("daemon", f"srs {kind}", shape.srs_bytes)
                self.rss.add(shape.srs_bytes)
            if shape.pce:
                yield from self.pce.ensure(m.env, ram, kind, m.log)
                if shape.pce_bytes:
                    yield ram.reserve("daemon", f"pce {kind}", shape.pce_bytes)
                    self.rss.add(shape.pce_bytes)
            self.loaded.add(kind)
            del self.pending[kind]
            done.succeed()

    def synthesize(self, kind: str, seconds: float, count: int = 1) -> Generator:
        """`count` partitions of `kind` synthesized side by side, each `seconds` at full
        speed (jitter applied by the caller), their RSS stages charged as they go."""
        fp = Footprint.of(self.shapes[kind])
        self.rss.add(count * fp.witness)
        share = WITNESS_SHARE if fp.transient else 1.0
        yield from self._run(seconds * share, count)
        self.rss.add(count * (fp.abc + fp.transient))
        if share < 1.0:
            yield from self._run(seconds * (1.0 - share), count)
        self.rss.sub(count * fp.transient)

    def _run(self, seconds: float, count: int) -> Generator:
        m = self.machine
        threads = self.profile.synthesis_threads
        if self.contention is not None:
            # the syntheses' threads count in the host's demand figure (peak_core_demand)
            demand = (self.contention.demand / MILLI + count) * threads
            cores = m.cores
            cores.peak_demand = max(cores.peak_demand, demand + cores.demand / MILLI)
            # `count` syntheses started together progress together: one task of that demand
            yield self.contention.run(seconds, count)
            cores.work_s += count * seconds * threads
        elif m.cores_shared:
            yield m.cores.run(seconds, count * threads)
        else:
            yield m.env.timeout(seconds)
            m.cores.work_s += count * seconds * threads

    def partition_done(self, kind: str) -> None:
        """A synthesized partition is back from the GPU workers: its memory is freed."""
        self.rss.sub(Footprint.of(self.shapes[kind]).synthesized)

    def restart(self) -> None:
        """A new daemon process: nothing resident, no synthesis running (peak kept)."""
        self.loaded.clear()
        self.pending.clear()
        self.rss.used = 0
        self.contention = self._contention()
        self.machine.pools.clear()  # the old process's CPU pool died with it
