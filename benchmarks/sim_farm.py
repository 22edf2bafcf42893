"""Simulator speed: 24 h of an 8-GPU farm (2 workers per GPU, steady PoRep + SnapDeals).

Target: <= 10 s wall on the CI-class machine (2 cores). Prints wall and CPU seconds,
SimPy events scheduled (the environment's event counter), worker wake-ups, partitions and
proofs simulated, and events per second. Usage:

    python3 benchmarks/sim_farm.py [scenario.toml] [--repeat N] [--plain]

--plain: every speed-up of the fast layer off (model/fast.py `FastPaths.none()`), to see
what the fast layer buys; the numbers agree with the fast run up to float rounding.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from cuzk_sim.model.compiled import compile_plan
from cuzk_sim.model.engine import Simulation
from cuzk_sim.model.fast import FastPaths
from cuzk_sim.scenario import load_scenario

DEFAULT = Path(__file__).resolve().parents[1] / "scenarios" / "farm-8gpu-24h.toml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", default=str(DEFAULT))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--plain", action="store_true", help="every speed-up off")
    args = parser.parse_args()
    fast = FastPaths.none() if args.plain else FastPaths()
    scn = load_scenario(args.scenario)
    best = None
    for _ in range(args.repeat):
        plans = {
            k: compile_plan(p, scn.profile, merge=fast.merge_kernels) for k, p in scn.plans.items()
        }
        sim = Simulation(scn.name, scn.config, plans, scn.shapes, scn.profile, fast=fast)
        wall0, cpu0 = time.perf_counter(), time.process_time()
        result = sim.run()
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        simpy_events = next(sim.env._eid)  # SimPy's own count of scheduled events
        if best is None or wall < best[0]:
            best = (wall, cpu, simpy_events, result)
    wall, cpu, simpy_events, result = best
    print(f"scenario            {result.scenario} ({args.scenario})")
    print(f"fast layer          {'off (--plain)' if args.plain else 'on'}")
    print(f"simulated time      {result.sim_time_s / 3600:.1f} h")
    print(
        f"partitions          {result.partitions_completed} ok, {result.partitions_failed} failed"
    )
    print(f"proofs              {result.proofs_completed} completed of {result.proofs_submitted}")
    print(f"SimPy events        {simpy_events}")
    print(f"worker wake-ups     {result.events}")
    print(f"wall (best of {args.repeat})    {wall:.2f} s   (cpu {cpu:.2f} s)")
    print(f"events per second   {simpy_events / wall:,.0f} (wall)")
    print(f"target <= 10 s      {'met' if wall <= 10 else 'NOT met'}")


if __name__ == "__main__":
    main()
