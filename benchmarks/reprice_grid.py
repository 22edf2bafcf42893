"""Re-price the real runs of a validation folder with another profile, after the fact.

`validate` writes its predictions before the first real run; this asks the model again,
with PROFILE, for every run already in DIR (at the card each real run really had) and
writes DIR2 (predictions.json marked `repriced_after_runs`, real.jsonl with the new model
results, report.md, summary.json). It answers "how would the model have done with this
profile?" -- the preregistered figures stay those of DIR. Prints the summary, then per
fitting run its s/proof error and, where the run kept its timeline (details.timeline),
its makespan error: real = first partition start to last partition end; model = the
model's end of run (sim_time_s: its first partition starts at 0, the setup phase,
setup_s, is outside that clock -- do not subtract it).
Usage: python3 benchmarks/reprice_grid.py SPEC DIR PROFILE DIR2
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from cuzk_sim.simulate.runner import simulate
from cuzk_sim.validation.boundary import at_vram
from cuzk_sim.validation.grid import predict, read_reals, write_report
from cuzk_sim.validation.spec import load_spec


def real_makespan(rec: dict) -> float | None:
    """First partition start to last partition end, in seconds (None: no timeline)."""
    spans = rec.get("details", {}).get("timeline", {}).get("spans") or []
    parts = [s for s in spans if s[2] == "partition"]
    if not parts:
        return None
    return (max(s[4] for s in parts) - min(s[3] for s in parts)) / 1e6


def per_run(rows: list[dict]) -> list[str]:
    out = ["run | s/proof real / model (err) | makespan real / model (err)"]
    for r in rows:
        real, model = r["real"], r["model_at_achieved"]
        if real.get("oom") or not real.get("seconds_per_proof"):
            continue
        rs, ms = real["seconds_per_proof"], model["seconds_per_proof"]
        line = f"{r['key']} | {rs:.3f} / {ms:.3f} ({(ms - rs) / rs:+.2%})"
        span = real_makespan(r)
        if span:
            end = model["sim_time_s"]
            line += f" | {span:.3f} / {end:.3f} ({(end - span) / span:+.2%})"
        out.append(line)
    return out


def main() -> None:
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    spec_path, src, profile, dst = sys.argv[1], Path(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
    spec = load_spec(spec_path, profile)
    predictions = predict(spec)
    predictions["repriced_after_runs"] = f"the real runs of {src.name}/ re-priced with {profile}"
    old = json.loads((src / "predictions.json").read_text())
    predictions["commit"] = old.get("commit", "?")
    dst.mkdir(parents=True, exist_ok=True)
    (dst / "predictions.json").write_text(json.dumps(predictions, indent=1))
    scenarios = {c.name: c.scenario for c in spec.configs}
    rows = []
    with (dst / "real.jsonl").open("w") as f:
        for r in read_reals(src / "real.jsonl"):
            scn = scenarios[r["config"]]
            r["model_at_achieved"] = simulate(at_vram(scn, r["achieved_vram"])).to_dict(log_lines=0)
            f.write(json.dumps(r) + "\n")
            rows.append(r)
    _, summary = write_report(dst, predictions)
    keys = ("agreement", "spp_within", "spp_runs", "spp_max_abs_error", "criteria")
    print(json.dumps({k: summary[k] for k in keys}, indent=1))
    print("\n".join(per_run(rows)))


if __name__ == "__main__":
    main()
