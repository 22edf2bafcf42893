"""Re-price production-scale gpu-run results with the model of this tree (issue 24).

Each DIR/w<W>-<L>.json is `gpu-run scenarios/validation/base.toml --set
plan.gpu_prover.domain_log2=L --set engine.gpus.gpu_workers_per_device=W --set
workload[0].count=1 --set workload[0].partitions=2 --json` (benchmarks/realrun_device.sh,
stage prod); the model runs the same scenario (`--witness` the shape those runs had:
`dense` before issue 23's PoRep shape, `porep` after) and the table gives s/proof and
peak VRAM side by side, with the model's setup phase (the key's page-locking, not in
s/proof) and the real run's (its key's page-locking, `setup_s` or the details' host
`key_alloc_seconds`). `--issue` adds the figures issue 24 published at 2^24-2^26 (one
worker, dense witness: 3.50 / 6.77 / 13.52 s per proof, peaks 8642.8 / 15834.8 /
30222.8 MiB).
Usage: python3 benchmarks/reprice_production.py [--witness dense|porep] [--issue] DIR...
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from cuzk_sim.scenario import load_scenario
from cuzk_sim.simulate.runner import simulate

BASE = "scenarios/validation/base.toml"
MIB = 2**20
# issue 24's table: (domain, workers) -> (s/proof, peak VRAM MiB), one proof of two partitions
ISSUE = {(24, 1): (3.50, 8642.8), (25, 1): (6.77, 15834.8), (26, 1): (13.52, 30222.8)}


def model(log2: int, workers: int, witness: str) -> dict:
    changes = {
        "plan.gpu_prover.domain_log2": log2,
        "plan.gpu_prover.witness": witness,
        "engine.gpus.gpu_workers_per_device": workers,
        "workload[0].count": 1,
        "workload[0].partitions": 2,
    }
    return simulate(load_scenario(BASE, changes)).to_dict(log_lines=0)


def row(name: str, log2: int, workers: int, witness: str, spp: float, peak: float, setup) -> str:
    m = model(log2, workers, witness)
    mspp, mpeak = m["seconds_per_proof"], m["peak_vram_bytes"]["0"] / MIB
    real_setup = "-" if setup is None else f"{setup:.1f}"
    return (
        f"| {name} | 2^{log2}, {workers} w, {witness} | {spp:.3f} / {mspp:.3f} s "
        f"({(mspp - spp) / spp:+.1%}) | {peak:.1f} / {mpeak:.1f} MiB ({(mpeak - peak) / peak:+.2%})"
        f" | {real_setup} / {m['setup_s']:.1f} s |"
    )


def main() -> None:
    args = sys.argv[1:]
    witness = "dense"
    if args[:1] == ["--witness"] and len(args) >= 2:
        witness, args = args[1], args[2:]
    issue = "--issue" in args
    dirs = [Path(a) for a in args if a != "--issue"]
    if not dirs and not issue:
        sys.exit(__doc__)
    print("| run | shape | s/proof real / model | peak VRAM real / model | setup real / model |")
    print("|---|---|---|---|---|")
    if issue:
        for (log2, w), (spp, peak) in ISSUE.items():
            print(row("issue 24 table", log2, w, "dense", spp, peak, None))
    for d in dirs:
        for f in sorted(d.glob("w*-*.json")):
            got = re.fullmatch(r"w(\d+)-(\d+)\.json", f.name)
            if got is None:
                continue
            w, log2 = int(got[1]), int(got[2])
            r = json.loads(f.read_text())
            if r.get("seconds_per_proof") is None:
                print(f"| {f} | 2^{log2}, {w} w | no proof completed | | |")
                continue
            setup = r.get("setup_s")
            details = f.with_name(f"w{w}-{log2}.details.json")
            if setup is None and details.is_file():
                setup = json.loads(details.read_text()).get("host", {}).get("key_alloc_seconds")
            peak = r["peak_vram_bytes"]["0"] / MIB
            print(row(str(f), log2, w, witness, r["seconds_per_proof"], peak, setup))


if __name__ == "__main__":
    main()
