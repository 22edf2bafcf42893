"""The fits from cuzk's own timing lines (`Calibrator`; our pipeline's step lines go to
logs/step_fit.py), for `calibrate`.

Each fitted figure comes from one kind of line and the plan steps that line times (the
plan of the logged configuration, priced with the base profile; docs/logs.md):

- cpu.synthesis: SYNTH_END synth_ms (one partition's synthesis);
- cpu.prep_msm, cpu.msm_g2_cpu: prep_msm_ms, b_g2_msm_ms (the CPU steps);
- kernel.msm_g1: CUZK_NTT_H msm_invoke (the H MSM) and tail_msm_ms (the tail MSMs);
- kernel.ntt and kernel.pointwise: CUZK_NTT_H ntt_kernels + coset_intt_sync (without
  CUZK_NTT_H: ntt_msm_h_ms minus the H MSM), the NTT-H phase of the plan;
- copy_engine.pageable: when a/b/c are uploaded inside the NTT phase (no pre-staging),
  ntt_kernels minus the NTTs, priced at the rate coset_intt_sync (one NTT) shows;
- kernel.batch_add_g1 and _g2: batch_add_ms.

A figure is the median of its samples; cuzk truncates to whole ms, so 0.5 ms is added
to readings that vary (a constant reading is taken as exact). Groups of kinds timed by
one line (NTT and pointwise; the two batch additions) keep the base's ratio: one factor
scales the variable part of each. The H and tail MSMs give two points of the same
kind: a least-squares fixed + per-point cost. Every other figure is the base's, marked
`kept from base` in its `source`.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from cuzk_sim.io.errors import InputError
from cuzk_sim.logs.fit import Fit, least_squares_2
from cuzk_sim.logs.stats import Stat
from cuzk_sim.logs.step_fit import same_card, shape_from_plans, step_fits
from cuzk_sim.logs.timeline import Analyzer
from cuzk_sim.plan.builders.circuits import SHAPES, CircuitShape
from cuzk_sim.plan.contract import Copy, Cpu, Goto, Kernel, Label, Lock, Plan, Step, Unlock
from cuzk_sim.profiles.profile import Cost, Profile

MIN_SAMPLES = 1


@dataclass(frozen=True)
class PlanSections:
    """The steps of one partition's plan that each timing line covers (main path)."""

    ntt: list[Step]  # after the lock, before the H MSM (kernels and compute copies)
    coset: list[Kernel]
    msm_h: list[Kernel]
    batch: list[Kernel]
    tail: list[Kernel]
    prep: list[Cpu]
    b_g2: list[Cpu]
    held: list[Step]  # everything between the lock and the unlock (kernels and copies)
    tail_copies: list[Copy]  # copies after the H MSM, up to the last tail MSM


def main_path(plan: Plan) -> list[Step]:
    """The steps run when every allocation succeeds (fallbacks not taken)."""
    steps = plan.steps
    labels = {s.name: i for i, s in enumerate(steps) if isinstance(s, Label)}
    out: list[Step] = []
    pc = 0
    while pc < len(steps):
        s = steps[pc]
        if isinstance(s, Goto):
            pc = labels[s.label]
            continue
        if not isinstance(s, Label):
            out.append(s)
        pc += 1
    return out


