"""A fuzz campaign over every input surface (issue 30): N seeded cases from
tests/fuzz/surfaces.py, each run in a watched child process, counted by how it ended.

    nice -n 19 python benchmarks/fuzz_campaign.py --cases 22000 --seed 0 --workers 2 \
        --json docs/benchmarks/fuzz-campaign.json

Case i is surface i mod S (S surfaces) with seed `--seed` + i div S, so every run with the
same arguments tries the same inputs, and one case replays alone with
`surfaces.case(surface, seed)`. A case ends as:

  accepted / refused  fine (refused: one line of bad input)
  silent              an oracle case (a known-bad class planted in a valid input) accepted
  traceback           any other exception (a refusal of more than one line included)
  signal              the child died by a signal while running it (a segfault, ...)
  slow                more than --limit-s seconds of CPU, or --wall-s of wall time
  memory              the child's peak RSS passed --limit-mib while running it, or
                      MemoryError (the child's address space is capped at 4x that)

A child that ends a case by signal, memory or wall time is replaced, so later cases are
measured afresh. Prints a table per surface and the first failures with their seeds.
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing as mp
import os
import platform
import resource
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fuzz"))

import surfaces  # noqa: E402  (tests/fuzz/surfaces.py)

FINE = ("accepted", "refused")
BAD = ("silent", "traceback", "signal", "slow", "memory")


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def worker(conn, tasks: list[tuple[int, str, int]], limit_mib: int, wall_s: float) -> None:
    """Run the cases; report ("start", i) before and ("end", i, ...) after each."""
    cap = limit_mib * 4 << 20
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    def alarm(*_: object) -> None:
        raise TimeoutError(f"more than {wall_s:.0f} s of wall time")

    signal.signal(signal.SIGALRM, alarm)
    for i, surface, seed in tasks:
        conn.send(("start", i))
        kind, why = "", ""
        cpu0, wall0 = _cpu(), time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, wall_s)
        try:
            c = surfaces.case(surface, seed)
            with tempfile.TemporaryDirectory(prefix="fuzz-") as d:
                kind = surfaces.check(c, Path(d))
        except AssertionError as e:
            kind = "silent" if "silently accepted" in str(e) else "traceback"
            why = str(e)[:300]
        except MemoryError:
            kind, why = "memory", "MemoryError"
        except TimeoutError as e:
            kind, why = "slow", str(e)
        except BaseException as e:  # noqa: BLE001 - every other way out is a failure
            kind = "traceback"
            why = "".join(traceback.format_exception_only(type(e), e)).strip()[:300]
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        cpu, wall, rss = _cpu() - cpu0, time.perf_counter() - wall0, _rss_mib()
        conn.send(("end", i, kind, why, cpu, wall, rss))
        if kind in ("memory", "slow") or rss > limit_mib:
            break  # a fresh child for the next case
    conn.close()


def run_campaign(
    cases: list[tuple[int, str, int]], workers: int, limit_s: float, limit_mib: int, wall_s: float
) -> list[dict]:
    ctx = mp.get_context("fork")
    todo = collections.deque(cases)
    results: list[dict] = []
    running: dict = {}  # conn -> (process, its tasks, case in flight)
    per_child = max(50, len(cases) // (workers * 20))

    def spawn() -> None:
        tasks = [todo.popleft() for _ in range(min(per_child, len(todo)))]
        if not tasks:
            return
        parent, child = ctx.Pipe(duplex=False)
        p = ctx.Process(target=worker, args=(child, tasks, limit_mib, wall_s), daemon=True)
        p.start()
        child.close()
        running[parent] = [p, tasks, None, {t[0]: t for t in tasks}]

    for _ in range(workers):
        spawn()
    while running:
        for conn in mp.connection.wait(list(running)):
            p, tasks, flight, by_index = running[conn]
            try:
                msg = conn.recv()
            except EOFError:
                p.join()
                done = {r["i"] for r in results}
                if flight is not None and flight not in done:
                    code = p.exitcode or 0
                    _, surface, seed = by_index[flight]
                    kind = "signal" if code < 0 else "traceback"
                    why = f"child ended by signal {-code}" if code < 0 else f"exit {code}"
                    results.append(dict(i=flight, surface=surface, seed=seed, kind=kind, why=why,
                                        cpu=0.0, wall=0.0, rss=0.0))  # fmt: skip
                    done.add(flight)
                rest = [t for t in tasks if t[0] not in done]
                todo.extendleft(reversed(rest))
                del running[conn]
                spawn()
                continue
            if msg[0] == "start":
                running[conn][2] = msg[1]
                continue
            _, i, kind, why, cpu, wall, rss = msg
            _, surface, seed = by_index[i]
            if kind in (*FINE, "silent") and cpu > limit_s:  # the cost counts first
                kind, why = "slow", f"{cpu:.1f} s of CPU"
            if kind in (*FINE, "silent", "slow") and rss > limit_mib:
                kind, why = "memory", f"peak RSS {rss:.0f} MiB"
            results.append(dict(i=i, surface=surface, seed=seed, kind=kind, why=why, cpu=cpu,
                                wall=wall, rss=rss))  # fmt: skip
            running[conn][2] = None
            n = len(results)
            if n % 1000 == 0:
                print(f"  {n} cases ...", flush=True)
    return sorted(results, key=lambda r: r["i"])


def _examples(failures: list[dict], per: int = 5) -> list[dict]:
    """The first `per` failures of each surface and kind (every kind kept, with seeds)."""
    seen: collections.Counter = collections.Counter()
    out = []
    for f in failures:
        seen[f["surface"], f["kind"]] += 1
        if seen[f["surface"], f["kind"]] <= per:
            out.append(f)
    return out


def summary(results: list[dict]) -> dict:
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    oracle = collections.Counter()
    for r in results:
        table[r["surface"]][r["kind"]] += 1
    for r in results:
        table["(all)"][r["kind"]] += 1
    for r in results:
        c = surfaces.case(r["surface"], r["seed"]) if r["kind"] in FINE else None
        if c is not None and c.oracle is not None:
            oracle[c.oracle] += 1
    slowest = max(results, key=lambda r: r["cpu"])
    return {
        "by_surface": {k: dict(v) for k, v in table.items()},
        "oracle_cases_refused": dict(oracle),
        "slowest_cpu_s": round(slowest["cpu"], 3),
        "slowest_case": [slowest["surface"], slowest["seed"]],
        "peak_child_rss_mib": round(max(r["rss"] for r in results), 1),
        "failures": _examples([r for r in results if r["kind"] in BAD]),
    }


def _add_failing_surfaces() -> None:
    """Surfaces whose every case fails one way: the campaign must count each as it is."""
    import ctypes

    def failing(how: str):
        def run(_: Path) -> str:
            if how == "signal":
                ctypes.string_at(0)  # SIGSEGV
            if how == "traceback":
                raise KeyError("a bug")
            if how == "memory":
                _ = bytearray(2 << 30)
            if how == "slow":
                end = time.process_time() + 11
                while time.process_time() < end:
                    pass
            return "accepted"  # "silent": an oracle case accepted

        oracle = "planted" if how == "silent" else None
        return lambda rng, seed: surfaces.Case(f"self-test-{how}", seed, oracle, run)

    for how in ("signal", "traceback", "memory", "slow", "silent"):
        surfaces.SURFACES[f"self-test-{how}"] = failing(how)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=22_000)
    ap.add_argument("--seed", type=int, default=0, help="first seed of every surface")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--limit-s", type=float, default=10.0, help="CPU seconds per case")
    ap.add_argument("--wall-s", type=float, default=60.0, help="wall seconds per case")
    ap.add_argument("--limit-mib", type=int, default=1024, help="peak RSS per case")
    ap.add_argument("--json", type=Path, help="write the figures and failures here")
    ap.add_argument(
        "--self-test", action="store_true", help="add cases that fail on purpose: each kind counted"
    )
    ap.add_argument("--surfaces", help="comma-separated subset (default: every surface)")
    args = ap.parse_args()
    if args.self_test:
        _add_failing_surfaces()
    names = args.surfaces.split(",") if args.surfaces else list(surfaces.SURFACES)
    unknown = [n for n in names if n not in surfaces.SURFACES]
    if unknown:
        ap.error(
            f"--surfaces: no such surface {', '.join(unknown)}; have {list(surfaces.SURFACES)}"
        )
    cases = [(i, names[i % len(names)], args.seed + i // len(names)) for i in range(args.cases)]
    surfaces.cubic_bytes()  # once, before the children fork
    t0 = time.time()
    results = run_campaign(cases, args.workers, args.limit_s, args.limit_mib, args.wall_s)
    doc = {
        "command": " ".join(sys.argv),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}",
        "cases": len(results),
        "seeds": f"{args.seed}..{args.seed + (args.cases - 1) // len(names)} per surface",
        "wall_s": round(time.time() - t0, 1),
        **summary(results),
    }
    print(f"{doc['cases']} cases in {doc['wall_s']} s ({doc['seeds']})")
    kinds = FINE + BAD
    print(f"{'surface':<20}" + "".join(f"{k:>10}" for k in kinds))
    for s, counts in doc["by_surface"].items():
        print(f"{s:<20}" + "".join(f"{counts.get(k, 0):>10}" for k in kinds))
    print(f"oracle cases refused: {doc['oracle_cases_refused']}")
    print(f"slowest case {doc['slowest_case']}: {doc['slowest_cpu_s']} s CPU; "
          f"peak child RSS {doc['peak_child_rss_mib']} MiB")  # fmt: skip
    for f in doc["failures"][:20]:
        print(f"  FAIL {f['kind']}: {f['surface']} seed {f['seed']}: {f['why']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
