"""Running statistics of one measured figure, in bounded memory.

Sums for the mean and spread, min and max, a seeded reservoir of samples for the median
(exact below RESERVOIR samples), and the first lines the figure came from (provenance).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

RESERVOIR = 4096  # samples kept per figure: the median is exact below this many


def _finite(v: float) -> float | None:
    """A reading as a finite float, or None (an integer too large for a float, inf): the
    parser refuses such values, so this only guards the sums."""
    try:
        f = float(v)
    except (OverflowError, TypeError, ValueError):
        return None
    return v if math.isfinite(f) else None  # as given: an int stays an int


@dataclass
class Stat:
    """Running count / sum / sum of squares / min / max, a seeded reservoir of samples
    (for the median), and the first lines the figure came from."""

    n: int = 0
    total: float = 0.0
    sq: float = 0.0
    lo: float = math.inf
    hi: float = -math.inf
    lines: list[int] = field(default_factory=list)
    samples: list[float] = field(default_factory=list)
    rng: int = 88172645463325252  # a 64-bit LCG state: the reservoir is deterministic

    def add(self, v: float, lineno: int | None = None) -> None:
        v = _finite(v)
        if v is None:
            return
        self.n += 1
        self.total += v
        self.sq += v * v
        if v < self.lo:
            self.lo = v
        if v > self.hi:
            self.hi = v
        if lineno is not None and len(self.lines) < 5:
            self.lines.append(lineno)
        self._keep(v)

    def _keep(self, v: float) -> None:
        if len(self.samples) < RESERVOIR:
            self.samples.append(v)
        else:  # reservoir sampling with our own seeded generator
            self.rng = (self.rng * 6364136223846793005 + 1442695040888963407) % (1 << 64)
            j = (self.rng >> 16) % self.n
            if j < RESERVOIR:
                self.samples[j] = v

    def extend(self, vals: list[float], lineno: int | None = None) -> None:
        """Add many readings at once (a finished job's), in order."""
        vals = [f for f in map(_finite, vals) if f is not None]
        if not vals:
            return
        self.total += sum(vals)
        self.sq += sum(v * v for v in vals)
        self.lo = min(self.lo, min(vals))
        self.hi = max(self.hi, max(vals))
        if lineno is not None and len(self.lines) < 5:
            self.lines.append(lineno)
        room = RESERVOIR - len(self.samples)
        if room >= len(vals):
            self.samples.extend(vals)
            self.n += len(vals)
            return
        for v in vals:
            self.n += 1
            self._keep(v)

    def merge(self, o: Stat) -> None:
        for v in o.samples:
            self.n += 1
            self._keep(v)
        self.n += o.n - len(o.samples)
        self.total += o.total
        self.sq += o.sq
        self.lo = min(self.lo, o.lo)
        self.hi = max(self.hi, o.hi)
        self.lines = sorted(self.lines + o.lines)[:5]

    @property
    def mean(self) -> float:
        return self.total / self.n if self.n else math.nan

    @property
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else math.nan

    @property
    def std(self) -> float:
        if self.n < 2:
            return 0.0
        return math.sqrt(max(self.sq / self.n - self.mean**2, 0.0))

    def to_dict(self) -> dict:
        return {
            "n": self.n,
            "mean": self.mean if self.n else None,
            "median": self.median if self.n else None,
            "std": self.std,
            "min": self.lo if self.n else None,
            "max": self.hi if self.n else None,
            "lines": self.lines,
        }
