"""A trial, not the model: P(OOM) at the cards a race call's runs had (each cap's
achieved VRAM), with quantities measured in that call's timelines put into the model in
place of the profile's, one group at a time or together (docs/validation.md, "Races", "The
call of 19:59 against predictions v2"). Nothing here changes the bundled model.

  --copies    each copy step priced at the card's median CUDA-event time (the mutex
              control's runs: one GPU section at a time)
  --assembly  the assembly at 5.7 ms (the call's 1608 assemblies: 5.5-5.9 ms median per
              configuration) instead of the profile's 10.125 ms
  --gap       a host gap after each partition a worker completes, lognormal, fitted to
              that configuration's gaps between a worker's partitions in the call
  --nowait    the unlock waits for the worker's own queued work only (not the others')

Usage: python benchmarks/race_measured_trial.py [--copies] [--assembly] [--gap]
       [--nowait] [--replicas N] [--call DIR]   (default 60 replicas; ~1-3 min)
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import random
import statistics
from collections import defaultdict
from pathlib import Path

import cuzk_sim.model.gpu_loop as gpu_loop
import cuzk_sim.steps.copy as copy_step
import cuzk_sim.steps.unlock as unlock_step
from cuzk_sim.profiles.profile import Profile
from cuzk_sim.simulate.runner import simulate
from cuzk_sim.validation.boundary import at_vram
from cuzk_sim.validation.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]
US = 1e-6  # the timeline's spans are in microseconds
ASSEMBLY_S = 5.7e-3
CALL = ROOT / "docs/validation/h200-2026-12-03-races/call-1959-v2"
CAPS = ("race-1%", "race+0%", "race+1%", "race+2%", "race+3%", "race+4%")


def copy_medians(rows: list[dict], config: str) -> dict[str, float]:
    times: dict[str, list[float]] = defaultdict(list)
    for d in rows:
        if d["config"] == config:
            for _, name, cat, a, b in d["details"]["timeline"]["spans"]:
                if cat == "copy":
                    times[name].append((b - a) * US)
    return {k: statistics.median(v) for k, v in times.items()}


def gap_fits(rows: list[dict]) -> dict[str, tuple[float, float]]:
    """config -> (mean, sd) of ln(gap in s) between a worker's partitions."""
    logs: dict[str, list[float]] = defaultdict(list)
    for d in rows:
        parts: dict[str, list] = defaultdict(list)
        for tr, _, cat, a, b in d["details"]["timeline"]["spans"]:
            if cat == "partition":
                parts[tr].append((a * US, b * US))
        for v in parts.values():
            v.sort()
            logs[d["config"]] += [math.log(v[k + 1][0] - v[k][1]) for k in range(len(v) - 1)]
    return {k: (statistics.mean(v), statistics.stdev(v)) for k, v in logs.items()}


def patch(a: argparse.Namespace, rows: list[dict], state: dict) -> None:
    if a.copies:
        med, price = copy_medians(rows, "w2-caching-18-control"), copy_step.KIND.price
        new = lambda s, p, w: med.get(s.name, price(s, p, w))  # noqa: E731
        object.__setattr__(copy_step.KIND, "price", new)
    if a.assembly:
        cpu = Profile.cpu_seconds
        Profile.cpu_seconds = lambda self, k, n, st: (  # type: ignore[method-assign]
            ASSEMBLY_S if k == "assemble" else cpu(self, k, n, st)
        )
    if a.nowait:
        unlock_step.queue_end = lambda w: w.t_ready
    if a.gap:
        run = gpu_loop.execute_plan

        def gapped(m, w, *args, **kw):
            ok = yield from run(m, w, *args, **kw)
            if ok:
                mu, sd = state["fit"]
                yield m.env.timeout(math.exp(state["rng"].gauss(mu, sd)))
            return ok

        gpu_loop.execute_plan = gapped


def main() -> None:
    ap = argparse.ArgumentParser()
    for flag in ("--copies", "--assembly", "--gap", "--nowait"):
        ap.add_argument(flag, action="store_true")
    ap.add_argument("--replicas", type=int, default=60)
    ap.add_argument(
        "--call", default=str(ROOT / "docs/validation/h200-2026-12-03-races/call-1959-v2")
    )
    ap.add_argument("--spec", default=str(ROOT / "scenarios/validation/h200-races.toml"))
    a = ap.parse_args()
    with gzip.open(Path(a.call) / "real.jsonl.gz", "rt") as fh:
        rows = [json.loads(line) for line in fh]
    state: dict = {}
    patch(a, rows, state)
    fits = gap_fits(rows)
    cards: dict = defaultdict(list)
    for d in rows:
        cards[(d["config"], d["cap"])].append((d["achieved_vram"], d["real"]["oom"]))
    print("trial (not the model): P(OOM) model / card at -1 .. +4 %")
    for c in load_spec(a.spec).configs:
        out = []
        for cap in CAPS:
            runs = cards[(c.name, cap)]
            at = at_vram(c.scenario, runs[0][0])
            n = 0
            for i in range(a.replicas):
                state["fit"], state["rng"] = fits[c.name], random.Random(f"gap {i}")
                n += simulate(at, replica=i, measured=at.profile.jitter).oom
            real = sum(oom for _, oom in runs) / len(runs)
            out.append(f"{n / a.replicas:.2f}/{real:.2f}")
        print(f"  {c.name:24s} " + "  ".join(out), flush=True)


if __name__ == "__main__":
    main()
