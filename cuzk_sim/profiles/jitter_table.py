"""A profile's `[jitter]` table: measured timing noise per step kind.

`cuzk-sim calibrate` writes it from CUZK_SIM_STEP lines (cuzk_sim/logs/jitter_fit.py);
`cuzk-sim run --replicas` samples it (cuzk_sim/model/jitter.py):

    [jitter]
    source = "fitted from ...: 6 runs, 9700 steps; family by held-out log-likelihood"
    basis = "fitted"

    [jitter.kind."kernel.ntt"]
    family = "lognormal"   # of the per-step factor: lognormal | normal | gamma
    step = 0.081           # relative standard deviation of the per-step factor
    partition = 0.012      # ... of the factor one partition's steps of this kind share
    run = 0.034            # ... of the factor one run (process) shares
    samples = 2674         # steps measured (information; not read by the model)
    runs = 6

A kind the table does not name uses its prefix's entry (`kernel.msm_g1` -> `kernel`),
then `default`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cuzk_sim.io.errors import InputError, from_validation
from cuzk_sim.model.jitter import MAX_JITTER, Component, MeasuredJitter


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _ComponentIn(_Strict):
    family: Literal["lognormal", "normal", "gamma"] = "lognormal"
    step: float = Field(ge=0.0, le=MAX_JITTER)
    partition: float = Field(0.0, ge=0.0, le=MAX_JITTER)
    run: float = Field(0.0, ge=0.0, le=MAX_JITTER)
    samples: int | None = Field(None, ge=0)
    runs: int | None = Field(None, ge=0)


class JitterIn(_Strict):
    source: str = ""
    basis: Literal["measured", "fitted", "derived", "assumed"] | None = None
    kind: dict[str, _ComponentIn]


def measured_jitter(raw: dict, source: str) -> MeasuredJitter:
    """The `[jitter]` table of the profile `source` as the model samples it."""
    try:
        j = JitterIn.model_validate(raw)
    except ValidationError as e:
        raise from_validation(f"{source}: [jitter]", e) from None
    if not j.kind:
        raise InputError(f'{source}: [jitter]: names no kind ([jitter.kind."kernel"] ...)')
    comps = {k: Component(c.family, c.step, c.partition, c.run) for k, c in sorted(j.kind.items())}
    return MeasuredJitter(comps, j.source)


def describe(mj: MeasuredJitter) -> str:
    """One line: which kinds, and the step spread of each."""
    parts = [
        f"{k} {c.family} {c.step:.1%}/{c.partition:.1%}/{c.run:.1%}"
        for k, c in mj.components.items()
    ]
    return "per kind, step/partition/run relative sd: " + "; ".join(parts)


def figure_rows(mj: MeasuredJitter | None) -> list[tuple[str, str, str]]:
    """(key, value, source) per kind, as `profile show` lists a profile's figures."""
    if mj is None:
        return []
    return [
        (
            f"jitter.{k}",
            f"{c.family}: step {c.step:.1%}, partition {c.partition:.1%}, run {c.run:.1%} "
            "(relative sd)",
            mj.source,
        )
        for k, c in mj.components.items()
    ]
