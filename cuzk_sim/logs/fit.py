"""One fitted profile figure with its provenance (what calibrate writes, per figure)."""

from __future__ import annotations

import math
from dataclasses import dataclass


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

    @property
    def change(self) -> float:
        return self.fitted_s / self.base_s - 1 if self.base_s else math.nan
