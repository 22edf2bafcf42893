"""How our prover launches one MSM: its kernels, one by one, from the host.

The signed MSM of gpu/msm.py (`_msm_signed`) is not one kernel but a sequence the host
launches in turn: the counting sort (the counts zeroed, `signed_count`, the first start
zeroed, CuPy's cumsum, the counts made cursors, `signed_scatter`: 6 launches), the bucket
accumulation (`acc_balanced`, one `acc_level` per level, `acc_empty`), `set_reduce`, and
the tree over the segments (one `sum_groups` per level of fan-in 2; one slice copy when
there is one segment). On a device whose workers share one in-order queue these launches
are what another worker's work lands between: in the 2-worker no-mutex runs of the H200
race call of 2026-12-03 19:59 (docs/validation/h200-2026-12-03-races/call-1959-v2,
2439 MSM spans), 6893 starts of the other worker's kernels and copies fall inside an MSM's
span, spread over its whole length (918, 512, 471, 608, 717, 712, 722, 729, 621, 883 by
tenth of the span): the host issues the MSM's kernels over the time the GPU runs them,
not all at once. The model queues an MSM whole; issuing it as these kernels is a trial
(cuzk_sim/steps/kernel.py `MSM_LAUNCHES`; docs/validation.md, "Races").
"""

from __future__ import annotations

from functools import lru_cache

MSM_GROUPS = {"msm_g1": "g1", "msm_g2": "g2"}
SORT_LAUNCHES = 6  # fill, signed_count, starts[0] = 0, cumsum, counts = starts, scatter


@lru_cache(maxsize=256)
def msm_launches(kind: str, size: int) -> int:
    """Kernels the host launches for one signed MSM of `size` points (kind msm_g1 or
    msm_g2); 1 for any other kind (a single kernel)."""
    group = MSM_GROUPS.get(kind)
    if group is None or size < 1:
        return 1
    from cuzk_sim.gpu.msm import TREE_FAN_IN, SignedShape

    shape = SignedShape.of(group, size)  # type: ignore[arg-type]
    tree, per = 0, shape.segments
    while per > 1:
        per //= min(TREE_FAN_IN, per)
        tree += 1
    accumulate = 1 + shape.levels() + 1
    return SORT_LAUNCHES + accumulate + 1 + max(1, tree)