def plan_sections(plan: Plan) -> PlanSections:
    path = main_path(plan)
    lock = next((i for i, s in enumerate(path) if isinstance(s, Lock)), -1)
    h = next(
        (i for i, s in enumerate(path) if isinstance(s, Kernel) and s.name.endswith("msm_h")),
        None,
    )
    unlock = next((i for i, s in enumerate(path) if isinstance(s, Unlock)), len(path))
    if h is None:
        h = lock
    ntt = [
        s
        for s in path[lock + 1 : h]
        if (isinstance(s, Kernel) and s.kind in ("ntt", "pointwise"))
        or (isinstance(s, Copy) and s.stream == "compute")
    ]
    after = [s for s in path[h + 1 : unlock] if isinstance(s, Kernel)]
    tails = [
        i
        for i in range(h + 1, unlock)
        if isinstance(path[i], Kernel) and path[i].kind in ("msm_g1", "msm_g2")
    ]
    last_tail = tails[-1] if tails else h
    return PlanSections(
        ntt=ntt,
        coset=[s for s in ntt if isinstance(s, Kernel) and s.name.endswith("coset_intt_h")],
        msm_h=[path[h]] if isinstance(path[h], Kernel) else [],
        batch=[s for s in after if s.kind.startswith("batch_add")],
        tail=[s for s in after if s.kind in ("msm_g1", "msm_g2")],
        tail_copies=[
            s for s in path[h + 1 : last_tail] if isinstance(s, Copy) and s.stream == "compute"
        ],
        held=[
            s
            for s in path[lock + 1 : unlock]
            if isinstance(s, Kernel) or (isinstance(s, Copy) and s.stream == "compute")
        ],
        prep=[s for s in path if isinstance(s, Cpu) and s.kind == "prep_msm"],
        b_g2=[s for s in path if isinstance(s, Cpu) and s.kind == "msm_g2_cpu"],
    )


def _reading(st: Stat) -> float:
    """The figure a stat gives (ms): the median, +0.5 ms for truncated varying readings."""
    return st.median + (0.5 if st.hi > st.lo else 0.0)


def _spread(st: Stat) -> float:
    m = st.median
    if not st.samples or not m:
        return 0.0
    return statistics.median(abs(v - m) for v in st.samples) / m


def _lines(st: Stat) -> str:
    return ", ".join(str(n) for n in st.lines[:3]) + (" ..." if st.n > 3 else "")


def _var(cost: Cost, size: int) -> float:
    return cost.seconds(size) - cost.fixed if size else 0.0


def _coset_var(b: Profile, sec) -> float:
    """The base's size-dependent time of the first coset iNTT (0: no rate to scale)."""
    c = sec.coset[0]
    return _var(b.kernels[c.kind], c.size)


