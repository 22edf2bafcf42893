"""Profile figures from CUZK_SIM_STEP lines: every step of our pipeline, timed.

`cuzk-sim gpu-run --log` writes one line per GPU step of each partition (CUDA events on
the worker's stream; the time includes the stream's idle wait for the host to issue the
step, so host launch overhead is priced where it is paid) and one per host assembly.
From them:

- each kernel kind: the mean per size (`_center`); over two sizes or more, a weighted
  least squares (relative residuals) of fixed + per-unit x work(size), with the base's
  scaling (n or n log2 n); at one size, the base's fixed cost is kept and the per-unit
  cost refitted;
- copy_engine.pageable / .pinned and .latency: host-to-device copies, latency + bytes /
  bandwidth over the copies' sizes (pageable gives the latency when it has two sizes),
  and the mean time at each size measured (`pageable_points` / `pinned_points`);
- cpu.assemble: the mean of the assembly lines.

A cuzk daemon does not write these lines: for its logs calibrate uses cuzk's own lines
(cuzk_sim/logs/calibrate.py).
"""

from __future__ import annotations

import math

from cuzk_sim.calibration import Cost, Profile, _work
from cuzk_sim.logs.fit import Fit, least_squares_2
from cuzk_sim.logs.stats import Stat

StepKey = tuple[str, int, int, bool]  # kind, size, bytes, pinned


def _center(st: Stat) -> float:
    """The mean: the model predicts seconds per proof, a mean over partitions, so each
    step is priced by its mean time (a slow tail costs throughput; a median hides it)."""
    return st.mean


def _lines(sts: list[Stat]) -> str:
    first = sorted(n for st in sts for n in st.lines)[:3]
    return ", ".join(str(n) for n in first)


