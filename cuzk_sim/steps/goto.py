"""`goto`: jump to a label (always forward: plans terminate)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cuzk_sim.model.fast_state import FastRun
from cuzk_sim.steps.base import Name, StepIn, StepKind


@dataclass(frozen=True)
class Goto:
    label: str
    op: Literal["goto"] = "goto"


class GotoIn(StepIn):
    op: Literal["goto"]
    label: Name


def step_goto(m, w, cp, pc, seconds, part):
    return cp.labels[cp.steps[pc].label]
    yield  # a generator like the others


def _fast(x: FastRun, pc: int) -> int:
    return x.labels[x.steps[pc].label]


KIND = StepKind(
    op="goto",
    step=Goto,
    schema=GotoIn,
    plain=step_goto,
    fast=lambda s, pc, x: _fast,
    jump=lambda s: s.label,
    falls_through=False,
)
