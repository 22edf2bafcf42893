"""Where a real-pipeline partition's host assembly runs: a pool of spawned helper processes
(`assembler`), the partition's MSM tails side by side in it (`finish_in_pool`), on CPUs
apart from the worker threads' (`cpu_halves`); and the pipeline's tuning experiments
(CUZK_SIM_PIPELINE_TUNE)."""

from __future__ import annotations

import time
from typing import Any

from .msm_results import msm_results
from .prover import HostKey, assemble

TUNES = frozenset({"streams", "switch", "local", "noaffinity", "serialtail"})


def _tune_from_env() -> frozenset[str]:
    import os

    asked = {t.strip() for t in os.environ.get("CUZK_SIM_PIPELINE_TUNE", "").split(",")}
    asked.discard("")
    unknown = asked - TUNES
    if unknown:
        raise ValueError(
            f"CUZK_SIM_PIPELINE_TUNE: unknown {sorted(unknown)}; known: {sorted(TUNES)}"
        )
    return frozenset(asked)


_ASSEMBLERS: list[Any] = []  # [ProcessPoolExecutor, its size, its CPUs]


def _assemble_remote(ends: tuple, res: dict[str, Any], r: int, s: int, convert: bool) -> Any:
    """assemble() in a helper process (py_ecc holds the GIL for tens of ms: in a thread
    it would stall the other workers' kernel launches; cuzk assembles on CPU threads).
    convert: `res` holds the raw MSM results -- the window sums of each MSM, whose Horner
    (9-18 ms of Python ints per partition at any domain, benchmarks/assembler_timing.py)
    and conversion to points run here, outside the GPU section and off the worker
    threads."""
    return assemble(HostKey({}, *ends), msm_results(res) if convert else res, r, s)


# The deferred MSM tails of one partition, split over assembler processes so that they run
# side by side: the G2 tail costs ~2.5 G1 tails (its doublings are over Fq2), so it runs
# alone and the four G1 tails in pairs. Three processes per worker; the critical path is
# the G2 tail, ~40 % of the tails in one process (benchmarks/assembler_timing.py).
TAIL_GROUPS = (("msm_b_g2",), ("msm_h", "msm_a"), ("msm_b_g1", "msm_l"))
TAIL_PROCESSES = len(TAIL_GROUPS)


def tail_groups(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """`raw` (stage -> its MSM results) split as TAIL_GROUPS; a stage no group names gets
    a group of its own. Empty groups are dropped."""
    named = {st for g in TAIL_GROUPS for st in g}
    groups = [{st: raw[st] for st in g if st in raw} for g in TAIL_GROUPS]
    groups += [{st: v} for st, v in raw.items() if st not in named]
    return [g for g in groups if g]


def finish_in_pool(pool: Any, ends: tuple, raw: dict[str, Any], r: int, s: int) -> Any:
    """A partition's host assembly through the assembler pool: its MSM tails side by side
    (`tail_groups`, one task each), then the assembly (one more task)."""
    futures = [pool.submit(msm_results, g) for g in tail_groups(raw)]
    res: dict[str, Any] = {}
    for f in futures:
        res.update(f.result())
    return pool.submit(_assemble_remote, ends, res, r, s, False).result()


def _warm_assembler(_: int) -> int:
    """Import what assembly needs in a helper process; the short sleep spreads one call
    over each process of the pool."""
    import py_ecc.optimized_bls12_381  # noqa: F401

    time.sleep(0.05)
    return 0


def cpu_halves(
    sysfs: str = "/sys/devices/system/cpu", allowed: set[int] | None = None
) -> tuple[set[int], set[int]] | None:
    """Two sets of logical CPUs that share no physical core (sysfs topology, of the CPUs
    this process may use): the first half of the physical cores with their hyperthreads,
    and the second half. None where the topology cannot be read or there are fewer than
    4 physical cores."""
    import glob
    import os

    cores: dict[tuple[int, int], set[int]] = {}
    try:
        allowed = os.sched_getaffinity(0) if allowed is None else allowed
        for path in glob.glob(f"{sysfs}/cpu[0-9]*/topology"):
            cpu = int(path.split("/")[-2][3:])
            if cpu not in allowed:
                continue
            with open(f"{path}/physical_package_id") as f:
                pkg = int(f.read())
            with open(f"{path}/core_id") as f:
                core = int(f.read())
            cores.setdefault((pkg, core), set()).add(cpu)
    except (OSError, ValueError, AttributeError):
        return None
    if len(cores) < 4:
        return None
    phys = sorted(cores.values(), key=min)
    half = len(phys) // 2
    return set().union(*phys[:half]), set().union(*phys[half:])


def _pin_to(cpus: set[int] | None) -> None:
    """Pool initializer: run this helper process on `cpus` only."""
    import os

    if cpus:
        os.sched_setaffinity(0, cpus)


def assembler(workers: int, cpus: set[int] | None = None) -> Any:
    """A process pool of at least `workers` processes (spawned: no CUDA state in them),
    on `cpus` if given (off the cores of the worker threads)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    key = frozenset(cpus or ())
    if _ASSEMBLERS and _ASSEMBLERS[1] >= workers and _ASSEMBLERS[2] == key:
        return _ASSEMBLERS[0]
    if _ASSEMBLERS:
        _ASSEMBLERS[0].shutdown()
        _ASSEMBLERS.clear()
    pool = ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_pin_to,
        initargs=(cpus,),
    )
    # start them now, not inside a timed run: each imports this module and py_ecc (the
    # first partition of a run used to pay ~0.5 s for it)
    list(pool.map(_warm_assembler, range(workers)))
    _ASSEMBLERS.extend([pool, workers, key])
    return pool
