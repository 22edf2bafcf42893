"""A profile for a card no one measured: a measured profile scaled by stated rules.

The measured profiles are `rtx5070ti` (cuzk, from its project's published figures) and
`h200` (our CuPy prover, calibrated on the device). For another card preset
(cuzk_sim/profiles/cards.py) the profile of the same prover is scaled figure by figure:

- **integer kernels** (`msm_g1`, `msm_g2`, `batch_add_g1`, `batch_add_g2`): time x
  base / target of SMs x boost clock x 32-bit integer multiply-add rate per SM; an MSM's
  `zero_share` / `one_share` (shares of that time) are kept. Bucket
  accumulation and batch additions are Fp multiplications, i.e. IMAD chains: they scale
  with the integer throughput, not with memory.
- **memory-bound kernels** (`ntt`, `pointwise`): time x base / target memory bandwidth.
  A 2^27 NTT of 32-byte elements streams 4 GiB per pass with little arithmetic per
  byte; a pointwise product reads two vectors and writes one.
- **pinned copies** (`copy_engine.pinned` and its measured points): DMA at link speed,
  bandwidth x target / base PCIe rate (generation x lanes); the latency is kept.
- **pageable copies** (`copy_engine.pageable` and its points): bounded by the host's
  staging through the driver's bounce buffer, not by the link (6.7 GiB/s on the RTX 5070
  Ti's PCIe 5.0 x16, a quarter of its pinned rate): kept from the base, capped at the
  target's pinned rate.
- **kept** (the base's figure and basis, said so in `source`): the CUDA context, the
  host side (`cpu.*`, `pce.*`, `[host]`, `[allocator]`): the card does not change the
  host, so a derived profile keeps the measured host; replace them with your host's.

Each scaled figure is tagged `derived`, its source naming the rule, the factor and the
two cards' figures, so `profile show rtx4090` says exactly how each number was made. A
provider's own log still beats all of this (`cuzk-sim calibrate`).
"""

from __future__ import annotations

import copy
from typing import Any

from cuzk_sim.io.units import format_size, parse_bandwidth, parse_duration
from cuzk_sim.profiles.cards import Card

INTEGER_KINDS = ("msm_g1", "msm_g2", "batch_add_g1", "batch_add_g2")
MEMORY_KINDS = ("ntt", "pointwise")


def _seconds_text(s: float) -> str:
    return f"{s * 1e3:.6g} ms"


def _bandwidth_text(bps: float) -> str:
    return f"{bps / 2**30:.6g} GiB/s"


def integer_factor(base: Card, target: Card) -> float:
    """Time factor of an integer-throughput-bound kernel moved from `base` to `target`."""
    return base.int_rate / target.int_rate


def memory_factor(base: Card, target: Card) -> float:
    """Time factor of a memory-bandwidth-bound kernel."""
    return base.mem_bw / target.mem_bw


def pcie_factor(base: Card, target: Card) -> float:
    """Bandwidth factor of a host-to-device copy (target / base PCIe rate)."""
    return target.pcie_bytes / base.pcie_bytes


def _int_rule(base: Card, target: Card) -> str:
    f = integer_factor(base, target)
    return (
        f"derived (integer kernels: x {f:.4f} = base / target SMs x boost x 64 IMAD/clk/SM: "
        f"{base.name} {base.sms} x {base.boost_mhz} MHz, {target.name} {target.sms} x "
        f"{target.boost_mhz} MHz)"
    )


def _mem_rule(base: Card, target: Card) -> str:
    f = memory_factor(base, target)
    return (
        f"derived (memory-bound kernels: x {f:.4f} = base / target memory bandwidth: "
        f"{base.name} {base.mem_bw / 1e9:g} GB/s, {target.name} {target.mem_bw / 1e9:g} GB/s)"
    )


def _copy_rule(base: Card, target: Card) -> str:
    f = pcie_factor(base, target)
    return (
        f"derived (pinned copies: bandwidth x {f:.4f} = target / base PCIe rate: {base.name} "
        f"PCIe {base.pcie_gen}.0 x{base.pcie_lanes}, {target.name} PCIe {target.pcie_gen}.0 "
        f"x{target.pcie_lanes}; pageable copies: the host's staging rate kept, capped at "
        "the pinned rate; latency kept)"
    )


