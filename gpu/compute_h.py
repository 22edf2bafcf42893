"""The compute_h phase of a partition on the GPU: the NTT tables up, then on d_a (a, then h)
and d_bc (b | c) iNTT and coset NTT of a, b, c; pointwise (ab - c) / Z; coset iNTT
(bellman), or ab - c on the odd coset of the 2n domain (snarkjs)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from cuzk_sim.reference.domain import Domain
from cuzk_sim.reference.field import GENERATOR_BELLMAN, R

from .device import Device
from .ntt import DeviceTables, domain_tables, tables_bytes


@functools.lru_cache(maxsize=8)
def _packed_tables(log_n: int, reduction: str) -> np.ndarray:
    """The NTT tables of a 2^log_n domain, computed once per domain (host work that would
    otherwise run inside the lock for every partition: 20 ms at 2^18)."""
    domain = Domain(1 << log_n, reduction)
    if reduction == "bellman":
        g = GENERATOR_BELLMAN
        zinv = pow(domain.vanishing_at(g), -1, R)
    else:
        g, zinv = domain.omega_2n, 1
    tables = domain_tables(log_n, domain.omega, g, zinv).pack()
    tables.setflags(write=False)
    return tables


def _compute_h(dev: Device, log_n: int, reduction: str, d_a: Any, d_bc: Any, d_tab: Any) -> None:
    """The NTT-H phase on d_a (a, then h) and d_bc (b | c)."""
    from . import ntt as gntt
    from .module import launch

    n = 1 << log_n
    w = 8 * n

    def views() -> tuple[Any, Any, Any, DeviceTables]:
        t = DeviceTables.from_buffer(d_tab.array, log_n)
        return d_a.array[:w], d_bc.array[:w], d_bc.array[w : 2 * w], t

    def to_mont(i: int) -> None:
        launch("field_ops.cu", "fr_convert", n, views()[i], np.int64(n), np.int32(1))

    for i, name in enumerate("abc"):
        dev.kernel(f"compute_h.to_mont_{name}", "pointwise", n, lambda i=i: to_mont(i))
        dev.kernel(
            f"compute_h.intt_{name}", "ntt", n, lambda i=i: gntt.intt(views()[i], views()[3])
        )
        dev.kernel(
            f"compute_h.coset_ntt_{name}",
            "ntt",
            n,
            lambda i=i: gntt.coset_ntt(views()[i], views()[3]),
        )

    def quotient() -> None:
        a, b, c, t = views()
        if reduction == "bellman":
            launch("field_ops.cu", "fr_h_quotient", n, a, b, c, t.zinv, np.int64(n))
        else:
            launch("field_ops.cu", "fr_h_product", n, a, b, c, np.int64(n))

    dev.kernel("compute_h.quotient", "pointwise", n, quotient)
    if reduction == "bellman":
        dev.kernel("compute_h.coset_intt_h", "ntt", n, lambda: gntt.coset_intt(*views()[::3]))
    dev.kernel(
        "compute_h.from_mont_h",
        "pointwise",
        n,
        lambda: launch("field_ops.cu", "fr_convert", n, views()[0], np.int64(n), np.int32(0)),
    )


def compute_h(dev: Device, log_n: int, reduction: str, d_a: Any, d_bc: Any, d_tab: Any) -> None:
    """The compute_h phase: the NTT tables up into d_tab, then h on d_a (`_compute_h`)."""
    tables = _packed_tables(log_n, reduction) if dev.runs else None
    dev.copy_htod("upload_ntt_tables", d_tab, tables, tables_bytes(log_n))
    _compute_h(dev, log_n, reduction, d_a, d_bc, d_tab)
