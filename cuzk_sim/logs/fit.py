"""One fitted profile figure with its provenance (what calibrate writes, per figure), and
the two-parameter least squares every fit of a fixed and a variable cost uses."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass


def least_squares_2(rows: Iterable[tuple[float, float, float, float]]) -> tuple[float, float]:
    """(p, q) minimising sum w (a p + b q - t)^2 over rows (a, b, t, w). A solution with
    p < 0 or q <= 0 (or a singular system) gives p = 0 and q fitted alone."""
    saa = sab = sbb = sat = sbt = 0.0
    for a, b, t, w in rows:
        saa, sab, sbb = saa + w * a * a, sab + w * a * b, sbb + w * b * b
        sat, sbt = sat + w * a * t, sbt + w * b * t
    det = saa * sbb - sab * sab
    if det > 0:
        p = (sat * sbb - sab * sbt) / det
        q = (saa * sbt - sab * sat) / det
        if p >= 0 and q > 0:
            return p, q
    return 0.0, sbt / sbb


@dataclass(frozen=True)
class Fit:
    """One fitted figure: where it goes in the profile, its value and its provenance."""

    key: str  # "cpu.synthesis", "kernel.ntt", "copy_engine.pageable"
    base_s: float  # the base's time at the figure's size (s), or bandwidth (B/s)
    fitted_s: float
    size: int | None
    fixed_s: float | None  # a new fixed cost (msm_g1's two-point fit), else the base's
    provenance: str
    basis: str = "fitted"  # "measured": one line timed exactly this step at this size
    points: tuple[tuple[int, float], ...] = ()  # (size, seconds) measured, for Cost.points
    samples: int = 0  # readings it was fitted from
    scaling: str = ""  # how the readings became the figure at the profile's size

    @property
    def change(self) -> float:
        return self.fitted_s / self.base_s - 1 if self.base_s else math.nan
