"""`label`: a jump target. Resolved when the plan is compiled (model/compiled.py): a jump
goes to the step after it, and the label itself is dropped, so it has no handler."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cuzk_sim.steps.base import Name, StepIn, StepKind


@dataclass(frozen=True)
class Label:
    name: str
    op: Literal["label"] = "label"


class LabelIn(StepIn):
    op: Literal["label"]
    name: Name


KIND = StepKind(op="label", step=Label, schema=LabelIn, plain=None, defines_label=lambda s: s.name)
