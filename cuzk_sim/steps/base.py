"""What a step kind is: the record one module registers, and the pieces every kind's
schema is made of.

A `StepKind` gathers everything about one `op` of the plan language: the frozen dataclass
(what the step means), its JSON schema (pydantic, strict), its static facts for plan
analysis, its pricing by the calibration profile, its plain handler and, where one
exists, the chooser of its fast handlers (model/fast.py) with the precondition under
which each is exact. Facts a kind does not have keep the defaults below (no jump, no host
contact, no mutex, no threads ...), so a kind states only what is true of it.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

MutexScope = Literal["device", "process", "global", "none"]
Allocator = Literal["sync", "async", "caching"]
Direction = Literal["HtoD", "DtoH", "DtoD"]
Memory = Literal["device", "host_pinned"]

EXCLUSIVE_SCOPES = ("device", "global", "process")  # a held mutex of these excludes others

MAX_STEPS = 100_000  # the cuzk PoRep plan has about 60; our prover's a few hundred
MAX_BYTES = 2**50  # 1 PiB, as units.MAX_SIZE_BYTES
MAX_WORK_SIZE = 2**50  # elements or points of one kernel or cpu step
MAX_THREADS = 65_536  # as the scenario's hardware.host_cores
MAX_STEP_SECONDS = 86_400.0  # a measured kernel or copy (Kernel/Copy.seconds): a day

Name = Annotated[str, StringConstraints(min_length=1, max_length=256)]
Text = Annotated[str, StringConstraints(max_length=4096)]
Bytes = Annotated[int, Field(ge=0, le=MAX_BYTES)]
WorkSize = Annotated[int, Field(ge=0, le=MAX_WORK_SIZE)]
Threads = Annotated[int, Field(ge=0, le=MAX_THREADS)]
# a measured duration: finite, non-negative; an integer number of seconds is taken too
Seconds = Annotated[float, Field(ge=0, le=MAX_STEP_SECONDS, allow_inf_nan=False)]


class PlanError(ValueError):
    """A plan that cannot be executed; the message names the step index and field."""


class StepIn(BaseModel):
    """The JSON schema of one step: strict (a string is never a boolean), no unknown keys."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


# (machine, worker, compiled plan, pc, seconds, partition) -> next pc, or PANIC
PlainHandler = Callable[..., Generator[object, object, int]]
# (run, pc) -> next pc, or a generator that returns it (model/fast.py)
FastHandler = Callable[..., Any]
# (step, pc, run) -> the fast handler of this step in this run (model/fast.py builds a
# table of them per compiled plan); a kind returns its plain adapter where no speed-up's
# precondition holds
FastChooser = Callable[[Any, int, Any], FastHandler]


def _none(_s: Any) -> None:
    return None


def _false(_s: Any) -> bool:
    return False


def _zero(_s: Any) -> int:
    return 0


def _no_time(_s: Any, _profile: Any, _where: str) -> float:
    return 0.0


def _no_merge(_prev: Any, _s: Any) -> bool:
    return False


def _no_driver(_s: Any, _profile: Any, _sync_live: dict[str, int]) -> float:
    return 0.0


@dataclass(frozen=True)
class StepKind:
    """One step kind, registered once in cuzk_sim/steps/__init__.py."""

    op: str
    step: type  # the frozen dataclass
    schema: type[StepIn]  # its JSON form
    plain: PlainHandler | None  # None: resolved when the plan is compiled (`label`)
    fast: FastChooser | None = None  # None: the fast layer runs the plain handler
    # pricing: the step's seconds by the calibration profile (before jitter)
    price: Callable[[Any, Any, str], float] = _no_time
    # the kind measured jitter looks its noise up by (model/jitter.py MeasuredJitter:
    # `kernel.ntt`, `copy.pinned`, ...); None: timing jitter leaves its duration alone
    jitter_kind: Callable[[Any], str | None] = _none
    # (step, profile, live sync buffers' bytes) -> host seconds of its driver call
    # (cudaMalloc / cudaFree of a `sync` device buffer), paid before it acts
    driver: Callable[[Any, Any, dict[str, int]], float] = _no_driver
    # static facts (plan/analysis.py), each of one step
    defines_label: Callable[[Any], str | None] = _none
    jump: Callable[[Any], str | None] = _none  # the label it may jump to
    falls_through: bool = True  # False: it always jumps (`goto`)
    memory: Callable[[Any], str | None] = _none  # "device" / "host": it allocates or frees
    makes_cache: Callable[[Any], str | None] = _none  # a persistent per-device buffer
    fills: Callable[[Any], str | None] = _none  # the persistent per-device buffer it fills
    takes: Callable[[Any], str | None] = _none  # the mutex it takes
    gives: Callable[[Any], str | None] = _none  # the mutex it releases
    section: Callable[[Any], tuple[str, bool] | None] = _none  # (mutex, per device) guarded
    touches_host: Callable[[Any], bool] = _false  # may meet the host (see plan.analysis)
    threads: Callable[[Any], int] = _zero  # CPU threads it occupies
    helper_stream: Callable[[Any], str | None] = _none  # a helper thread's stream it runs on
    joins: Callable[[Any], str | None] = _none  # the stream it waits for
    merges_with: Callable[[Any, Any], bool] = _no_merge  # (previous step, step)

    def __post_init__(self) -> None:
        declared = self.step.__dataclass_fields__["op"].default  # type: ignore[attr-defined]
        if declared != self.op:
            raise ValueError(f"step kind {self.op!r}: its dataclass says op {declared!r}")
