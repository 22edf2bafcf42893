"""A plan made ready to execute: every step priced by the profile, labels resolved.

`compile_plan` is the one place a plan meets the calibration profile. Its static facts
(locks, host touching, CPU demand, which kernels may merge) come from
`plan.analysis.analyze`; it only prices steps and lays them out. The one fast-layer
decision taken here is kernel-run merging (`merge`): a run of consecutive compute-stream
kernels with no label between becomes one step whose time is the sum — exact, because
a blocking kernel starts where the previous one ended and no other worker can issue in
between (no step of the run yields). The merged step keeps its parts (name, seconds),
so a trace still shows each kernel and timing jitter still perturbs each one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from cuzk_sim.io.errors import InputError
from cuzk_sim.model.jitter import Jitter
from cuzk_sim.plan.analysis import PlanAnalysis
from cuzk_sim.plan.contract import Plan, Step
from cuzk_sim.profiles.profile import Profile
from cuzk_sim.steps.kernel import Parts
from cuzk_sim.steps.registry import KINDS


@dataclass(frozen=True)
class CompiledPlan:
    """A plan with every step priced by the profile and every label resolved."""

    plan: Plan
    steps: tuple[Step, ...]
    seconds: tuple[float, ...]
    labels: dict[str, int]  # label -> index of the step after it
    exclusive: bool  # every device alloc/free runs under a mutex that excludes the others
    # per step: may it meet the host (a host memory step, a CPU step, or a step that reads
    # a stream a helper-thread CPU step may still hold)? The hot loop tests only this.
    host_touching: tuple[bool, ...] = ()
    parts: tuple[Parts | None, ...] = ()  # per step: the kernels merged into it, if any
    analysis: PlanAnalysis | None = None
    # per step: host seconds of the driver call of a `sync` device buffer's alloc (its
    # cudaMalloc) or free (its cudaFree, paid once the device is idle); None: all zero
    driver_s: tuple[float, ...] | None = None
    # per step: the kind measured jitter looks its noise up by (its step kind's
    # `jitter_kind`; "kernel" for a merged run); None: jitter leaves it alone
    jitter_kinds: tuple[str | None, ...] = ()


def compile_plan(plan: Plan, profile: Profile, merge: bool = True) -> CompiledPlan:
    """Price every step and resolve labels to indices (a jump goes to the step after the
    label; labels are dropped). merge: fold runs of compute-stream kernels (see above);
    never on one in-order queue (plan meta gpu_stream "legacy_default..."), where the host
    pays each kernel's launch (cuzk_sim/steps/kernel.py ISSUE_S, LAUNCH_S)."""
    facts = plan.analysis()
    merge = merge and not str(plan.meta.get("gpu_stream", "")).startswith("legacy_default")
    steps: list[Step] = []
    seconds: list[float] = []
    parts: list[Parts | None] = []
    touching: list[bool] = []
    labels: dict[str, int] = {}
    driver: list[float] = []
    noise: list[str | None] = []
    sync_bytes: dict[str, int] = {}  # live sync buffers (a free is priced by their size)
    for i, s in enumerate(plan.steps):
        kind = KINDS[s.op]
        call = kind.driver(s, profile, sync_bytes)
        label = kind.defines_label(s)
        if label is not None:
            labels[label] = len(steps)
            continue
        where = f"plan {plan.name}: steps[{i}] ({s.op} {getattr(s, 'name', '')})"
        t = kind.price(s, profile, where)
        if merge and facts.mergeable[i]:
            prev = steps[-1]
            parts[-1] = (*(parts[-1] or ((prev.name, seconds[-1]),)), (s.name, t))
            seconds[-1] += t
            steps[-1] = dataclasses.replace(prev, name=f"{prev.name}+{s.name}")
            noise[-1] = "kernel"  # its parts' pooled kind (profile [jitter.kind.kernel])
            continue
        steps.append(s)
        seconds.append(t)
        parts.append(None)
        touching.append(facts.host_touching[i])
        driver.append(call)
        noise.append(kind.jitter_kind(s))
    for s in steps:
        target = KINDS[s.op].jump(s)
        if target is not None and target not in labels:
            raise InputError(f"plan {plan.name}: jump to undefined label {target!r}")
    return CompiledPlan(
        plan,
        tuple(steps),
        tuple(seconds),
        labels,
        facts.memory_all_locked,
        tuple(touching),
        tuple(parts),
        facts,
        tuple(driver) if any(driver) else None,
        tuple(noise),
    )


def durations(cp: CompiledPlan, jitter: Jitter) -> tuple[float, ...]:
    """The step times of one execution: the compiled ones, or each kernel, copy and CPU
    step (each kernel of a merged run) scaled by a fresh jitter factor."""
    if not jitter:
        return cp.seconds
    scale = jitter.scale
    jitter.partition()  # one execution: measured jitter's per-partition factors
    out = []
    for t, run, kind in zip(cp.seconds, cp.parts, cp.jitter_kinds, strict=True):
        if run is not None:  # a merged kernel run: each kernel its own factor
            out.append(sum(scale(p, kind) for _, p in run))
        elif kind is not None:
            out.append(scale(t, kind))
        else:
            out.append(t)
    return tuple(out)