def _scale_cost(cost: dict[str, Any], factor: float, rule: str) -> dict[str, Any]:
    out = dict(cost)
    out["time"] = _seconds_text(parse_duration(cost["time"]) * factor)
    if "fixed" in cost:
        out["fixed"] = _seconds_text(parse_duration(cost["fixed"]) * factor)
    if "shape_fixed" in cost:  # an MSM's part its 0/1 scalars do not shrink: scaled alike
        out["shape_fixed"] = _seconds_text(parse_duration(cost["shape_fixed"]) * factor)
    if cost.get("points"):
        out["points"] = [[n, _seconds_text(parse_duration(t) * factor)] for n, t in cost["points"]]
    out["basis"] = "derived"
    out["source"] = f"{rule}; from {cost.get('source', '').strip()[:160]}"
    if "shares_source" in cost:  # MSM shares: of the scaled time, taken as the base card's
        out["shares_basis"] = "derived"
        out["shares_source"] = (
            "kept from the base card (a share of the scaled random-scalar time, assumed the "
            f"same on this card): {cost['shares_source'].strip()[:160]}"
        )
    return out


def _kept(table: dict[str, Any], base_name: str) -> dict[str, Any]:
    out = dict(table)
    out["source"] = f"kept from {base_name} (the host, not the card): {table.get('source', '')}"
    return out


def derive_raw(base_raw: dict[str, Any], base: Card, target: Card, name: str) -> dict[str, Any]:
    """The TOML table of the profile for `target`, scaled from `base_raw` (measured on
    `base`); validated by the profile loader like any file."""
    raw = copy.deepcopy(base_raw)
    base_name = str(base_raw["name"])
    raw["name"] = name
    int_rule, mem_rule = _int_rule(base, target), _mem_rule(base, target)
    for kind, cost in raw["kernel"].items():
        if kind in INTEGER_KINDS:
            raw["kernel"][kind] = _scale_cost(cost, integer_factor(base, target), int_rule)
        elif kind in MEMORY_KINDS:
            raw["kernel"][kind] = _scale_cost(cost, memory_factor(base, target), mem_rule)
    ce, f = raw["copy_engine"], pcie_factor(base, target)
    pinned = parse_bandwidth(ce["pinned"]) * f
    ce["pinned"] = _bandwidth_text(pinned)
    if ce.get("pinned_points"):
        ce["pinned_points"] = [
            [b, _seconds_text(parse_duration(t) / f)] for b, t in ce["pinned_points"]
        ]
    pageable = parse_bandwidth(ce["pageable"])
    cap = min(1.0, pinned / pageable)  # the host's staging rate, at most the link's
    ce["pageable"] = _bandwidth_text(pageable * cap)
    if ce.get("pageable_points") and cap < 1.0:
        ce["pageable_points"] = [
            [b, _seconds_text(parse_duration(t) / cap)] for b, t in ce["pageable_points"]
        ]
    old_basis = ce.get("basis", {})
    old_basis = old_basis if isinstance(old_basis, dict) else {}
    ce["basis"] = {
        "pinned": "derived",
        "pageable": "derived" if cap < 1.0 else old_basis.get("pageable", "assumed"),
        "latency": old_basis.get("latency") or "assumed",
    }
    ce["source"] = f"{_copy_rule(base, target)}; from {base_name}: {ce.get('source', '')}"
    gpu = raw["gpu"]
    ctx_basis = gpu.get("basis", {})
    ctx_basis = ctx_basis.get("context_overhead") if isinstance(ctx_basis, dict) else ctx_basis
    gpu.update(
        model=target.model,
        vram=format_size(target.vram_bytes),
        basis={"vram": "measured", "context_overhead": ctx_basis or "assumed"},
        source=(
            f"vram: the vendor's {target.vram_bytes // 2**30} GiB ({target.source}); "
            f"context kept from {base_name} (assumed the same on this card)"
        ),
    )
    raw["cpu"] = {k: _kept(c, base_name) for k, c in raw["cpu"].items()}
    raw["pce"] = _kept(raw["pce"], base_name)
    if "host" in raw:
        raw["host"] = _kept(raw["host"], base_name)
    if "jitter" in raw:  # relative spreads: the prover's and the host's, measured on the base
        jitter = raw["jitter"]
        jitter["source"] = (
            f"kept from {base_name} (relative spreads measured on {base.model}; assumed "
            f"the same on this card): {jitter.get('source', '')}"
        )
        jitter["basis"] = "assumed"
    raw["provenance"] = (
        f"Derived for the {target.model} from profile {base_name} (measured on "
        f"{base.model}) by the card scaling rules of cuzk_sim/profiles/derive.py: "
        f"{int_rule}; {mem_rule}; {_copy_rule(base, target)}. The host side is "
        f"{base_name}'s. No figure of this profile was measured on this card: calibrate "
        "from your own log (`cuzk-sim calibrate`) to replace them."
    )
    return raw