def _wls(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(intercept, slope) minimising sum(((a + b x - y) / y)^2); a < 0 is clamped to 0."""
    return least_squares_2((1.0, x, y, 1.0 / (y * y)) for x, y in points)


SAME_SIZE = 1.5  # sizes closer than this ratio are one size (2^18 - 1 and 2^18 points)


def _size_groups(per_size: dict[int, list[Stat]]) -> list[dict[int, list[Stat]]]:
    """Sizes grouped where each is within SAME_SIZE of the previous: a least squares
    over 262142, 262143 and 262144 points would fit noise, not a per-point cost."""
    groups: list[dict[int, list[Stat]]] = []
    last = 0
    for size in sorted(per_size):
        if groups and size < last * SAME_SIZE:
            groups[-1][size] = per_size[size]
        else:
            groups.append({size: per_size[size]})
        last = size
    return groups


def _per_size(per_size: dict[int, list[Stat]]) -> list[tuple[int, float, int]]:
    """(size, mean seconds, samples) per group of nearly equal sizes (`_size_groups`), the
    group named by its most timed size."""
    out = []
    for group in _size_groups(per_size):
        merged = Stat()
        for sts in group.values():
            for st in sts:
                merged.merge(st)
        size = max(group, key=lambda k: sum(st.n for st in group[k]))
        out.append((size, _center(merged) / 1000, merged.n))
    return out


def _residual(points: list[tuple[float, float]], a: float, b: float) -> float:
    return max(abs(a + b * x - y) / y for x, y in points)


def step_fits(
    stats: dict[StepKey, Stat], base: Profile, sizes: dict[str, int], logs: str
) -> list[Fit]:
    """The figures the step lines measure (see the module docstring)."""
    by_kind: dict[str, dict[int, list[Stat]]] = {}
    copies: dict[bool, list[tuple[int, Stat]]] = {}
    assemble: list[Stat] = []
    for (kind, size, nbytes, pinned), st in stats.items():
        if kind == "copy_htod" and nbytes > 0:
            copies.setdefault(pinned, []).append((nbytes, st))
        elif kind == "assemble":
            assemble.append(st)
        elif kind in base.kernels and size > 0:
            by_kind.setdefault(kind, {}).setdefault(size, []).append(st)
    fits = [
        _kernel_fit(kind, per_size, base, sizes, logs) for kind, per_size in sorted(by_kind.items())
    ]
    for pinned, rows in sorted(copies.items()):
        fits += _copy_fits(pinned, rows, base, logs)
    if assemble:
        fits.append(_assemble_fit(assemble, base, sizes, logs))
    return fits


def _kernel_fit(
    kind: str, per_size: dict[int, list[Stat]], base: Profile, sizes: dict[str, int], logs: str
) -> Fit:
    """One kernel kind: fixed + per-unit cost over the sizes measured."""
    cost = base.kernels[kind]
    measured = _per_size(per_size)
    pts = [(_work(size, cost.scaling), t) for size, t, _ in measured]
    sizes_times = [(size, t) for size, t, _ in measured]
    samples = sum(n for _, _, n in measured)
    if len(pts) >= 2:
        fixed, per = _wls(pts)
        how = f"least squares over {len(pts)} sizes"
    else:
        w, t = pts[0]
        fixed = cost.fixed if cost.fixed < t else 0.0
        per, how = (t - fixed) / w, "one size: the base's fixed cost kept"
    # the measured sizes themselves, read off by the model (Cost.points)
    new = Cost(fixed, per, cost.scaling, tuple(pts) if len(pts) >= 2 else ())
    at = sizes[f"kernel.{kind}"]
    size_list = ", ".join(f"2^{int(math.log2(s))}" if s & (s - 1) == 0 else str(s)
                          for s in sorted(per_size))  # fmt: skip
    return Fit(
        f"kernel.{kind}",
        cost.seconds(at),
        new.seconds(at),
        at,
        fixed,
        f"fitted from {logs}: CUZK_SIM_STEP lines ({samples} steps at sizes "
        f"{size_list}, lines {_lines([s for v in per_size.values() for s in v])}), "
        f"{how}: fixed {fixed * 1e3:.4f} ms + {per * 1e9:.6g} ns per unit of work "
        f"({cost.scaling}); largest residual of that line {_residual(pts, fixed, per):.1%}"
        + (
            "; the model reads the times off the sizes measured (`points`)" if len(pts) >= 2 else ""
        ),
        points=tuple((size, t) for size, t in sizes_times) if len(pts) >= 2 else (),
        samples=samples,
        scaling=f"{how} ({size_list}), read at the profile's size {at:,}",
    )


def _copy_fits(pinned: bool, rows: list[tuple[int, Stat]], base: Profile, logs: str) -> list[Fit]:
    """Host-to-device copies of one kind (pinned or pageable): latency + bytes / rate, and
    the latency itself from pageable copies of two sizes or more."""
    fits: list[Fit] = []
    per_bytes: dict[int, Stat] = {}
    for nbytes, st in rows:
        per_bytes.setdefault(nbytes, Stat()).merge(st)
    pts = [(float(b), _center(st) / 1000) for b, st in sorted(per_bytes.items())]
    key = "pinned" if pinned else "pageable"
    if len(pts) >= 2 and not pinned:
        lat, per = _wls(pts)
    else:
        lat = base.copy_latency
        per = sum(max(t - lat, 1e-9) for _, t in pts) / sum(b for b, _ in pts)
    n = sum(st.n for st in per_bytes.values())
    prov = (
        f"fitted from {logs}: CUZK_SIM_STEP host-to-device copies ({n} copies of "
        f"{len(pts)} sizes, lines {_lines(list(per_bytes.values()))}): latency "
        f"{lat * 1e3:.4f} ms + bytes at {1 / per / 2**30:.3f} GiB/s; largest residual "
        f"{_residual(pts, lat, per):.1%}"
    )
    # the measured sizes themselves (sizes within SAME_SIZE as one), read off by the
    # model: the driver's rate is no constant over sizes (pageable: 5.0 GiB/s at 8-16
    # MiB, 7.5 at 32-64 MiB on the H200)
    read = [(size, t) for size, t, _ in _per_size({b: [st] for b, st in per_bytes.items()})]
    if len(read) >= 2:
        prov += "; the model reads the times off the sizes measured (`points`)"
    base_bw = base.pinned_bw if pinned else base.pageable_bw
    fits.append(
        Fit(
            f"copy_engine.{key}",
            base_bw,
            1 / per,
            None,
            None,
            prov,
            points=tuple(read) if len(read) >= 2 else (),
            samples=n,
            scaling=f"latency + bytes / rate over {len(pts)} copy sizes",
        )
    )
    if not pinned and len(pts) >= 2:
        fits.append(
            Fit(
                "copy_engine.latency",
                base.copy_latency,
                lat,
                None,
                None,
                prov,
                samples=n,
                scaling=f"the intercept of the rate's fit over {len(pts)} copy sizes",
            )
        )
    return fits


def _assemble_fit(assemble: list[Stat], base: Profile, sizes: dict[str, int], logs: str) -> Fit:
    """cpu.assemble: the mean of the assembly lines, as measured."""
    merged = Stat()
    for st in assemble:
        merged.merge(st)
    cost = base.cpus["assemble"]
    at = sizes["cpu.assemble"]
    t = _center(merged) / 1000
    return Fit(
        "cpu.assemble",
        cost.seconds(at),
        t,
        at,
        0.0,
        f"measured by {logs}: CUZK_SIM_STEP assemble ({merged.n} lines, "
        f"{_lines(assemble)}), mean {t * 1e3:.3f} ms",
        basis="measured",
        samples=merged.n,
        scaling="the mean, as measured (no rescaling)",
    )
