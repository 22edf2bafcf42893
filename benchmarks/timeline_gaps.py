"""Where a validation grid's real timelines spend time the model does not (issue 24).

Usage: python3 benchmarks/timeline_gaps.py GRID [SPEC] [KEY-GLOB]

GRID: a `validate` folder whose real.jsonl carries each run's `details.timeline.spans`
([worker, name, kind, start_us, end_us] in the run's clock). SPEC (default
scenarios/validation/h200-production.toml) builds each configuration's scenario; the
model runs it at the card the real run had (validation/boundary.py `at_vram`), recorded,
and both timelines are cut the same way. The real timeline does not say which copies were
pinned: the plan of SPEC does, so SPEC must be the spec the grid ran (grid-v2 ran the
spec of d2c5c20, whose streamed plans uploaded a/b/c and the witness pageable:
`git show d2c5c20:scenarios/validation/h200-production.toml` beside base.toml).

- makespan: first partition start to last partition end (real) against the model's;
- per partition (in start order, per worker): its length, and inside it the time of each
  category -- pageable uploads (host-to-device copies the plan marks pageable: a copy
  step without `pinned`), pinned uploads (those it marks pinned: the key's points, and
  a/b/c and the witness under `plan.gpu_prover.pinned`), other copies, kernels,
  the gaps where the worker had nothing of its own running (host work between steps,
  lock waits), and the time from the previous partition's end to this one's start
  (assembly, hand-over) -- real against model, in ms;
- the steps whose real duration differs most from the model's (mean per occurrence);
- the uploads that waited for the copy engine: an upload the prover's queue reached while
  another upload of the device (a key chunk beside the queue) ran, its wait and its own
  time. Every upload counts here from when the engine took it (`on_engine`): the real
  CUDA events count a queued one from when the queue reached it, the model's spans from
  when the engine took it, so the figures above compare the copies themselves.

Prints markdown; for the fitting runs only (an OOM run has no comparable timeline).
"""

from __future__ import annotations

import fnmatch
import sys
from collections import defaultdict
from pathlib import Path

from cuzk_sim.simulate.runner import simulate
from cuzk_sim.steps.copy import Copy
from cuzk_sim.validation.boundary import at_vram
from cuzk_sim.validation.grid import read_reals
from cuzk_sim.validation.spec import load_spec

SPEC = "scenarios/validation/h200-production.toml"
Span = tuple[str, str, str, float, float]  # worker, name, kind, start_s, end_s
TOP = 6


def real_spans(rec: dict) -> list[Span]:
    return [(w, n, k, a / 1e6, b / 1e6) for w, n, k, a, b in rec["details"]["timeline"]["spans"]]


def model_spans(scn, vram: int) -> tuple[list[Span], float]:
    res = simulate(at_vram(scn, vram), record=True)
    spans = [(s.track, s.name, s.cat, s.start_s, s.end_s) for s in res.spans if s.device >= 0]
    return spans, res.sim_time_s - res.setup_s


