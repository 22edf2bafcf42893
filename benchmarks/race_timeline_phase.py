"""The two workers' relative phase in a race call's real runs (each run's
`details.timeline`: partitions and lock holds in host time, every GPU step by CUDA events,
each assembly's duration) against the model's replicas of the same configuration.

Per configuration, real (every run of the call, OOM or not) and model (`--replicas`
replicas with the profile's measured jitter on a card with room, 1950 MiB, so that every
replica runs its eight partitions):
  - |start offset| of the j-th partition pair (the two workers' j-th partitions' starts)
  - |unlock offset| of the j-th pair (the ends of the two GPU sections)
  - unlock after own last copy: the end of a worker's GPU section (its unlock, which
    synchronizes the legacy stream) after the end of its own last GPU step (msm_l.result),
    in the real runs (the model's unlock ends at the queue's end: the other's MSM too)
  - the gap between a worker's partitions (host: after one partition's span, before the
    next one's: the harness reads the step events there, then takes the next partition)
  - the GPU section (lock hold) per partition index, and the assembly after it

Times in ms. Usage: python benchmarks/race_timeline_phase.py [CALL_DIR] [--config NAME]
[--replicas N]  (default: docs/validation/h200-2026-12-03-races/call-1959-v2, every
configuration, 50 replicas; ~10 s a configuration)
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
from collections import defaultdict
from pathlib import Path

from cuzk_sim.simulate.runner import simulate
from cuzk_sim.validation.boundary import at_vram
from cuzk_sim.validation.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]
MS = 1e-3  # the timeline's spans are in microseconds


def q(v: list[float]) -> str:
    if not v:
        return "n=0"
    v, n = sorted(v), len(v)
    return (
        f"n={n:3d} median {v[n // 2]:5.1f}  10-90 % {v[n // 10]:5.1f} .. "
        f"{v[n * 9 // 10]:5.1f}  mean {statistics.mean(v):5.1f}"
    )


def tracks(spans: list) -> dict[str, dict[str, list[tuple[float, float]]]]:
    """worker -> 'P' (partitions), 'H' (GPU sections), or a step name -> [(a, b)] in ms."""
    out: dict = defaultdict(lambda: defaultdict(list))
    for tr, name, cat, a, b in spans:
        key = "P" if cat == "partition" else "H" if name.startswith("hold") else name
        out[tr][key].append((a * MS, b * MS))
    for w in out.values():
        for v in w.values():
            v.sort()
    return out


def phase(runs: list[tuple[list, list]]) -> dict[str, list[float]]:
    """The figures of the module doc over runs of (spans, assemblies)."""
    f: dict[str, list[float]] = defaultdict(list)
    for spans, cpu in runs:
        t = tracks(spans)
        ws = sorted(t)
        for w in ws:
            p, h, last = t[w]["P"], t[w]["H"], t[w].get("msm_l.result", [])
            f["gap"] += [p[k + 1][0] - p[k][1] for k in range(len(p) - 1)]
            for k, (a, b) in enumerate(h):
                f[f"GPU section {k}"].append(b - a)
            pairs = zip(h, last, strict=False)  # a partition that failed has no result
            f["unlock after own last copy"] += [hb - lb for (_, hb), (_, lb) in pairs]
        f["assembly"] += [c[3] * MS for c in cpu]
        if len(ws) < 2:
            continue
        p0, p1 = t[ws[0]]["P"], t[ws[1]]["P"]
        h0, h1 = t[ws[0]]["H"], t[ws[1]]["H"]
        for j in range(min(len(p0), len(p1))):
            f[f"|start offset| pair {j}"].append(abs(p1[j][0] - p0[j][0]))
        for j in range(min(len(h0), len(h1))):
            f[f"|unlock offset| pair {j}"].append(abs(h1[j][1] - h0[j][1]))
    return f


def model_runs(scn, replicas: int) -> list[tuple[list, list]]:
    """The model's replicas as timeline rows: its GPU section is the partition up to its
    assembly (the unlock comes right before it)."""
    at = at_vram(scn, 1950 << 20)
    runs = []
    for i in range(replicas):
        r = simulate(at, replica=i, measured=at.profile.jitter, record=True)
        spans = [(s.track, s.name, s.cat, s.start_s * 1e6, s.end_s * 1e6) for s in r.spans]
        parts = {(s.track, s.end_s): s for s in r.spans if s.cat == "partition"}
        locked = {s.track for s in r.spans if s.cat == "lock" and s.name.startswith("hold")}
        cpu = []
        for s in r.spans:
            if s.cat == "cpu" and s.name == "assemble":
                p = parts[(s.track, s.end_s)]
                if s.track not in locked:  # no mutex: no lock span of the model's own
                    spans.append((s.track, "hold", "lock", p.start_s * 1e6, s.start_s * 1e6))
                cpu.append((s.track, s.name, s.end_s * 1e6, (s.end_s - s.start_s) * 1e6))
        runs.append((spans, cpu))
    return runs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("call", nargs="?", default="docs/validation/h200-2026-12-03-races/call-1959-v2")
    ap.add_argument("--config")
    ap.add_argument("--replicas", type=int, default=50)
    ap.add_argument("--spec", default=str(ROOT / "scenarios/validation/h200-races.toml"))
    a = ap.parse_args()
    with gzip.open(Path(a.call) / "real.jsonl.gz", "rt") as fh:
        rows = [json.loads(line) for line in fh]
    spec = load_spec(a.spec)
    for c in spec.configs:
        if a.config and c.name != a.config:
            continue
        real = [
            (d["details"]["timeline"]["spans"], d["details"]["timeline"]["cpu"])
            for d in rows
            if d["config"] == c.name and (d.get("details") or {}).get("timeline")
        ]
        if not real:
            continue
        fr, fm = phase(real), phase(model_runs(c.scenario, a.replicas))
        print(f"\n{c.name}: {len(real)} real runs, {a.replicas} model replicas (ms)")
        for k in sorted(fr, key=lambda k: (k.split(" pair")[0], k)):
            print(f"  {k:28s} real  {q(fr[k])}")
            print(f"  {'':28s} model {q(fm.get(k, []))}")


if __name__ == "__main__":
    main()
