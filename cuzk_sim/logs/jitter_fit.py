"""Measured timing jitter: the spread of CUZK_SIM_STEP durations, fitted per step kind.

`cuzk-sim gpu-run --log` times every GPU step of every partition with CUDA events
(CUZK_SIM_STEP lines, logs/emit.py). One log is one run (one process). A step is
identified by (name, size, bytes, pinned) — `compute_h.intt_a` at 2^20 — and is timed
once per partition; its partitions are delimited by the host `assemble` step that ends
each one. Each duration d is compared with that step's own mean, so steps of all sizes
pool into one relative spread per kind (`kernel.ntt`, `copy.pinned`, `copy.pageable`,
`copy.dtoh`, `cpu.assemble`). With y = ln d, per step:

    y = m + a_run + b_partition + e

a one-way decomposition by method of moments: a_run (the between-run component) is the
run's mean of y minus the step's grand mean, corrected for the within-run noise it
averages (var(a) = var(run means) - var(within) / n); b_partition is the partition's
mean residual over the kind's steps in that partition (a partition slow in all its
NTTs), corrected likewise; e the rest. Each is reported as a relative standard deviation
(sqrt(exp(var) - 1)); the model draws the run and partition factors lognormal.

The per-step factor's family is chosen by the held-out log-likelihood: the residual
ratios d / (step mean in its run x partition factor) of the even-numbered runs fit each
of lognormal, normal and gamma (mean 1, maximum likelihood for the spread), and the
family with the highest mean log-likelihood on the odd-numbered runs wins (ties to
lognormal); the KS distance of each on the held-out runs is reported too. The spread
written is refitted on all runs.

Not measured here: the lock hand-over and the workers' start offsets. gpu-run's TIMELINE
lines have 1 ms resolution and its workers start within 1 ms of each other, so neither
has a spread that these logs resolve; they use the `default` entry (the pooled kernel
spread), and the table's source says so.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from scipy import stats as sps
from scipy.special import digamma

from cuzk_sim.io.errors import InputError
from cuzk_sim.model.jitter import MAX_JITTER

STEP_RE = re.compile(r"CUZK_SIM_STEP: (\S+) kind=(\S+) size=(\d+) bytes=(\d+) pinned=(\d) us=(\d+)")
MIN_US = 20  # steps shorter than this are timer resolution and launch noise, not spread
MIN_PER_STEP = 2  # a step needs this many timings in a run to have a within-run spread
FAMILIES = ("lognormal", "normal", "gamma")


@dataclass(frozen=True)
class Timing:
    group: int  # runs of one code (the between-run component compares only these)
    run: int  # which log
    partition: int  # which partition of that run (counted by its assemble step)
    step: tuple[str, int, int, int]  # name, size, bytes, pinned
    kind: str  # jitter kind: kernel.ntt, copy.pinned, cpu.assemble, ...
    seconds: float


def jitter_kind(kind: str, pinned: int) -> str:
    if kind == "copy_htod":
        return "copy.pinned" if pinned else "copy.pageable"
    if kind == "copy_dtoh":
        return "copy.dtoh"
    if kind == "assemble":
        return "cpu.assemble"
    return f"kernel.{kind}"


def read_timings(paths: list[Path], groups: list[int] | None = None) -> list[Timing]:
    """Every CUZK_SIM_STEP line of every log, by run and partition. groups: per log, its
    code group (default: all one)."""
    out: list[Timing] = []
    groups = groups or [0] * len(paths)
    for run, path in enumerate(paths):
        try:
            text = path.read_text(errors="replace")
        except OSError as e:
            raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
        part = 0
        for line in text.splitlines():
            m = STEP_RE.search(line)
            if m is None:
                continue
            name, kind, size, nbytes, pinned, us = m.groups()
            step = (name, int(size), int(nbytes), int(pinned))
            t = Timing(groups[run], run, part, step, jitter_kind(kind, int(pinned)), int(us) / 1e6)
            if int(us) >= MIN_US:
                out.append(t)
            if kind == "assemble":
                part += 1
    return out


def _rel(var: float) -> float:
    """The relative standard deviation of a lognormal factor whose log has variance var."""
    return math.sqrt(math.expm1(max(var, 0.0)))


def _var(xs: list[float]) -> float:
    n = len(xs)
    if n < 2:
        return 0.0
    m = sum(xs) / n
    return sum((x - m) ** 2 for x in xs) / (n - 1)


@dataclass
class KindFit:
    kind: str
    samples: int
    runs: int
    run_pairs: int  # (step, run) means the between-run component was estimated from
    seconds: float  # the kind's measured time in all (weights the pooled entries)
    run_var: float  # of ln d: between runs
    partition_var: float  # between partitions within a run
    step_var: float  # the rest
    family: str = "lognormal"
    step_rel: float = 0.0  # relative sd of the per-step factor in `family`
    heldout_loglik: dict[str, float] = field(default_factory=dict)
    heldout_ks: dict[str, float] = field(default_factory=dict)
    residuals: list[tuple[int, float]] = field(default_factory=list, repr=False)  # run, ratio

    @property
    def run_rel(self) -> float:
        return _rel(self.run_var)

    @property
    def partition_rel(self) -> float:
        return _rel(self.partition_var)


def decompose(kind: str, ts: list[Timing]) -> KindFit | None:
    """The variance components of ln d for one kind (module docstring)."""
    by_step: dict[tuple, list[Timing]] = defaultdict(list)
    for t in ts:
        by_step[t.step].append(t)
    run_devs: list[float] = []
    within_vars: list[tuple[float, int]] = []  # (within-run variance, n) per step and run
    resid: list[tuple[Timing, float]] = []  # ln d minus the step's mean in its run
    for rows in by_step.values():
        per_run: dict[int, list[Timing]] = defaultdict(list)
        for t in rows:
            per_run[t.run].append(t)
        per_run = {r: v for r, v in per_run.items() if len(v) >= MIN_PER_STEP}
        if not per_run:
            continue
        means = {r: sum(math.log(t.seconds) for t in v) / len(v) for r, v in per_run.items()}
        by_group: dict[int, list[int]] = defaultdict(list)
        for r, v in per_run.items():
            by_group[v[0].group].append(r)
        for rs in by_group.values():  # runs of one code: their means differ by noise only
            if len(rs) >= 2:
                grand = sum(means[r] for r in rs) / len(rs)
                # unbiased: the deviations from a mean of k runs have (k-1)/k the variance
                run_devs.extend(
                    ((means[r] - grand) * math.sqrt(len(rs) / (len(rs) - 1)), len(per_run[r]))
                    for r in rs
                )
        for r, v in per_run.items():
            ys = [math.log(t.seconds) for t in v]
            within_vars.append((_var(ys), len(v)))
            resid.extend((t, y - means[r]) for t, y in zip(v, ys, strict=True))
    if len(resid) < 10:
        return None
    w_var = sum(v * (n - 1) for v, n in within_vars) / max(sum(n - 1 for _, n in within_vars), 1)
    n_bar = sum(n for _, n in within_vars) / len(within_vars)
    run_var = 0.0
    if run_devs:
        run_var = max(sum(d * d for d, _ in run_devs) / len(run_devs) - w_var / n_bar, 0.0)
    # partitions: the mean residual over the kind's steps in one partition of one run
    per_part: dict[tuple[int, int], list[float]] = defaultdict(list)
    for t, e in resid:
        per_part[(t.run, t.partition)].append(e)
    part_means = [(sum(v) / len(v), len(v)) for v in per_part.values() if len(v) >= 2]
    part_var = 0.0
    if len(part_means) >= 3:
        k_bar = sum(k for _, k in part_means) / len(part_means)
        raw = sum(m * m for m, _ in part_means) / len(part_means)
        part_var = max((raw - w_var / k_bar) / (1 - 1 / k_bar), 0.0) if k_bar > 1 else 0.0
        part_var = min(part_var, w_var)
    pmean = {p: sum(v) / len(v) for p, v in per_part.items()}
    # the partition effect removed as its best linear predictor: the partition's mean
    # residual shrunk by part_var / (part_var + step_var / k) (nothing when part_var is 0)
    step_var = max(w_var - part_var, 0.0)
    count = {p: len(v) for p, v in per_part.items()}

    def shrunk(p: tuple[int, int]) -> float:
        if part_var == 0.0:
            return 0.0
        return pmean[p] * part_var / (part_var + step_var / count[p])

    raw_ratios = [(t, math.exp(e - shrunk((t.run, t.partition)))) for t, e in resid]
    # each step's ratios in a run scaled to an arithmetic mean of 1 (the factors the model
    # draws have mean 1; exp of a mean-0 log residual does not)
    sums: dict[tuple, list[float]] = defaultdict(lambda: [0.0, 0])
    for t, x in raw_ratios:
        acc = sums[(t.step, t.run)]
        acc[0] += x
        acc[1] += 1
    ratios = [
        (t.run, x * sums[(t.step, t.run)][1] / sums[(t.step, t.run)][0]) for t, x in raw_ratios
    ]
    runs = len({t.run for t in ts})
    total = sum(t.seconds for t, _ in resid)
    fit = KindFit(kind, len(resid), runs, len(run_devs), total, run_var, part_var, step_var)
    fit.residuals = ratios
    return fit


def fit_family(family: str, xs: list[float]) -> float:
    """The relative sd of a mean-1 `family` fitted to ratios xs by maximum likelihood
    (lognormal: of the logs; normal: the rms deviation from 1; gamma: the shape's MLE)."""
    n = len(xs)
    if family == "lognormal":
        logs = [math.log(x) for x in xs]
        m = sum(logs) / n
        return _rel(sum((y - m) ** 2 for y in logs) / n)
    if family == "normal":
        return math.sqrt(sum((x - 1) ** 2 for x in xs) / n)
    # gamma with mean fixed at 1: shape k maximises k ln k - ln G(k) + (k-1) mean ln x - k mean x
    s = sum(math.log(x) for x in xs) / n - sum(xs) / n
    lo, hi = 1e-3, 1e7
    for _ in range(200):  # bisection on the score ln k + 1 - digamma(k) + s = 0
        mid = math.sqrt(lo * hi)
        if math.log(mid) + 1 - float(digamma(mid)) + s > 0:
            lo = mid
        else:
            hi = mid
    return 1 / math.sqrt(lo)


def frozen(family: str, rel: float):
    """The scipy distribution of a mean-1 factor with relative sd rel."""
    rel = max(rel, 1e-6)
    if family == "lognormal":
        s2 = math.log1p(rel * rel)
        return sps.lognorm(s=math.sqrt(s2), scale=math.exp(-s2 / 2))
    if family == "normal":
        return sps.norm(loc=1.0, scale=rel)
    k = 1 / (rel * rel)
    return sps.gamma(a=k, scale=1 / k)


def choose_family(fit: KindFit) -> None:
    """Held-out selection (module docstring); sets family, step_rel and the scores."""
    train = [x for r, x in fit.residuals if r % 2 == 0]
    test = [x for r, x in fit.residuals if r % 2 == 1]
    if len(train) < 10 or len(test) < 10:  # one run: split by position instead
        xs = [x for _, x in fit.residuals]
        train, test = xs[0::2], xs[1::2]
    for fam in FAMILIES:
        d = frozen(fam, fit_family(fam, train))
        fit.heldout_loglik[fam] = float(sum(d.logpdf(x) for x in test) / len(test))
        fit.heldout_ks[fam] = float(sps.kstest(test, d.cdf).statistic)
    fit.family = max(FAMILIES, key=lambda f: (fit.heldout_loglik[f], f == "lognormal"))
    fit.step_rel = min(fit_family(fit.family, [x for _, x in fit.residuals]), MAX_JITTER)


def fit_jitter(paths: list[Path], groups: list[int] | None = None) -> list[KindFit]:
    """Per kind, the fitted components (kinds with too few timings left out)."""
    ts = read_timings(paths, groups)
    by_kind: dict[str, list[Timing]] = defaultdict(list)
    for t in ts:
        by_kind[t.kind].append(t)
    fits = []
    for kind in sorted(by_kind):
        f = decompose(kind, by_kind[kind])
        if f is not None:
            choose_family(f)
            fits.append(f)
    return fits


def _entry(f: KindFit) -> dict:
    return {
        "family": f.family,
        "step": round(f.step_rel, 5),
        "partition": round(min(f.partition_rel, MAX_JITTER), 5),
        "run": round(min(f.run_rel, MAX_JITTER), 5),
        "samples": f.samples,
        "runs": f.runs,
    }


def pooled(fits: list[KindFit]) -> dict:
    """One entry for several kinds: each variance component (of ln d) averaged with the
    kinds' measured time as weights, so the entry prices the time a scenario spends, not
    the many sub-millisecond steps; the family lognormal."""
    w = sum(f.seconds for f in fits)

    def avg(v: str) -> float:
        return sum(getattr(f, v) * f.seconds for f in fits) / w

    step = avg("step_var")
    return {
        "family": "lognormal",
        "step": round(min(_rel(step), MAX_JITTER), 5),
        "partition": round(min(_rel(avg("partition_var")), MAX_JITTER), 5),
        "run": round(min(_rel(avg("run_var")), MAX_JITTER), 5),
        "samples": sum(f.samples for f in fits),
        "runs": max(f.runs for f in fits),
    }


def jitter_table(
    paths: list[Path], names: list[str] | None = None, groups: list[int] | None = None
) -> dict | None:
    """The profile's `[jitter]` table fitted from the logs (None: no CUZK_SIM_STEP lines
    with a spread). `kernel` pools the kernel kinds, `default` every kind, weighted by
    time (`pooled`); `cpu` is the host step measured (cpu.assemble) for the CPU kinds
    these logs do not time (synthesis, prep)."""
    fits = fit_jitter(paths, groups)
    if not fits:
        return None
    kinds = {f.kind: _entry(f) for f in fits}
    kernels = [f for f in fits if f.kind.startswith("kernel.")]
    if kernels:
        kinds["kernel"] = pooled(kernels)
    if "cpu.assemble" in kinds:
        kinds["cpu"] = dict(kinds["cpu.assemble"])
    kinds["default"] = pooled(fits)
    names = names or [str(p) for p in paths]
    choice = "; ".join(
        f"{f.kind}: {f.family} (held-out mean log-lik "
        + ", ".join(f"{k} {v:.3f}" for k, v in f.heldout_loglik.items())
        + ")"
        for f in fits
    )
    return {
        "source": (
            f"fitted by cuzk-sim calibrate (logs/jitter_fit.py) from the CUZK_SIM_STEP lines "
            f"of {len(paths)} runs ({', '.join(names)}); {sum(f.samples for f in fits)} "
            f"steps of >= {MIN_US} us; ln d = step mean + run + partition + step, by method "
            f"of moments; the per-step family by the mean log-likelihood on held-out "
            f"(odd-numbered) runs: {choice}. `kernel` and `default` pool the kinds weighted "
            f"by their measured time; `cpu` (synthesis, prep: not timed by these logs) is "
            f"cpu.assemble's. Lock hand-over and worker start offsets are not resolved by "
            f"these logs (1 ms TIMELINE): they use `default`."
        ),
        "basis": "fitted",
        "kind": kinds,
    }