def _union(iv: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(iv):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def upload_pinning(plans) -> dict[str, bool]:
    """Each host-to-device copy's name in the plans -> whether the plan copies it from
    pinned host memory (a name copied both ways counts as pageable)."""
    out: dict[str, bool] = {}
    for plan in plans:
        for s in plan.steps:
            if isinstance(s, Copy) and s.direction == "HtoD":
                out[s.name] = out.get(s.name, True) and s.pinned
    return out


def category(name: str, kind: str, pinning: dict[str, bool]) -> str:
    """A span's category: a copy the plan uploads is a pageable or a pinned upload (by the
    plan's `pinned`), any other copy (results back, a name the plan lacks) is `copy`."""
    if kind != "copy" or name not in pinning:
        return kind
    return "pinned upload" if pinning[name] else "pageable upload"


def _device(worker: str) -> str:
    return worker.split("-w")[0]  # "gpu0-w1" -> "gpu0"


def on_engine(
    spans: list[Span], pinning: dict[str, bool]
) -> tuple[list[Span], list[tuple[str, str, float, float]]]:
    """The spans with each upload cut to its time on the host-to-device copy engine, and
    the uploads that waited for it: (name, the upload it waited for, wait s, own s).

    A card has one HtoD copy engine serving the prover's in-order queue and the key
    uploads beside it, first come first served (grid-v3's timelines: an upload the queue
    reaches while a key chunk runs ends its own duration after that chunk, which runs at
    the full rate; docs/simulator.md). The real timeline's CUDA events count a queued
    upload from when the queue reached it, the wait included; the model's spans start
    when the engine takes it. Here an upload starts at the later of its start and the end
    of every upload of its device that started before it, so both measure the copy
    itself. The model's uploads never overlap (its engine is a FIFO clock): a no-op there.
    """
    order = sorted(range(len(spans)), key=lambda i: spans[i][3])
    out, waits = list(spans), []
    busy: dict[str, tuple[float, str]] = {}  # device -> (engine free at, the upload there)
    for i in order:
        w, name, kind, a, b = spans[i]
        if kind != "copy" or name not in pinning:
            continue
        dev = _device(w)
        free, ahead = busy.get(dev, (float("-inf"), ""))
        if free > a:
            start = min(free, b)
            out[i] = (w, name, kind, start, b)
            waits.append((name, ahead, start - a, b - start))
        if b > free:
            busy[dev] = (b, name)
    return out, waits


def wait_means(waits: list[tuple[str, str, float, float]]) -> list[str]:
    """'name: wait / own ms behind upload (n)', one per pair, in first-seen order."""
    acc: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for name, ahead, wait, own in waits:
        acc[(name, ahead)].append((wait, own))
    out = []
    for (name, ahead), v in acc.items():
        wait, own = (1e3 * sum(x[i] for x in v) / len(v) for i in (0, 1))
        out.append(f"{name} {wait:.1f} behind {ahead}, then {own:.1f} on the engine ({len(v)}x)")
    return out


def partitions(spans: list[Span], pinning: dict[str, bool]) -> list[dict]:
    """Each partition's length and category times (`category`, by the plan's `pinning`);
    'before' = from the same worker's previous partition end (0 for a worker's first)."""
    parts = sorted((s for s in spans if s[2] == "partition"), key=lambda s: s[3])
    out, last_end = [], {}
    for w, name, _, a, b in parts:
        inside = [s for s in spans if s[0] == w and s[2] in ("copy", "kernel") and a <= s[3] < b]
        cat = defaultdict(float)
        for _, n, k, sa, sb in inside:
            cat[category(n, k, pinning)] += sb - sa
        busy = _union([(s[3], s[4]) for s in inside])
        cat["idle in partition"] = (b - a) - busy
        cat["before partition"] = a - last_end.get(w, a)
        last_end[w] = b
        out.append({"worker": w, "name": name, "length": b - a, **cat})
    return out


def step_means(spans: list[Span]) -> dict[str, float]:
    acc: dict[str, list[float]] = defaultdict(list)
    for _, n, k, a, b in spans:
        if k in ("copy", "kernel"):
            acc[n].append(b - a)
    return {n: sum(v) / len(v) for n, v in acc.items()}


def makespan(spans: list[Span]) -> float:
    parts = [s for s in spans if s[2] == "partition"]
    return max(s[4] for s in parts) - min(s[3] for s in parts) if parts else 0.0


CATS = (
    "length",
    "pageable upload",
    "pinned upload",
    "copy",
    "kernel",
    "idle in partition",
    "before partition",
)


def run_section(
    key: str, real: list[Span], model: list[Span], model_span: float, pinning: dict[str, bool]
) -> list[str]:
    rm, mm = makespan(real), makespan(model) or model_span
    real, waits = on_engine(real, pinning)
    model, model_waits = on_engine(model, pinning)
    out = [f"### {key}", "", f"makespan real {rm:.3f} s, model {mm:.3f} s ({(mm - rm) / rm:+.1%})"]
    out += ["", "| partition | " + " | ".join(f"{c} ms real / model" for c in CATS) + " |"]
    out.append("|---" * (len(CATS) + 1) + "|")
    for r, m in zip(partitions(real, pinning), partitions(model, pinning), strict=False):
        cells = [f"{1e3 * r.get(c, 0):.1f} / {1e3 * m.get(c, 0):.1f}" for c in CATS]
        out.append(f"| {r['worker']} {r['name']} | " + " | ".join(cells) + " |")
    rs, ms = step_means(real), step_means(model)
    diffs = sorted(((rs[n] - ms[n], n) for n in rs if n in ms), key=lambda d: -abs(d[0]))[:TOP]
    out += [
        "",
        "steps, mean duration real / model (ms): "
        + "; ".join(f"{n} {1e3 * rs[n]:.1f} / {1e3 * ms[n]:.1f}" for _, n in diffs),
    ]
    for side, w in (("real", waits), ("model", model_waits)):
        if w:
            out += ["", f"uploads that waited for the copy engine ({side}, mean ms): "]
            out[-1] += "; ".join(wait_means(w))
    return out + [""]


def main(argv: list[str]) -> int:
    if not 1 <= len(argv) <= 3:
        print(__doc__, file=sys.stderr)
        return 2
    grid = Path(argv[0])
    spec = load_spec(argv[1] if len(argv) > 1 else SPEC)
    pattern = argv[2] if len(argv) > 2 else "*"
    scenarios = {c.name: c.scenario for c in spec.configs}
    summary = ["| run | makespan real s | model s | error |", "|---|---|---|---|"]
    sections = []
    for rec in read_reals(grid / "real.jsonl"):
        if rec["real"].get("oom") or not fnmatch.fnmatch(rec["key"], pattern):
            continue
        real = real_spans(rec)
        scn = scenarios[rec["config"]]
        model, span = model_spans(scn, rec["achieved_vram"])
        rm, mm = makespan(real), makespan(model) or span
        summary.append(f"| {rec['key']} | {rm:.3f} | {mm:.3f} | {(mm - rm) / rm:+.1%} |")
        sections += run_section(rec["key"], real, model, span, upload_pinning(scn.plans.values()))
    print(
        "\n".join(
            [
                "## Makespan, real against the model at the achieved card",
                "",
                *summary,
                "",
                "## Per partition",
                "",
                *sections,
            ]
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
