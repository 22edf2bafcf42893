"""Synthesis: proofs taken from the job queue, synthesized on the host, and their
partitions handed to the GPU workers.

Whole-proof synthesis (the default): `synthesis_concurrency` synthesizers take one proof
at a time, reserve host RAM for all its partitions (waiting on the budget), make sure the
PCE is available, and synthesize up to `max_parallel_synthesis` partitions in parallel;
a synthesizer runs at most `synthesis_lookahead` proofs ahead of the GPUs; partitions go
to a priority queue. Per-partition synthesis (`partition_workers` N > 0, cuzk's Phase 7
pool): each partition waits for one of N permits, reserves its own host memory, is
synthesized, and is sent into a FIFO channel of max(synthesis_lookahead, N) partitions,
holding its permit until the send went through.
"""

from __future__ import annotations

import math
from collections.abc import Generator

import simpy

from cuzk_sim.model.context import RunContext, killable
from cuzk_sim.model.counters import Proof
from cuzk_sim.results.sim_result import Span


def start(ctx: RunContext) -> None:
    """The synthesizers (or the partition dispatchers) of one daemon process."""
    cfg, env = ctx.config, ctx.env
    for i in range(cfg.synthesis_concurrency):
        gen = dispatch_partitions(ctx) if cfg.partition_workers else synthesize(ctx, i)
        ctx.daemon.append(env.process(killable(gen)))


def partition_seconds(ctx: RunContext, proof: Proof) -> float:
    """One partition's synthesis time (a round synthesizes its partitions in parallel,
    each taking this long)."""
    shape = ctx.shapes[proof.kind]
    if shape.synthesis_s is not None:
        return shape.synthesis_s
    return ctx.profile.cpu_seconds("synthesis", shape.constraints, f"synthesis of {proof.kind}")


def _recording(ctx: RunContext) -> bool:
    rec = ctx.machine.recorder
    return rec.record or rec.timeline is not None


def dispatch_partitions(ctx: RunContext) -> Generator:
    """partition_workers > 0: take a proof, make its PCE available, hand each partition
    to its own synthesis task (which waits for a permit), and go on to the next proof
    (cuzk spawns the tasks and does not wait for them)."""
    while True:
        item = yield ctx.queues.jobs.get()
        proof: Proof = item.item
        yield from ctx.host_side.load_kind(proof.kind)  # SRS, PCE resident
        for p in range(proof.partitions):
            ctx.spawn(synthesize_partition(ctx, proof, p))


def synthesize_partition(ctx: RunContext, proof: Proof, p: int) -> Generator:
    """One partition: a permit, its host memory (the budget), its synthesis, then the
    send into the channel — the permit is released only once the send went through, so
    at most partition_workers syntheses and finished-but-unsent partitions exist."""
    env, shape, m, counters = ctx.env, ctx.shapes[proof.kind], ctx.machine, ctx.counters
    permit = ctx.queues.permits.request()  # type: ignore[union-attr]
    yield permit
    if proof.failed:  # cuzk skips the synthesis of a failed job's partitions
        ctx.queues.permits.release(permit)  # type: ignore[union-attr]
        ctx.partition_back(proof, reserved=False)
        return
    asked = env.now
    yield m.ram.reserve("synthesis", proof.id, shape.host_bytes)
    counters.ram_wait_s += env.now - asked
    seconds = partition_seconds(ctx, proof)
    t0 = env.now
    yield from ctx.host_side.synthesize(proof.kind, ctx.jitter.scale(seconds, "cpu.synthesis"))
    m.events += 2
    counters.synth_busy_s += env.now - t0
    if _recording(ctx):
        name = f"{proof.id}/{p}"
        m.recorder.spans.append(Span("partition-synth", -1, name, "synthesis", t0, env.now))
    item = simpy.PriorityItem((-shape.priority, next(ctx.seq)), (proof, p))
    yield ctx.queues.partitions.put(item)
    ctx.queues.permits.release(permit)  # type: ignore[union-attr]


def synthesize(ctx: RunContext, index: int) -> Generator:
    """One whole-proof synthesizer: proof by proof, in rounds of max_parallel_synthesis
    partitions."""
    env, cfg, m, counters = ctx.env, ctx.config, ctx.machine, ctx.counters
    while True:
        item = yield ctx.queues.jobs.get()
        proof: Proof = item.item
        shape = ctx.shapes[proof.kind]
        yield ctx.queues.lookahead.get(1)
        asked = env.now
        yield m.ram.reserve("synthesis", proof.id, proof.partitions * shape.host_bytes)
        counters.ram_wait_s += env.now - asked  # results/metrics.py: synthesizers waiting on RAM
        yield from ctx.host_side.load_kind(proof.kind)  # SRS, PCE resident
        rounds = math.ceil(proof.partitions / cfg.max_parallel_synthesis)
        seconds = partition_seconds(ctx, proof)
        t0 = env.now
        left = proof.partitions
        for _ in range(rounds):  # each round: its partitions side by side
            now_parts = min(left, cfg.max_parallel_synthesis)
            left -= now_parts
            scaled = ctx.jitter.scale(seconds, "cpu.synthesis")
            yield from ctx.host_side.synthesize(proof.kind, scaled, now_parts)
        m.events += 4
        counters.synth_busy_s += env.now - t0  # results/metrics.py: synthesizer busy time
        if _recording(ctx):
            m.recorder.spans.append(Span(f"synth{index}", -1, proof.id, "synthesis", t0, env.now))
        for p in range(proof.partitions):
            ctx.queues.partitions.put(
                simpy.PriorityItem((-shape.priority, next(ctx.seq)), (proof, p))
            )
