"""Probes of what moves the model's race in w2-nomutex-18 (docs/validation.md, "Races":
the miss of 2026-12-03 and its cause), at the cards the race call's runs really had:

  --offsets   no jitter; the second worker starts D ms after the first, D = 0, 0.5, ...,
              60 ms (uniform over two partitions): P(OOM) is the share of D that OOM.
              Spreading the two workers' relative phase widely: does it widen the race?
  --kinds     measured jitter kept for one group of step kinds only (the others none):
              which kinds' noise makes the replicas race at +0 .. +2 %.
  --walls     the card's runs that fit (run length, the time proof 0 is done) against
              the model's (50 replicas on a card with room), and the model's gap
              between the two workers' msm_l starts, per partition pair
  --assembly  the spread of the host assembly in the committed two-worker logs (the
              CUZK_SIM_STEP assemble lines) and the correlation of consecutive ones

Usage: python benchmarks/race_phase_probe.py --offsets | --kinds [REPLICAS] | --walls |
       --assembly   (~10 s each)
"""

from __future__ import annotations

import gzip
import json
import statistics
import sys
from pathlib import Path

from cuzk_sim.model import gpu_loop
from cuzk_sim.model.jitter import Component, MeasuredJitter
from cuzk_sim.simulate.runner import simulate
from cuzk_sim.validation.boundary import at_vram
from cuzk_sim.validation.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]
CALL = ROOT / "docs/validation/h200-2026-12-03-races/call/real.jsonl.gz"
CONFIG = "w2-nomutex-18"
KINDS = ("cpu", "copy.pageable", "copy.pinned", "copy.dtoh", "kernel.ntt", "kernel.msm")


def cards() -> dict[str, int]:
    with gzip.open(CALL, "rt") as f:
        rows = [json.loads(line) for line in f]
    return {d["cap"]: d["achieved_vram"] for d in rows if d["config"] == CONFIG}


def offsets(scn, caps: dict[str, int]) -> None:
    delay: dict[str, float] = {}
    serve = gpu_loop.GpuLoop.serve

    def delayed(self, w):  # the worker starts its loop `delay` later
        if delay.get(w.name):
            yield self.ctx.env.timeout(delay[w.name])
        yield from serve(self, w)

    gpu_loop.GpuLoop.serve = delayed
    grid = [i * 0.5e-3 for i in range(121)]
    for cap, vram in sorted(caps.items(), key=lambda kv: kv[1]):
        at = at_vram(scn, vram)
        row = ""
        for d in grid:
            delay["gpu0-w1"] = d
            row += "X" if simulate(at).oom else "."
        print(f"{cap:8s} P(OOM) over D {row.count('X') / len(row):.2f}  {row}")
    gpu_loop.GpuLoop.serve = serve


def kinds(scn, caps: dict[str, int], replicas: int) -> None:
    for keep in ("(none)", *KINDS, "(all)"):
        row = []
        for cap in ("race+0%", "race+1%", "race+2%"):
            at = at_vram(scn, caps[cap])
            mj = at.profile.jitter
            comps = {
                k: c if keep == "(all)" or k.startswith(keep) else Component(c.family)
                for k, c in mj.components.items()
            }
            only = MeasuredJitter(comps, mj.source)
            ooms = sum(simulate(at, replica=i, measured=only).oom for i in range(replicas))
            row.append(f"{cap} {ooms / replicas:.2f}")
        print(f"jitter of {keep:14s}: " + "  ".join(row))


def walls(spec) -> None:
    with gzip.open(CALL, "rt") as f:
        rows = [json.loads(line) for line in f]
    for c in spec.configs:
        fit = [d["real"] for d in rows if d["config"] == c.name and not d["real"]["oom"]]
        ends = [r["sim_time_s"] * 1e3 for r in fit]
        done = [float(x.split()[0]) * 1e3 for r in fit for x in r["log"] if "porep-0 done" in x]
        at = at_vram(c.scenario, 1950 << 20)
        m_end, m_done, gaps = [], [], []
        for i in range(50):
            r = simulate(at, replica=i, measured=at.profile.jitter, record=True)
            m_end.append(r.sim_time_s * 1e3)
            m_done.append(sorted(s.end_s for s in r.spans if s.cat == "partition")[3] * 1e3)
            ml = {w: [s.start_s for s in r.spans if s.name == "msm_l" and s.track == w]
                  for w in ("gpu0-w0", "gpu0-w1")}  # fmt: skip
            gaps += [abs(a - b) * 1e3 for a, b in zip(ml["gpu0-w0"], ml["gpu0-w1"], strict=False)]
        ms = lambda v: f"{statistics.mean(v):.1f} ± {statistics.stdev(v):.1f}"  # noqa: E731
        g = sorted(gaps)
        print(f"{c.name}: card {len(fit)} runs: length {ms(ends)} ms, proof 0 done {ms(done)}; "
              f"model: length {ms(m_end)}, 4th partition end {ms(m_done)}; msm_l gap "
              f"median {statistics.median(g):.1f} ms (10-90 %: "
              f"{g[len(g) // 10]:.1f}-{g[len(g) * 9 // 10]:.1f})")  # fmt: skip


def assembly() -> None:
    for log in sorted((ROOT / "docs/validation").glob("h200-2026-12-01-*/calib/b.log*")):
        raw = gzip.open(log, "rt") if log.suffix == ".gz" else open(log)  # noqa: SIM115
        with raw as f:
            v = [int(x.split("us=")[1]) / 1e3 for x in f if "kind=assemble" in x][2:]
        m = statistics.mean(v)
        d = [x - m for x in v]
        r1 = sum(a * b for a, b in zip(d, d[1:], strict=False)) / sum(a * a for a in d)
        print(f"{log.relative_to(ROOT)}: {len(v)} assemblies, mean {m:.1f} ms, sd "
              f"{statistics.stdev(v):.2f} ms ({statistics.stdev(v) / m:.0%}), "
              f"lag-1 correlation {r1:+.2f}")  # fmt: skip


def main() -> None:
    spec = load_spec(str(ROOT / "scenarios/validation/h200-races.toml"))
    scn = next(c.scenario for c in spec.configs if c.name == CONFIG)
    if "--offsets" in sys.argv:
        offsets(scn, cards())
    elif "--walls" in sys.argv:
        walls(spec)
    elif "--assembly" in sys.argv:
        assembly()
    else:
        args = [a for a in sys.argv[1:] if not a.startswith("--")]
        kinds(scn, cards(), int(args[0]) if args else 100)


if __name__ == "__main__":
    main()