class Calibrator:
    """Fits from one analysed log against a base profile and the logged plans."""

    def __init__(
        self,
        a: Analyzer,
        base: Profile,
        plans: dict[str, Plan],
        log_names: list[str],
        base_sizes: dict[str, int],
        shapes: dict[str, CircuitShape] | None = None,
    ) -> None:
        self.a, self.base, self.plans = a, base, plans
        self.base_sizes = base_sizes
        self.shapes = shapes or SHAPES
        self.logs = ", ".join(log_names)
        self.fits: list[Fit] = []
        self.notes: list[str] = []

    def stat(self, kind: str, name: str) -> Stat | None:
        st = self.a.kind_stats.get(kind, {}).get(name)
        return st if st is not None and st.n >= MIN_SAMPLES else None

    def prov(self, what: str, st: Stat, extra: str = "") -> str:
        return (
            f"fitted from {self.logs}: {what}, {st.n} samples (lines {_lines(st)}), median "
            f"{st.median:.1f} ms, spread {_spread(st):.1%}{extra}"
        )

    def run(self) -> list[Fit]:
        kinds = [k for k in self.plans if k in self.a.kind_stats]
        if self.a.step_stats:  # our pipeline's own step lines: they time every step
            self.notes += shape_from_plans(self.a.step_stats, self.a.step_names, self.plans)
            keep = same_card(self.a, self.base.gpu_model)
            if not keep:
                self.notes.append(
                    f"the log names another card than the base's ({self.base.gpu_model}): "
                    "below the sizes it measured, each figure's line, not the base's points"
                )
            self.fits += step_fits(self.a.step_stats, self.base, self.base_sizes, self.logs, keep)
            return self.fits
        if not kinds:
            raise InputError(
                f"{self.logs}: no complete job of a known proof kind in the log (found "
                f"{sorted(self.a.kind_stats) or 'none'}); nothing to calibrate"
            )
        for kind in kinds:  # one kind is the usual log; several fit one after another
            self._fit_kind(kind)
        return self.fits

    def _cpu(self, kind: str, key: str, figure: str, size: int, what: str) -> None:
        st = self.stat(kind, figure)
        if st is None:
            return
        cost = self.base.cpus[key]
        obs = _reading(st) / 1000
        k = (obs - cost.fixed) / _var(cost, size) if _var(cost, size) else math.nan
        if not k > 0:
            self.notes.append(f"cpu.{key}: reading {obs:.3f} s below its fixed cost; kept")
            return
        at = self.size_of(f"cpu.{key}")
        basis = "measured" if size == at else "fitted"
        scaling = (
            f"measured at the profile's size {at:,} ({kind})"
            if size == at
            else f"measured at size {size:,} ({kind}), rescaled to the profile's size "
            f"{at:,} by the base's {cost.scaling} cost (x{k:.3f} on its variable part)"
        )
        prov = self.prov(f"{what} ({kind}, size {size})", st)
        if size != at:
            prov += f"; {scaling}"
        self._add(f"cpu.{key}", cost, k, prov, basis=basis, samples=st.n, scaling=scaling)

    def _add(
        self,
        key: str,
        cost: Cost,
        k: float,
        prov: str,
        fixed: float | None = None,
        basis: str = "fitted",
        samples: int = 0,
        scaling: str = "",
    ) -> None:
        size = self.size_of(key)
        base_s = cost.seconds(size)
        f = cost.fixed if fixed is None else fixed
        fitted = f + (base_s - cost.fixed) * k
        scaling = scaling or f"x{k:.3f} on the base's variable cost at size {size:,} (fixed kept)"
        self.fits.append(
            Fit(key, base_s, fitted, size, fixed, prov, basis, samples=samples, scaling=scaling)
        )

    def size_of(self, key: str) -> int:
        """The size the profile states the figure at (its `size` key)."""
        return self.base_sizes[key]

    def _fit_kind(self, kind: str) -> None:
        sec = plan_sections(self.plans[kind])
        self._fit_cpus(kind, sec)
        msm_fit = self._fit_msm(kind, sec)
        self._fit_ntt(kind, sec, msm_fit)
        self._fit_batch(kind, sec)
        self._fit_section(kind, sec)

    def _fit_cpus(self, kind: str, sec: PlanSections) -> None:
        """The CPU steps: synthesis, prep_msm and the CPU G2 MSM."""
        shape = self.shapes[kind]
        if shape.synthesis_s is None:
            self._cpu(kind, "synthesis", "synth_ms", shape.constraints, "SYNTH_END synth_ms")
        else:  # the scenario fixes the synthesis time: the profile's figure is not used
            self.notes.append(f"cpu.synthesis: {kind}'s synthesis time is set by the scenario")
        for s in sec.prep[:1]:
            self._cpu(kind, "prep_msm", "prep_msm_ms", s.size, "CUZK_TIMING prep_msm_ms")
        for s in sec.b_g2[:1]:
            self._cpu(kind, "msm_g2_cpu", "b_g2_msm_ms", s.size, "CUZK_TIMING b_g2_msm_ms")

    def _fit_msm(self, kind: str, sec: PlanSections) -> Cost | None:
        """The G1 MSM from the H MSM and the tail MSMs: two points of one cost (the fitted
        cost, which the NTT fit needs, or None)."""
        b = self.base
        msm = b.kernels["msm_g1"]
        eqs: list[tuple[float, float, float, Stat, str]] = []  # (count, work, seconds, ...)
        h_st = self.stat(kind, "ntt_h.msm_invoke")
        if h_st is not None and sec.msm_h:
            eqs.append((1, float(sec.msm_h[0].size), _reading(h_st) / 1000, h_st, "msm_invoke"))
        t_st = self.stat(kind, "tail_msm_ms")
        g1_tail = [s for s in sec.tail if s.kind == "msm_g1"]
        g2_tail_s = sum(
            b.kernel_seconds(s.kind, s.size, "tail") for s in sec.tail if s.kind == "msm_g2"
        )
        tail_copy_s = sum(b.copy_seconds(c.bytes, c.pinned) for c in sec.tail_copies)
        if t_st is not None and g1_tail:
            eqs.append(
                (
                    len(g1_tail),
                    float(sum(s.size for s in g1_tail)),
                    _reading(t_st) / 1000 - g2_tail_s - tail_copy_s,
                    t_st,
                    "tail_msm_ms",
                )
            )
        msm_fit: Cost | None = None
        if eqs and _var(msm, self.size_of("kernel.msm_g1")):  # 0: nothing to scale (kept)
            fixed, per = _two_point(eqs, msm.fixed)
            msm_fit = Cost(fixed, per, msm.scaling)
            size = self.size_of("kernel.msm_g1")
            k = _var(msm_fit, size) / _var(msm, size)
            what = " and ".join(
                f"CUZK {e[4]} ({e[3].n} samples, lines {_lines(e[3])}, median {e[3].median:.1f} ms)"
                for e in eqs
            )
            self._add(
                "kernel.msm_g1",
                msm,
                k,
                f"fitted from {self.logs}: {what}; fixed {fixed * 1e3:.3f} ms + "
                f"{per * 1e9:.4f} ns/point",
                fixed=fixed if len(eqs) > 1 else None,
                samples=sum(e[3].n for e in eqs),
                scaling=(
                    "fixed + per-point least squares over the H MSM and the tail MSMs"
                    if len(eqs) > 1
                    else f"per point from {eqs[0][4]} alone (the base's fixed cost kept)"
                )
                + f", read at the profile's size {size:,}",
            )

        return msm_fit

    def _fit_ntt(self, kind: str, sec: PlanSections, msm_fit: Cost | None) -> None:
        """NTT + pointwise (one factor), and the upload where the NTTs reveal it."""
        b = self.base
        msm = b.kernels["msm_g1"]
        group = [s for s in sec.ntt if isinstance(s, Kernel)]
        copies = [s for s in sec.ntt if isinstance(s, Copy)]
        # CUZK_NTT_H's ntt_kernels + coset_intt_sync end with the coset iNTT: the copies
        # before it (a/b/c), not those between it and the H MSM (its points, ours)
        cut = sec.ntt.index(sec.coset[0]) if sec.coset else len(sec.ntt)
        early = [s for s in sec.ntt[:cut] if isinstance(s, Copy)]
        pre_kernels = [s for s in sec.ntt[: cut + 1] if isinstance(s, Kernel)]
        g_fixed = sum(b.kernels[s.kind].fixed for s in group)
        g_var = sum(_var(b.kernels[s.kind], s.size) for s in group)
        copy_s = sum(b.copy_seconds(s.bytes, s.pinned) for s in copies)
        kern, coset = self.stat(kind, "ntt_h.ntt_kernels"), self.stat(kind, "ntt_h.coset_intt_sync")
        k_ntt: float | None = None
        n_ntt = 0
        if kern is not None and coset is not None and group and sec.coset and _coset_var(b, sec):
            # one coset iNTT alone gives the NTT rate; the rest of the phase then shows
            # the upload when a/b/c are copied inside it (pageable, no pre-staging)
            total = (_reading(kern) + _reading(coset)) / 1000
            c = sec.coset[0]
            cost = b.kernels[c.kind]
            k_ntt = (_reading(coset) / 1000 - cost.fixed) / _var(cost, c.size)
            prov = self.prov("CUZK_NTT_H coset_intt_sync (one coset iNTT)", coset)
            n_ntt = coset.n
            pre_fixed = sum(b.kernels[s.kind].fixed for s in pre_kernels)
            pre_var = sum(_var(b.kernels[s.kind], s.size) for s in pre_kernels)
            upload = total - (pre_fixed + k_ntt * pre_var)
            nbytes = sum(s.bytes for s in early)
            lat = b.copy_latency * len(early)
            if early and all(not s.pinned for s in early) and upload > lat:
                bw = nbytes / (upload - lat)
                self.fits.append(
                    Fit(
                        "copy_engine.pageable",
                        b.pageable_bw,
                        bw,
                        None,
                        None,
                        f"fitted from {self.logs}: CUZK_NTT_H ntt_kernels + coset_intt_sync "
                        f"({kern.n} samples, lines {_lines(kern)}) minus the NTT-H kernels "
                        f"at the NTT rate of coset_intt_sync: {nbytes / 2**30:.2f} GiB of "
                        f"HtoD in {upload * 1e3:.1f} ms",
                        samples=kern.n,
                        scaling="bytes / (the phase's time less its kernels)",
                    )
                )
        else:
            nm = self.stat(kind, "ntt_msm_h_ms")
            if nm is not None and group and sec.msm_h:
                h = sec.msm_h[0]
                h_s = (msm_fit or msm).seconds(h.size)
                k_ntt = (_reading(nm) / 1000 - h_s - copy_s - g_fixed) / g_var if g_var else None
                n_ntt = nm.n
                prov = self.prov(
                    "CUZK_TIMING ntt_msm_h_ms",
                    nm,
                    f"; minus the H MSM ({h_s * 1e3:.1f} ms) and {copy_s * 1e3:.1f} ms of copies",
                )
        if k_ntt is not None and k_ntt > 0:
            for kk in ("ntt", "pointwise"):
                if any(s.kind == kk for s in group):
                    self._add(
                        f"kernel.{kk}",
                        b.kernels[kk],
                        k_ntt,
                        prov
                        + ("" if kk == "ntt" else "; scaled with kernel.ntt (one line times both)"),
                        samples=n_ntt,
                    )

    def _fit_batch(self, kind: str, sec: PlanSections) -> None:
        """The batch additions: one factor for G1 and G2."""
        b = self.base
        ba = self.stat(kind, "batch_add_ms")
        if ba is not None and sec.batch:
            fixed = sum(b.kernels[s.kind].fixed for s in sec.batch)
            var = sum(_var(b.kernels[s.kind], s.size) for s in sec.batch)
            k = (_reading(ba) / 1000 - fixed) / var if var else 0
            if k > 0:
                for kk in ("batch_add_g1", "batch_add_g2"):
                    if any(s.kind == kk for s in sec.batch):
                        self._add(
                            f"kernel.{kk}",
                            b.kernels[kk],
                            k,
                            self.prov(
                                "CUZK_TIMING batch_add_ms (all batch additions, "
                                "one factor for G1 and G2)",
                                ba,
                            ),
                            samples=ba.n,
                        )

    def _fit_section(self, kind: str, sec: PlanSections) -> None:
        """Without per-phase lines (a log of our own pipeline, an older binary), the
        mutex-held time still times the whole GPU section: one factor for every kernel
        kind in it, when no finer line priced any of them (copies at the base's rate)."""
        held = self.stat(kind, "mutex_held_ms")
        kernels = [s for s in sec.held if isinstance(s, Kernel)]
        kinds = sorted({s.kind for s in kernels})
        done = {f.key for f in self.fits}
        if held is None or not kinds or any(f"kernel.{k}" in done for k in kinds):
            return
        b = self.base
        copies = sum(b.copy_seconds(s.bytes, s.pinned) for s in sec.held if isinstance(s, Copy))
        fixed = sum(b.kernels[s.kind].fixed for s in kernels)
        var = sum(_var(b.kernels[s.kind], s.size) for s in kernels)
        k = (_reading(held) / 1000 - copies - fixed) / var if var else 0.0
        if k <= 0:
            self.notes.append(
                f"mutex_held_ms (median {held.median:.0f} ms) is not longer than the GPU "
                f"section's copies and fixed costs ({(copies + fixed) * 1e3:.1f} ms at the "
                "base's rates): kernel figures kept"
            )
            return
        for kk in kinds:
            self._add(
                f"kernel.{kk}",
                b.kernels[kk],
                k,
                self.prov(
                    "CUZK_TIMING mutex_held_ms (the whole GPU section; one factor for "
                    f"{', '.join(kinds)})",
                    held,
                    f"; minus {copies * 1e3:.1f} ms of copies at the base's rate",
                ),
                samples=held.n,
            )


def _two_point(
    eqs: list[tuple[float, float, float, Stat, str]], base_fixed: float
) -> tuple[float, float]:
    """Least squares of count·fixed + work·per = seconds; one equation keeps the base's
    fixed cost, a negative fixed cost is clamped to 0."""
    if len(eqs) == 1:
        a, w, t = eqs[0][:3]
        return base_fixed, max(t - a * base_fixed, 0.0) / w
    return least_squares_2((a, w, t, 1.0) for a, w, t, *_ in eqs)
