"""The step-kind registry: every kind registered with a schema, a dataclass that agrees
with it, and a handler (or a declared resolution at compile time); a kind lacking one is
refused by the checks below, which the tests show on broken kinds made here."""

from __future__ import annotations

import dataclasses
import typing

import pytest
from pydantic import BaseModel

from cuzk_sim.model.interpreter import STEPS
from cuzk_sim.plan.contract import STEP_TYPES, Step
from cuzk_sim.steps.base import StepIn, StepKind
from cuzk_sim.steps.registry import KINDS

COMPILED_AWAY = {"label"}  # resolved by compile_plan (a jump goes past it): no handler


def kind_problems(kind: StepKind) -> list[str]:
    """Why a registered kind is incomplete (empty when it is whole)."""
    out = []
    if not (isinstance(kind.schema, type) and issubclass(kind.schema, StepIn)):
        out.append(f"{kind.op}: no JSON schema (a StepIn model)")
    if not dataclasses.is_dataclass(kind.step):
        out.append(f"{kind.op}: no step dataclass")
    if kind.plain is None and kind.op not in COMPILED_AWAY:
        out.append(f"{kind.op}: no plain handler")
    if kind.plain is None and kind.fast is not None:
        out.append(f"{kind.op}: a fast handler without a plain one to be checked against")
    if isinstance(kind.schema, type) and dataclasses.is_dataclass(kind.step):
        req = "(required)"
        fields = {
            f.name: req if f.default is dataclasses.MISSING else f.default
            for f in dataclasses.fields(kind.step)
        }
        schema = {
            n: req if f.is_required() else f.default for n, f in kind.schema.model_fields.items()
        }
        if set(fields) != set(schema):
            out.append(f"{kind.op}: dataclass fields {sorted(fields)} != schema {sorted(schema)}")
        for name, default in fields.items():
            if name != "op" and schema.get(name) != default:
                out.append(f"{kind.op}.{name}: default {default!r} != schema {schema.get(name)!r}")
    return out


@pytest.mark.parametrize("op", sorted(KINDS))
def test_every_registered_kind_is_whole(op):
    assert kind_problems(KINDS[op]) == []


def test_every_kind_of_the_plan_language_is_registered_and_handled():
    assert set(KINDS) == set(STEP_TYPES)
    assert {cls.__dataclass_fields__["op"].default for cls in typing.get_args(Step)} == set(KINDS)
    assert set(STEPS) == set(KINDS) - COMPILED_AWAY


@dataclasses.dataclass(frozen=True)
class _Teleport:
    where: str
    op: typing.Literal["teleport"] = "teleport"


class _TeleportIn(StepIn):
    op: typing.Literal["teleport"]
    where: str


def test_a_kind_registered_without_a_handler_is_refused():
    kind = StepKind(op="teleport", step=_Teleport, schema=_TeleportIn, plain=None)
    assert kind_problems(kind) == ["teleport: no plain handler"]


def test_a_kind_registered_without_a_schema_is_refused():
    def handler(m, w, cp, pc, seconds, part):
        return pc + 1
        yield

    kind = StepKind(op="teleport", step=_Teleport, schema=BaseModel, plain=handler)  # type: ignore[arg-type]
    assert kind_problems(kind)[0] == "teleport: no JSON schema (a StepIn model)"


def test_a_schema_that_drifts_from_its_dataclass_is_refused():
    class _Drifted(StepIn):
        op: typing.Literal["teleport"]
        where: str = "moon"

    kind = StepKind(op="teleport", step=_Teleport, schema=_Drifted, plain=STEPS["goto"])
    assert kind_problems(kind) == ["teleport.where: default '(required)' != schema 'moon'"]


def test_a_kind_whose_dataclass_names_another_op_is_refused():
    with pytest.raises(ValueError, match="its dataclass says op 'teleport'"):
        StepKind(op="warp", step=_Teleport, schema=_TeleportIn, plain=None)
