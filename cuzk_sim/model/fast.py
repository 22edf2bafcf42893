"""The fast layer: speed-ups over the plain interpreter, each exact under its stated
precondition and each switchable off (`FastPaths`).

The plain interpreter (model/interpreter.py) is the reference. This layer is a short
loop over a table of fast handlers, one per step of a compiled plan, each chosen once per
run by its step kind (the `fast` chooser of cuzk_sim/steps/<kind>.py, which falls back to
the kind's plain handler where no precondition below holds). A handler returns the next
step, MEET (the loop meets the other workers with one timeout, then the handler acts at
that instant) or a generator when it has something else to wait for. The speed-ups skip
work they can prove changes nothing observable:

1. `merge_kernels` — a run of consecutive compute-stream kernels with no label between
   is priced as one step (model/compiled.py). Precondition: none beyond the run's shape
   (a blocking kernel starts where the previous ended; no step of the run yields).
   Equal to the plain run up to float rounding (the run's seconds are summed first).
2. `inline_steps` — time steps and host-memory steps run without a generator, and the
   hottest (a compute-stream kernel on a device with its own engines) as its arithmetic
   alone (steps/kernel.py). Always exact.
3. `section_stamping` — a worker holding a critical section runs its steps at its own
   clock without waking up. Precondition (checked once per run, `FastLayer.for_run`):
   every device alloc/free of every plan, on every path, runs under a mutex and no
   host-memory step does (plan.analysis), every plan's sections take the same one
   mutex, and each device's workers are exactly the ones assigned to it. Then no other
   worker can touch this device's memory before the section ends, so nothing can act
   between the stamped steps (model/fast_state.py `FastRun.enter_section`). Exact.
4. `section_replay` — such a section's memory outcome depends only on the device's
   memory state at entry: the first time a (plan, lock step, device, memory state) is
   seen, the section runs and its end state is learnt, if it logged nothing and left
   the same live buffers; later it is replayed — time steps still run, allocations and
   frees are skipped and the end state is restored at the unlock (peaks need no update:
   the learnt run set them). Precondition: stamping applies, and no trace is recorded (a
   replayed section has no VRAM samples). Exact.
5. `helper_without_process` — a helper-thread CPU step whose stream's previous work has
   a known end joins the shared cores by a timer, not a SimPy process. Exact.
6. `arithmetic_cpu` — when the worst-case CPU demand fits the host's cores, CPU steps
   are priced arithmetically instead of through the processor-sharing model (decided by
   the engine). Equal up to float rounding.

Recording a trace switches off only (4), which changes no number.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from cuzk_sim.model.compiled import CompiledPlan
from cuzk_sim.model.fast_state import MEET, FastLayer, FastPaths, FastRun, plain_adapter
from cuzk_sim.model.machine import Machine
from cuzk_sim.model.runtime import PANIC, Worker, driver_call, meet, panic
from cuzk_sim.steps.registry import KINDS

__all__ = ["FastLayer", "FastPaths", "execute"]


def _with_driver(handler: Any, op: str, seconds: float) -> Any:
    """A step that pays a sync buffer's cudaMalloc / cudaFree first (runtime.driver_call):
    a free, or any such call on a device with one in-order queue, first sees what the
    others queued (it meets them at the worker's time)."""

    def call(x: FastRun, pc: int, now: float) -> Any:
        driver_call(x.m, x.w, op, seconds)
        return handler(x, pc)

    def run(x: FastRun, pc: int) -> Any:
        if (op == "free" or x.dev.shared_stream) and x.w.t_ready > x.env.now:
            x.act = call
            return MEET
        return call(x, pc, x.env.now)

    return run


def _table(x: FastRun) -> tuple:
    """The fast handler of each step of x's plan in this run: its kind's choice (each
    exact under the precondition the kind states), else its plain handler; a step with a
    driver call pays it first."""
    layer, cp = x.layer, x.cp
    key = (id(cp), x.record, x.shared_cores, x.dev.shared_stream)
    table = layer.tables.get(key)
    if table is None:
        handlers = []
        for pc, s in enumerate(cp.steps):
            kind = KINDS[s.op]
            chooser = kind.fast or (lambda s, pc, x, plain=kind.plain: plain_adapter(plain))
            handler = chooser(s, pc, x)
            if cp.driver_s is not None and cp.driver_s[pc]:
                handler = _with_driver(handler, s.op, cp.driver_s[pc])
            handlers.append(handler)
        table = layer.tables[key] = tuple(handlers)
    return table


def execute(
    m: Machine,
    w: Worker,
    cp: CompiledPlan,
    part: str,
    seconds: tuple[float, ...],
    layer: FastLayer,
) -> Generator[object, object, bool]:
    """Run one partition's plan with the speed-ups of `layer`; True when it completed,
    False when the worker panicked. Every step's semantics is its kind's plain handler's."""
    env = m.env
    w.begin(env.now)
    x = layer.runs.get(w.name)
    if x is None or x.w is not w:
        x = layer.runs[w.name] = FastRun(m, w, layer)
    if x.begin(cp, part, seconds):
        table = x.table
    else:
        table = x.table = _table(x)
    pc, n = 0, len(table)
    while pc < n:
        r = table[pc](x, pc)
        while r.__class__ is not int:  # the handler has to wait
            if r is MEET:  # for the others: then it acts at that instant
                m.events += 1
                yield env.timeout(w.t_ready - env.now)
                r = x.act(x, pc, env.now)
            else:  # on something else: a generator
                r = yield from r
        if r == PANIC:
            yield from meet(m, w)  # a panic is seen by the others at its own time
            panic(m, w)
            return False
        pc = r
    w.drain()  # the partition is done when its queued GPU work is
    if w.t_ready > env.now:
        m.events += 1
        yield env.timeout(w.t_ready - env.now)
    return True
