"""Re-pricing of race runs already seen: the model's P(OOM) at the card each real run
of a race call really had (its `achieved_vram`), against the real OOM frequency there,
and (with --states) the OOM states of both: per run that failed, the buffer, what the
other worker held last (its MSM), the free bytes and the caching pool's idle bytes at
the failure (MiB), counted over the real runs and over the model's replicas.

Not a prediction: the real runs were seen before this model was. The predictions of a
call are registered before it (`validate --predict-only`, docs/validation.md "Races").

Usage: python benchmarks/race_reprice.py [--replicas N] [--states] [--config NAME]
       [--call DIR] [--spec SPEC]
(defaults: 200 replicas, every configuration, the 2026-12-03 call and its spec; ~20 s of
one core for 200 replicas of the four configurations)
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from collections import Counter, defaultdict
from pathlib import Path

from cuzk_sim.simulate.runner import simulate
from cuzk_sim.validation.boundary import at_vram
from cuzk_sim.validation.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]
MIB = 1 << 20


def state(buffer: str, ledger: dict, worker: str, free: int) -> tuple:
    """(failed MSM, the other worker's last MSM or '-', free MiB, idle pool MiB)."""
    others = [w for w in ledger if w not in (worker, "(device)") and ledger[w]]
    last = list(ledger[others[0]])[-1].split(".")[0] if others else "-"
    idle = ledger["(device)"].get("caching_pool_idle", 0)
    return (buffer.split(".")[0], last, round(free / MIB, 1), round(idle / MIB, 1))


def real_runs(call: Path) -> dict[str, dict[str, list]]:
    """config -> cap -> [(achieved VRAM, oom, state or None)] of the call's runs."""
    out: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    with gzip.open(call / "real.jsonl.gz", "rt") as f:
        for line in f:
            d = json.loads(line)
            r, st = d["real"], None
            if r["oom"]:
                e = r["oom_events"][0]
                st = state(e["buffer"], e["ledger"], e["worker"], e["free_bytes"])
            out[d["config"]][d["cap"]].append((d["achieved_vram"], r["oom"], st))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--replicas", type=int, default=200)
    ap.add_argument("--states", action="store_true")
    ap.add_argument("--config")
    ap.add_argument("--call", default=str(ROOT / "docs/validation/h200-2026-12-03-races/call"))
    ap.add_argument("--spec", default=str(ROOT / "scenarios/validation/h200-races.toml"))
    a = ap.parse_args()
    spec, runs = load_spec(a.spec), real_runs(Path(a.call))
    t0 = time.perf_counter()
    shared: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    print("re-pricing of runs already seen (not a prediction): model P(OOM) at each cap's")
    print(f"achieved card, {a.replicas} replicas, against the real frequency")
    for c in spec.configs:
        if a.config and c.name != a.config or c.name not in runs:
            continue
        print(f"\n{c.name}")
        for cap, rs in sorted(runs[c.name].items(), key=lambda kv: kv[1][0][0]):
            vram = rs[0][0]
            scn = at_vram(c.scenario, vram)
            model: Counter = Counter()
            for i in range(a.replicas):
                res = simulate(scn, replica=i, measured=scn.profile.jitter)
                e = res.oom_events[0] if res.oom else None
                model[state(e.buffer, e.ledger, e.worker, e.free_bytes) if e else "fit"] += 1
            p = 1 - model["fit"] / a.replicas
            k = sum(oom for _, oom, _ in rs)
            diff = p - k / len(rs)
            print(f"  {cap:8s} {vram / MIB:8.2f} MiB  model {p:.2f}  real {k:2d}/{len(rs):2d} "
                  f"= {k / len(rs):.2f}  model - real {diff:+.2f}")  # fmt: skip
            if a.states:
                real = Counter(s or "fit" for _, _, s in rs)
                seen = sum(n for s, n in real.items() if s != "fit" and s in model)
                shared[c.name] = [x + y for x, y in zip(shared[c.name], (seen, k), strict=True)]
                for who, cnt in (("model", model), ("real", real)):
                    top = ", ".join(f"{n} x {s}" for s, n in cnt.most_common(6))
                    print(f"      {who:5s}: {top}")
    for name, (seen, k) in shared.items():
        print(f"{name}: {seen} of the card's {k} OOMs in a state the model reached there")
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
