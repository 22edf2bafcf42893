"""The model's P(OOM) curve of each racing configuration of a validation spec, finer than
its race caps: at boundary x (1 + pct/100) for pct from -1.5 to +4.5 % in 0.25 % steps,
and at each race cap's VRAM + 1 and + 2 MiB (the ballast places the card in 2 MiB steps:
a real run has between the cap and 2 MiB more). Written before a device call, it gives
the model's figure at the card a run really had without pricing anything after the runs.

Usage: python benchmarks/race_model_curve.py SPEC OUT.json [REPLICAS]
(default 200 replicas, as `validate`'s race_replicas; h200-races: ~3 minutes of one core)
"""

from __future__ import annotations

import json
import sys
import time

from cuzk_sim.validation.boundary import vram_boundary
from cuzk_sim.validation.race import model_probability, race_caps
from cuzk_sim.validation.spec import load_spec

MIB = 1 << 20


def main() -> None:
    spec_path, out = sys.argv[1], sys.argv[2]
    replicas = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    spec = load_spec(spec_path)
    pcts = [p / 4 for p in range(-6, 19)]
    doc: dict = {"spec": spec_path, "replicas": replicas, "configs": {}}
    t0 = time.perf_counter()
    for c in spec.configs:
        b = vram_boundary(c.scenario, spec.tolerance)
        floor = c.scenario.config.context_overhead
        points = {}
        for _label, vram in race_caps(b, tuple(pcts), floor):
            points[vram] = model_probability(c, vram, replicas)["p"]
        for _label, vram in race_caps(b, spec.race_caps, floor):
            for extra in (0, 1, 2):
                v = vram + extra * MIB
                if v not in points:
                    points[v] = model_probability(c, v, replicas)["p"]
        curve = sorted(points.items())
        doc["configs"][c.name] = {"boundary_bytes": b.vram, "curve": curve}
        print(f"{c.name}: boundary {b.vram / MIB:.2f} MiB")
        for v, p in curve:
            print(f"  {v / MIB:9.2f} MiB ({(v / b.vram - 1) * 100:+6.2f} %)  P(OOM) {p:.3f}")
    doc["seconds"] = time.perf_counter() - t0
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"{doc['seconds']:.0f} s")


if __name__ == "__main__":
    main()
