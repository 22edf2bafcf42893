"""Fixed-base tables for the precomputed signed MSM (ProverFlags.key_tables): 2^(t c) P_i
for every window t, built on the device once per key (gpu/msm.py runs the MSM over them)."""

from __future__ import annotations

import numpy as np

from .device import Buffer, Device
from .msm import Group, SignedShape

# the table build's kernel step is priced as an MSM of this many x n points: the builds
# measured on the H200 (docs/benchmarks.md, 2026-12-01, branch `tables`: G1 2^20 0.39 s,
# G2 2^20 0.66 s) read back through the h200 profile's MSM points (G1 35 x 2^20 points:
# 0.385 s; G2 18 x 2^20: 0.646 s). The build is (windows - 1) x (c doublings + one
# inversion) per point, ~25 MSMs' worth; the profile has no kind of its own for it
TABLE_BUILD_MSM_POINTS = {"g1": 35, "g2": 18}


def precompute_table(dev: Device, name: str, group: Group, points: Buffer, n: int) -> Buffer:
    """Fixed bases for a precomputed signed MSM of these n points: a device buffer `name`
    holding 2^(t c) P_i for every window t (SignedShape.table_bytes). Built once per key:
    n x 256 doublings and one inversion per entry, far more than one MSM."""
    shape = SignedShape.of(group, n, precomputed=True)
    table = dev.alloc(name, shape.table_bytes(), persistent=True)
    build_table(dev, f"{name}.build", group, points, table, n)
    return table


def build_table(
    dev: Device,
    name: str,
    group: Group,
    points: Buffer,
    table: Buffer,
    n: int,
    fills: str | None = None,
) -> None:
    """Kernel `name`: table t of `table` (t = 0..windows - 1, n points each) := 2^(t c) P_i.
    `points` may be `table` itself, holding P_i in its first n entries (table 0 is the
    points: each thread reads its point before it writes), so a resident key needs no
    separate points buffer. `fills`: the resident buffer the build fills (Device.kernel)."""
    shape = SignedShape.of(group, n, precomputed=True)

    def run() -> None:
        from .module import launch

        launch(
            "msm_signed.cu",
            f"{group}_precompute",
            n,
            points.array,
            table.array,
            np.int64(n),
            np.int32(shape.c),
            np.int32(shape.windows),
            threads=64,
        )

    size = TABLE_BUILD_MSM_POINTS[group] * n
    dev.kernel(name, f"msm_{group}", size, run, fills=fills)
