"""The step kinds of the plan language: the one place a kind is registered.

A new kind is a module in cuzk_sim/steps/ that defines its `KIND` (steps/base.py says
what it holds) and one entry below. The plan's dataclasses and JSON schema, plan
analysis, pricing, the plain interpreter and the fast layer all read this table.
"""

from __future__ import annotations

from cuzk_sim.steps import alloc, copy, cpu, free, goto, kernel, label, lock, sync, unlock
from cuzk_sim.steps.base import StepKind

KINDS: dict[str, StepKind] = {
    k.op: k
    for k in (
        lock.KIND,
        unlock.KIND,
        alloc.KIND,
        free.KIND,
        copy.KIND,
        kernel.KIND,
        cpu.KIND,
        sync.KIND,
        label.KIND,
        goto.KIND,
    )
}
