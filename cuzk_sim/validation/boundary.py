"""The model's VRAM boundary of a scenario and the caps the real runs take around it.

The boundary is the smallest `hardware.vram` at which the model predicts no fatal OOM,
found by bisection between the CUDA context (nothing fits) and the profile's whole card,
to a bracket `tolerance` wide relative to the boundary. Every cap is then predicted by
its own model run: the verdict at a cap is never inferred from the boundary, because
memory-aware fallbacks can make fitting non-monotone in the card's size.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from cuzk_sim.results.sim_result import SimResult
from cuzk_sim.scenario import Scenario
from cuzk_sim.simulate.runner import simulate

MIB = 1 << 20


def at_vram(scn: Scenario, vram: int) -> Scenario:
    """The scenario on a card of `vram` bytes (nothing else changes)."""
    return dataclasses.replace(scn, config=dataclasses.replace(scn.config, vram=vram))


def fits(result: SimResult) -> bool:
    return not result.oom and not result.stalled


@dataclass(frozen=True)
class Boundary:
    vram: int | None  # smallest safe VRAM found; None: OOM even on the whole card
    unsafe_below: int  # the largest VRAM seen to OOM
    card: int  # the profile's whole card (the bisection's upper end)
    model_runs: int


def vram_boundary(
    scn: Scenario,
    tolerance: float = 0.001,
    run: Callable[[Scenario], SimResult] = simulate,
) -> Boundary:
    """Bisect the smallest VRAM without a predicted OOM, to `tolerance` (relative)."""
    card = scn.profile.vram
    lo = scn.config.context_overhead + MIB  # all but nothing: must OOM
    runs = 0

    def ok(v: int) -> bool:
        nonlocal runs
        runs += 1
        return fits(run(at_vram(scn, v)))

    if not ok(card):
        return Boundary(None, card, card, runs)
    if ok(lo):
        return Boundary(lo, lo - 1, card, runs)
    hi = card
    while hi - lo > max(tolerance * hi, 4096):
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return Boundary(hi, lo, card, runs)


def caps_around(
    boundary: Boundary, percents: tuple[float, ...], generous: bool, floor: int
) -> list[tuple[str, int]]:
    """(label, VRAM bytes) of each real run: the boundary +- each percent (those above
    `floor`, the CUDA context, and at most the card), then the whole card if generous."""
    out: list[tuple[str, int]] = []
    if boundary.vram is not None:
        for pct in percents:
            v = int(round(boundary.vram * (1 + pct / 100)))
            if floor < v <= boundary.card:
                out.append((f"{pct:+g}%", v))
    if generous and all(v != boundary.card for _, v in out):
        out.append(("card", boundary.card))
    return out
