"""The daemon's queues: proofs waiting for synthesis, synthesized partitions waiting for a
GPU worker, and the bounds between them. Built once per daemon process (a restart builds
fresh ones)."""

from __future__ import annotations

from dataclasses import dataclass

import simpy

from cuzk_sim.model.config import EngineConfig


@dataclass
class Queues:
    jobs: simpy.PriorityStore  # proofs, by priority then arrival
    partitions: simpy.Store  # synthesized partitions (a PriorityStore, or cuzk's channel)
    lookahead: simpy.Container  # how far synthesizers may run ahead of the GPUs
    permits: simpy.Resource | None = None  # the per-partition synthesis pool's permits

    @classmethod
    def fresh(cls, env: simpy.Environment, cfg: EngineConfig) -> Queues:
        permits = None
        if cfg.partition_workers:
            # cuzk engine.rs (Phase 7): the synthesis -> GPU channel, auto-sized to
            # max(synthesis_lookahead, partition_workers), FIFO; and the permits
            cap = max(cfg.synthesis_lookahead, 1, cfg.partition_workers)
            partitions: simpy.Store = simpy.Store(env, capacity=cap)
            permits = simpy.Resource(env, capacity=cfg.partition_workers)
        else:
            partitions = simpy.PriorityStore(env)
        # each synthesizer may run `synthesis_lookahead` proofs ahead of the GPUs
        slots = cfg.synthesis_concurrency * (cfg.synthesis_lookahead + 1)
        return cls(
            jobs=simpy.PriorityStore(env),
            partitions=partitions,
            lookahead=simpy.Container(env, capacity=slots, init=slots),
            permits=permits,
        )
