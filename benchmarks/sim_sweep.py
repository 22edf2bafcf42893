"""Sweep speed: 1,000 configurations of the bundled Phase 9 three-part-fix scenario.

Target: <= 30 s wall on the CI-class machine (2 cores), output folder written (rows,
summary, plots). The grid: gpu_workers_per_device 1..8 x VRAM 12..36 GiB (25 values) x
memory-aware margin (5 values) = 1,000 configurations. Prints the wall time of the whole
`api.sweep` (expansion, rows on the process pool, files, plots), the time per
configuration in one process (resolve + simulate), and the split between them. Usage:

    python3 benchmarks/sim_sweep.py [--jobs N] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from cuzk_sim import api
from cuzk_sim.sweep.configs import expand
from cuzk_sim.sweep.evaluate import load_task_scenario
from cuzk_sim.sweep.run import _task

BASE = Path(__file__).resolve().parents[1] / "scenarios" / "phase9-dual-worker-three-part-fix.toml"
AXES = {
    "engine.gpus.gpu_workers_per_device": "1..8",
    "hardware.vram": [f"{g} GiB" for g in range(12, 37)],
    "variant.memory_aware_margin": ["256 MiB", "512 MiB", "1 GiB", "2 GiB", "4 GiB"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=None, help="default: all cores")
    parser.add_argument("--out", type=Path, default=None, help="default: a temporary folder")
    parser.add_argument("--sample", type=int, default=50, help="configurations timed serially")
    args = parser.parse_args()
    spec = api.make_sweep(BASE, AXES, name="bench-1000")
    assert spec.grid_size == 1000, spec.grid_size
    out = args.out or Path(tempfile.mkdtemp(prefix="cuzk-sweep-bench-"))
    if (out / "results.json").exists():
        raise SystemExit(f"{out} holds a previous sweep (it would resume); give an empty folder")

    wall0, cpu0 = time.perf_counter(), time.process_time()
    outcome = api.sweep(spec, out, jobs=args.jobs)
    wall = time.perf_counter() - wall0
    cpu_parent = time.process_time() - cpu0

    # one process, a sample of the configurations: where a configuration's time goes
    from cuzk_sim.simulate.runner import simulate

    configs = expand(spec)[:: max(1, 1000 // args.sample)]
    t_resolve = t_sim = 0.0
    for c in configs:
        task = _task(spec, c.raw, c.key, 1, 0.0)
        t0 = time.perf_counter()
        scn = load_task_scenario(task)
        t1 = time.perf_counter()
        simulate(scn)
        t_sim += time.perf_counter() - t1
        t_resolve += t1 - t0
    n = len(configs)
    jobs = args.jobs or len(os.sched_getaffinity(0))
    print(f"configurations      {len(outcome.rows)} ({outcome.summary['safe']} safe)")
    print(f"jobs                {jobs} processes")
    print(f"wall                {wall:.2f} s  (target <= 30 s)")
    print(f"per configuration   {wall / len(outcome.rows) * 1e3:.2f} ms wall")
    print(f"parent CPU          {cpu_parent:.2f} s (expansion, bookkeeping, files, plots)")
    print(
        f"one process, {n} configurations: resolve {t_resolve / n * 1e3:.2f} ms, "
        f"simulate {t_sim / n * 1e3:.2f} ms each"
    )
    print(f"files               {', '.join(p.name for p in outcome.files)} in {out}")


if __name__ == "__main__":
    main()
