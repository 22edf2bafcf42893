"""Hardware presets: a card by name (`hardware.card = "rtx4000ada"`), its VRAM, the
figures that scale a profile to it, and the profile that prices it.

A capacity-planning question is usually asked about a card one can buy ("does a 20 GB
RTX 4000 Ada run two workers?"), so scenarios and sweeps may name the card instead of
writing its VRAM. The VRAM is the vendor's specification; vendors write GPU memory in
"GB" but mean binary gigabytes (memory chips come in powers of two: an RTX 4090's
"24 GB" is 24 GiB, which `nvidia-smi` shows as 24564 MiB after the driver's reserve), so
each preset holds the figure in GiB. What the driver reserves beyond that is not part of
the preset; the scenario's `context_overhead` (the profile's constant) stands for the
memory no allocation can use.

**Card and VRAM, one rule** (docs/capacity-planning.md, "Cards by name"): a card sets the
VRAM and the profile of a run. A later layer's `hardware.card` (a `--set`, a sweep axis,
an API override) replaces an earlier layer's `hardware.vram` and `profile`
(cuzk_sim/scenario/card_rule.py); where one layer sets both the card and `hardware.vram`,
the VRAM is a stated override: the run prints that it overrides the card's.

**Every card is priced by its own profile**: the bundled profile measured on it for the
plan's prover, else one derived for it from a measured profile by the scaling rules of
cuzk_sim/profiles/derive.py (kernels by SMs x boost clock x 32-bit integer multiply-add
rate, NTT and pointwise by memory bandwidth, pinned copies by PCIe generation x lanes),
which needs each card's figures below. `pricing_kind` says whether a run's timings were
measured on the card, derived for it, or assumed (another card's profile stands in).

Sources (vendor product pages and datasheets, read 2026-12-01 and 2026-12-03): VRAM,
streaming multiprocessors (SMs; the vendor's CUDA core count / 128 per SM on Ada and
Blackwell, / 64 on Ampere and Hopper data-centre parts), boost clock, memory bandwidth
and the host interface:

- rtx4000ada: NVIDIA RTX 4000 Ada Generation datasheet: "20GB GDDR6 with ECC", 6,144 CUDA
  cores (48 SMs), 360 GB/s, PCIe 4.0 x16; boost 2175 MHz (NVIDIA RTX 4000 Ada product
  page) (https://www.nvidia.com/en-us/design-visualization/rtx-4000/).
- rtx4090: GeForce RTX 4090 specifications: "24 GB GDDR6X", 16,384 CUDA cores (128 SMs),
  boost 2.52 GHz, 1008 GB/s (21 Gbps x 384-bit), PCIe 4.0
  (https://www.nvidia.com/en-us/geforce/graphics-cards/40-series/rtx-4090/).
- rtx5070ti: GeForce RTX 5070 Ti specifications: "16 GB GDDR7", 8,960 CUDA cores (70 SMs),
  boost 2.45 GHz, 896 GB/s (28 Gbps x 256-bit), PCIe 5.0
  (https://www.nvidia.com/en-us/geforce/graphics-cards/50-series/rtx-5070-family/).
- rtx5090: GeForce RTX 5090 specifications: "32 GB GDDR7", 21,760 CUDA cores (170 SMs),
  boost 2.41 GHz, 1792 GB/s (28 Gbps x 512-bit), PCIe 5.0
  (https://www.nvidia.com/en-us/geforce/graphics-cards/50-series/rtx-5090/).
- l40s: NVIDIA L40S datasheet: "48GB GDDR6 with ECC", 18,176 CUDA cores (142 SMs), boost
  2520 MHz, 864 GB/s, PCIe Gen4 x16 (https://www.nvidia.com/en-us/data-center/l40s/).
- a100-40gb, a100-80gb: NVIDIA A100 datasheet: "40GB HBM2" 1,555 GB/s / "80GB HBM2e"
  2,039 GB/s (SXM), 6,912 CUDA cores (108 SMs), boost 1410 MHz, PCIe Gen4 x16
  (https://www.nvidia.com/en-us/data-center/a100/).
- h100-80gb: NVIDIA H100 datasheet, H100 SXM: "80GB", 3.35 TB/s, 132 SMs (16,896 FP32
  cores), boost 1.98 GHz, PCIe Gen5 x16 (the SXM part; the H100 PCIe has 114 SMs and
  2 TB/s) (https://www.nvidia.com/en-us/data-center/h100/).
- h200: NVIDIA H200 datasheet: "141GB HBM3e", 4.8 TB/s, PCIe Gen5 x16; the GH100 of the
  H100 SXM (132 SMs, 1.98 GHz) (https://www.nvidia.com/en-us/data-center/h200/); our own
  device runs saw 143771 MiB total in `nvidia-smi` (docs/benchmarks.md), the 141 GiB
  less the driver's reserve.

32-bit integer multiply-add rate: 64 results per clock per SM for every compute
capability these cards have (8.0, 8.9, 9.0, 12.0; CUDA C++ Programming Guide,
"Arithmetic Instructions", throughput table), so the integer factor is SMs x clock x 64.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from cuzk_sim.io.errors import InputError

GiB = 2**30
IMAD_PER_SM_CLOCK = 64  # 32-bit integer multiply-add results per clock per SM (see above)
# PCIe bytes per second per lane, after line coding (PCI-SIG: 8 GT/s 128b/130b, doubled
# per generation): the ratio between two cards is what the copy rule uses
PCIE_LANE_BYTES = {3: 0.985e9, 4: 1.969e9, 5: 3.938e9}


@dataclass(frozen=True)
class Card:
    """One purchasable card: its memory, the figures the scaling rules use, and the
    bundled profiles measured on it (by the prover they price)."""

    name: str  # the preset's key, as written in scenarios
    model: str  # the vendor's product name
    vram_bytes: int  # the vendor's specified memory, binary GiB
    memory: str  # memory technology, as the vendor writes it
    source: str  # where the figures come from
    sms: int  # streaming multiprocessors
    boost_mhz: int  # boost clock
    mem_bw: float  # memory bandwidth, bytes/s (vendor GB/s)
    pcie_gen: int
    pcie_lanes: int = 16
    measured: dict[str, str] = field(default_factory=dict)  # prover -> bundled profile

    @property
    def profile(self) -> str | None:
        """The bundled profile measured on this card, if any (either prover)."""
        return next(iter(self.measured.values()), None)

    @property
    def int_rate(self) -> float:
        """32-bit integer multiply-adds per second: SMs x clock x rate per SM."""
        return self.sms * self.boost_mhz * 1e6 * IMAD_PER_SM_CLOCK

    @property
    def pcie_bytes(self) -> float:
        return PCIE_LANE_BYTES[self.pcie_gen] * self.pcie_lanes


_NV = "https://www.nvidia.com/en-us"
_ROWS = (  # name, model, GiB, memory, url, SMs, boost MHz, GB/s, PCIe gen, measured
    ("rtx4000ada", "NVIDIA RTX 4000 Ada Generation", 20, "GDDR6 with ECC",
     "design-visualization/rtx-4000/", 48, 2175, 360, 4, {}),
    ("rtx4090", "NVIDIA GeForce RTX 4090", 24, "GDDR6X",
     "geforce/graphics-cards/40-series/rtx-4090/", 128, 2520, 1008, 4, {}),
    ("rtx5070ti", "NVIDIA GeForce RTX 5070 Ti", 16, "GDDR7",
     "geforce/graphics-cards/50-series/rtx-5070-family/", 70, 2450, 896, 5,
     {"cuzk": "rtx5070ti"}),
    ("rtx5090", "NVIDIA GeForce RTX 5090", 32, "GDDR7",
     "geforce/graphics-cards/50-series/rtx-5090/", 170, 2410, 1792, 5, {}),
    ("l40s", "NVIDIA L40S", 48, "GDDR6 with ECC", "data-center/l40s/", 142, 2520, 864, 4, {}),
    ("a100-40gb", "NVIDIA A100 40GB", 40, "HBM2", "data-center/a100/", 108, 1410, 1555, 4, {}),
    ("a100-80gb", "NVIDIA A100 80GB", 80, "HBM2e", "data-center/a100/", 108, 1410, 2039, 4, {}),
    ("h100-80gb", "NVIDIA H100 80GB", 80, "HBM3", "data-center/h100/", 132, 1980, 3350, 5, {}),
    ("h200", "NVIDIA H200", 141, "HBM3e", "data-center/h200/", 132, 1980, 4800, 5,
     {"cuzk_sim.gpu": "h200"}),
)  # fmt: skip
CARDS: dict[str, Card] = {
    r[0]: Card(
        r[0], r[1], r[2] * GiB, r[3], f"{_NV}/{r[4]}", r[5], r[6], r[7] * 1e9, r[8], measured=r[9]
    )  # fmt: skip
    for r in _ROWS
}


def card(name: str) -> Card:
    """The preset called `name`; an unknown name is an InputError listing close names."""
    try:
        return CARDS[name]
    except (KeyError, TypeError):
        close = difflib.get_close_matches(str(name), CARDS, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise InputError(f"unknown card {name!r}{hint}; presets: {', '.join(CARDS)}") from None


# the measured profile each prover's derived profiles scale from
DERIVE_BASE = {"cuzk": "rtx5070ti", "cuzk_sim.gpu": "h200"}


def derived_name(card_name: str, prover: str) -> str:
    """The name of the profile derived for a card: `rtx4090` (cuzk; `h200+cuzk` where the
    card's name is a bundled profile already), `rtx4090+ours` (our prover)."""
    if prover == "cuzk":
        taken = any(card_name in c.measured.values() for c in CARDS.values())
        return f"{card_name}+cuzk" if taken else card_name
    return f"{card_name}+ours"


def derived_profiles() -> dict[str, tuple[str, str]]:
    """Every derived profile's name -> (card, prover): each card that has no bundled
    profile of a prover measured on it gets one derived from that prover's base."""
    return {
        derived_name(c.name, prover): (c.name, prover)
        for c in CARDS.values()
        for prover in DERIVE_BASE
        if prover not in c.measured
    }


def card_profile(card_name: str, prover: str) -> str:
    """The profile that prices `card_name` for `prover`: the bundled profile measured on it,
    else the one derived for it (derived_name)."""
    c = card(card_name)
    if prover in c.measured:
        return c.measured[prover]
    return derived_name(c.name, prover)


def pricing_kind(card_name: str | None, profile) -> str:
    """measured: the profile was measured on this card; derived: derived for this card by
    the scaling rules; assumed: another card's profile stands in (or no card named)."""
    derived_for = getattr(profile, "derived_for", None)
    if card_name is None:
        return "derived" if derived_for else "measured"
    c = card(card_name)
    if derived_for == c.name:
        return "derived"
    if profile.name in c.measured.values():
        return "measured"
    return "assumed"


def pricing_note(card_name: str | None, profile) -> str:
    """Which profile (a loaded `calibration.Profile`: this module cannot load one, the
    profiles import the card presets) priced the timings of this card, and its kind, in
    words for a row."""
    name = profile.name
    kind = pricing_kind(card_name, profile)
    if kind == "measured":
        return f"priced by profile {name} (measured on this card)"
    if kind == "derived":
        base = getattr(profile, "derived_from", "?")
        return f"priced by profile {name} (derived from {base} by the card scaling rules)"
    c = card(card_name) if card_name else None
    own = card_profile(c.name, profile.prover or "cuzk") if c else None
    return (
        f"priced by profile {name} (assumed: measured on {profile.gpu_model}, not this "
        f"card; its own profile is {own}: leave `profile` unset to use it)"
    )
