"""A partition's MSM results on the host: each stage's chunks finished (the deferred Horner
over window sums, or a Future of a tail finished elsewhere) and summed to a py_ecc point
(`msm_results`), the blinding's scaled points (`scaled_points`), and the process pool that
finishes tails beside the GPU (`tail_pool`, ProverFlags.overlap_tails)."""

from __future__ import annotations

import atexit
import threading
from collections.abc import Mapping
from concurrent.futures import Executor, Future
from typing import Any

import numpy as np
import py_ecc.optimized_bls12_381 as bls

from . import encoding
from .blinding import scale_g1, scales
from .msm import WindowSums
from .msm_stages import finish_tail

_TAIL_POOL: list[Executor] = []
_TAIL_POOL_GUARD = threading.Lock()  # worker threads proving at once start one pool


TAIL_PROCESSES = 2  # the key-only blinding products in one, the MSM tails in the other


def _warm_tail(_: int) -> int:
    """Import what a tail needs in a pool process; the short sleep spreads one call over
    each process."""
    import time

    finish_tail(_WARM_SUMS, 1)  # msm_tail, numpy, the reference curve
    time.sleep(0.05)
    return 0


def tail_pool() -> Executor:
    """The processes that finish MSM tails and the assembly's scalar multiplications
    beside the GPU (ProverFlags.overlap_tails, gpu/blinding.py): TAIL_PROCESSES spawned
    processes (no CUDA state; a thread would hold the GIL that the next MSM's kernel
    launches need), started and warmed once per process, not inside a timed prove."""
    with _TAIL_POOL_GUARD:
        if not _TAIL_POOL:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            pool = ProcessPoolExecutor(
                TAIL_PROCESSES, mp_context=multiprocessing.get_context("spawn")
            )
            list(pool.map(_warm_tail, range(TAIL_PROCESSES)))
            atexit.register(pool.shutdown)  # before the interpreter tears its modules down
            _TAIL_POOL.append(pool)
        return _TAIL_POOL[0]


# the window sums of the point at infinity (Z = 0): a tail that costs nothing to finish
_WARM_SUMS = WindowSums("g1", 16, np.zeros(16 * 36, dtype=np.uint32))


def msm_results(raw: dict[str, list[Any]]) -> dict[str, Any]:
    """py_ecc point per stage: the sum of its chunks' results (affine limbs, the window
    sums of a deferred MSM, whose Horner runs here, or the Future of a tail finished
    elsewhere, `partition(..., tails=)`)."""
    out = {}
    for stage, parts in raw.items():
        g2 = stage == "msm_b_g2"
        acc = bls.Z2 if g2 else bls.Z1
        for v in parts:
            if isinstance(v, Future):
                v = v.result()
            if isinstance(v, tuple):  # (limbs, its scaled point): finish_tail with k
                v = v[0]
            if isinstance(v, WindowSums):
                v = v.point()
            acc = bls.add(acc, encoding.g2_from_limbs(v) if g2 else encoding.g1_from_limbs(v))
        out[stage] = acc
    return out


def scaled_points(raw: dict[str, list[Any]], res: Mapping[str, Any], r: int, s: int) -> dict:
    """s a and r b_1 (py_ecc points, gpu/blinding.py): the sum of the scaled chunks the
    tails returned (`partition(..., scale=)`), or, where a stage's results came back
    finished (the unsigned MSM, the device tail), its sum `res[stage]` multiplied here."""
    out = {}
    for stage, k in scales(r, s).items():
        done = [v.result() if isinstance(v, Future) else v for v in raw.get(stage, [])]
        if done and all(isinstance(v, tuple) for v in done):
            acc = bls.Z1
            for _, p in done:
                acc = bls.add(acc, p)
            out[stage] = acc
        else:
            out[stage] = scale_g1(res[stage], k)
    return out
