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

from cuzk_sim.logs.fit import Fit, least_squares_2
from cuzk_sim.logs.stats import Stat
from cuzk_sim.profiles.profile import Cost, Profile, _work

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


LATENCY_SHARE = 0.1  # of the smallest copy's time, for its intercept to be the latency
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


def shape_from_plans(
    stats: dict[StepKey, Stat], names: dict[StepKey, set[str]], plans: dict
) -> list[str]:
    """Logs written before gpu-run's step lines carried an MSM's `zeros=` / `ones=` (the
    2^27 run of 2026-12-03 16:33) time the PoRep witness's MSMs without saying so: fitted
    as random-scalar prices they made msm_g1 77 % cheaper. Where the plans calibrated
    against (`--scenario`) give a kernel of that name a scalar shape, its untagged steps
    are moved to `<kind>.shaped` (fitted by none), as tagged ones are. Returns notes."""
    from cuzk_sim.steps.kernel import Kernel

    shaped = {
        s.name
        for plan in plans.values()
        for s in plan.steps
        if isinstance(s, Kernel) and s.zeros is not None
    }
    moved: dict[str, int] = {}
    for key in list(stats):
        kind, size, nbytes, pinned = key
        if kind.endswith(".shaped") or not names.get(key) or not names[key] <= shaped:
            continue
        st = stats.pop(key)
        into = (f"{kind}.shaped", size, nbytes, pinned)
        stats.setdefault(into, Stat()).merge(st)
        for n in names[key]:
            moved[n] = moved.get(n, 0) + st.n
    if not moved:
        return []
    said = ", ".join(f"{n} ({k})" for n, k in sorted(moved.items()))
    return [
        f"MSM steps without zeros=/ones= whose plan step has a scalar shape (the scenario's): "
        f"{said}; kept out of the random-scalar fit"
    ]


def same_card(a, model: str) -> bool:
    """Is every card the log names (CUZK_SIM_DEVICE lines of an Analyzer `a`) the base's
    `model`? A log naming none is taken as the base's card, as calibrate's [gpu] does."""
    from cuzk_sim.profiles.profile import _card_key

    return all(_card_key(name) == _card_key(model) for name, _ in a.cards.values())


def below(
    base: tuple[tuple[float, float], ...], measured: list[tuple[float, float]], keep: bool
) -> tuple[tuple[float, float], ...]:
    """The measured (x, seconds) points, and the base's below them (more than SAME_SIZE
    below the smallest measured) when `keep` (the log is the base's card), ascending.
    Below the sizes measured the nearest segment's line says nothing (through 2^26 and
    2^27 it gives a 2^16 NTT no time at all); above them it stays the model's rule."""
    if not measured or not keep:
        return tuple(sorted(measured))
    lo = min(x for x, _ in measured)
    return tuple(sorted([*((x, t) for x, t in base if x * SAME_SIZE < lo), *measured]))


def _size_of(work: float, scaling: str) -> int:
    """The size whose work (profiles/profile.py `_work`) is `work`: the inverse of n log2 n
    by bisection (the points are written as sizes)."""
    if scaling != "n_log_n" or work <= 2:
        return round(work)
    lo, hi = 2, max(3, round(work))
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if mid * math.log2(mid) <= work else (lo, mid)
    return lo if abs(lo * math.log2(lo) - work) <= abs(hi * math.log2(hi) - work) else hi


def _residual(points: list[tuple[float, float]], a: float, b: float) -> float:
    return max(abs(a + b * x - y) / y for x, y in points)


def step_fits(
    stats: dict[StepKey, Stat],
    base: Profile,
    sizes: dict[str, int],
    logs: str,
    keep: bool = True,
) -> list[Fit]:
    """The figures the step lines measure (see the module docstring). keep: the log is
    the base's card (or names none), so the base's points below the sizes measured stay."""
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
        _kernel_fit(kind, per_size, base, sizes, logs, keep)
        for kind, per_size in sorted(by_kind.items())
    ]
    for pinned, rows in sorted(copies.items()):
        fits += _copy_fits(pinned, rows, base, logs, keep)
    if assemble:
        fits.append(_assemble_fit(assemble, base, sizes, logs))
    return fits


def _kernel_fit(
    kind: str,
    per_size: dict[int, list[Stat]],
    base: Profile,
    sizes: dict[str, int],
    logs: str,
    keep: bool,
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
    # the measured sizes themselves, read off by the model (Cost.points); below the
    # sizes measured the base's points stay (a 2^26-2^27 log says nothing of 2^16)
    base_sizes = [(float(_size_of(w, cost.scaling)), t) for w, t in cost.points]
    merged = below(tuple(base_sizes), [(float(size), t) for size, t in sizes_times], keep)
    kept = len(merged) - len(pts)
    work = tuple((_work(int(size), cost.scaling), t) for size, t in merged)
    new = Cost(fixed, per, cost.scaling, work if len(merged) >= 2 else ())
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
        + ("; the model reads the times off the sizes measured (`points`)" if len(pts) >= 2 else "")
        + (f"; below them the base's {kept} points, kept" if kept else ""),
        points=tuple((int(size), t) for size, t in merged) if len(merged) >= 2 else (),
        samples=samples,
        scaling=f"{how} ({size_list}), read at the profile's size {at:,}"
        + (" (below them: the base's points)" if kept and at * SAME_SIZE < min(per_size) else ""),
    )


def _copy_fits(
    pinned: bool, rows: list[tuple[int, Stat]], base: Profile, logs: str, keep: bool
) -> list[Fit]:
    """Host-to-device copies of one kind (pinned or pageable): latency + bytes / rate, and
    the latency itself from pageable copies of two sizes or more."""
    fits: list[Fit] = []
    per_bytes: dict[int, Stat] = {}
    for nbytes, st in rows:
        per_bytes.setdefault(nbytes, Stat()).merge(st)
    pts = [(float(b), _center(st) / 1000) for b, st in sorted(per_bytes.items())]
    key = "pinned" if pinned else "pageable"
    # the intercept says the latency only where the latency is a part of what was timed:
    # the base's latency >= LATENCY_SHARE of the smallest copy's time (a log of 11 MiB -
    # 12 GiB copies alone fitted 5.8 ms, 26 times the H200's, from one cold first copy)
    fit_latency = not pinned and len(pts) >= 2 and base.copy_latency >= LATENCY_SHARE * pts[0][1]
    if fit_latency:
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
    base_pts = base.pinned_points if pinned else base.pageable_points
    merged = below(base_pts, [(float(b), t) for b, t in read], keep)
    if len(read) >= 2:
        prov += "; the model reads the times off the sizes measured (`points`)"
    if len(merged) > len(read):
        prov += f"; below them the base's {len(merged) - len(read)} points, kept"
    if not pinned and len(pts) >= 2 and not fit_latency:
        prov += (
            f"; the latency kept from the base ({base.copy_latency * 1e3:.4f} ms is under "
            f"{LATENCY_SHARE:.0%} of the smallest copy's {pts[0][1] * 1e3:.3f} ms)"
        )
    base_bw = base.pinned_bw if pinned else base.pageable_bw
    fits.append(
        Fit(
            f"copy_engine.{key}",
            base_bw,
            1 / per,
            None,
            None,
            prov,
            points=tuple((int(b), t) for b, t in merged) if len(merged) >= 2 else (),
            samples=n,
            scaling=f"latency + bytes / rate over {len(pts)} copy sizes",
        )
    )
    if fit_latency:
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
