"""The GPU workers' loop: each worker takes synthesized partitions from the queue and
executes its proof kind's plan on the device its routing policy names, until the run
ends, the daemon restarts or its device is lost."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field

import simpy

from cuzk_sim.model.context import RunContext
from cuzk_sim.model.counters import Proof
from cuzk_sim.model.execute import execute_plan
from cuzk_sim.model.runtime import Worker
from cuzk_sim.result import Span


@dataclass
class GpuLoop:
    """The GPU worker processes of one daemon process, and what a lost device must find:
    each worker's process, its pending queue get, and the partition it is proving."""

    ctx: RunContext
    procs: dict[str, simpy.Process] = field(default_factory=dict)
    waiting_get: dict[str, simpy.Event] = field(default_factory=dict)
    current: dict[str, tuple[Proof, int]] = field(default_factory=dict)

    def start(self) -> None:
        """A GPU worker per worker slot whose device is not lost."""
        ctx = self.ctx
        self.procs, self.waiting_get, self.current = {}, {}, {}
        for w in ctx.workers:
            if w.device.index not in ctx.lost_devices:
                proc = ctx.env.process(self.serve(w))  # killable itself (the hot one)
                ctx.daemon.append(proc)
                self.procs[w.name] = proc

    def serve(self, w: Worker) -> Generator:
        """Serve partitions until the run ends, the daemon restarts or the device is lost
        (simpy.Interrupt, caught here: no wrapper around the hottest process)."""
        ctx = self.ctx
        env, m, counters = ctx.env, ctx.machine, ctx.counters
        rec = m.recorder
        served = False  # the wait for a worker's first partition is the pipeline's fill
        try:
            while True:
                get = self.waiting_get[w.name] = ctx.queues.partitions.get()
                asked = env.now
                item = yield get
                if served:  # metrics.py: GPU workers waiting for synthesized partitions
                    counters.starved_s += env.now - asked
                served = True
                m.events += 1
                proof, p = item.item
                self.current[w.name] = (proof, p)
                proof.picked += 1
                if proof.picked == proof.partitions and not ctx.config.partition_workers:
                    ctx.queues.lookahead.put(1)
                if not proof.failed:
                    t0 = env.now
                    label = f"{proof.id}/{p}"
                    ok = yield from execute_plan(m, w, ctx.plans[proof.kind], label, ctx.layer)
                    proof.gpu_s += env.now - t0
                    if rec.record or rec.timeline is not None:
                        rec.spans.append(
                            Span(w.name, w.device.index, label, "partition", t0, env.now)
                        )
                    if ok:
                        counters.partitions_ok += 1
                        proof.done += 1
                    else:
                        counters.partitions_failed += 1
                        proof.failed = True
                        if ctx.config.on_oom == "stop":
                            counters.stopped_at_oom = True
                            if not ctx.stop.triggered:
                                ctx.stop.succeed()
                            return
                del self.current[w.name]
                ctx.partition_back(proof)
        except simpy.Interrupt:
            return
