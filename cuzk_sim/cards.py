"""Hardware presets: a card by name (`hardware.card = "rtx4000ada"`) and its VRAM.

A capacity-planning question is usually asked about a card one can buy ("does a 20 GB
RTX 4000 Ada run two workers?"), so scenarios and sweeps may name the card instead of
writing its VRAM. The VRAM is the vendor's specification; vendors write GPU memory in
"GB" but mean binary gigabytes (memory chips come in powers of two: an RTX 4090's
"24 GB" is 24 GiB, which `nvidia-smi` shows as 24564 MiB after the driver's reserve), so
each preset holds the figure in GiB. What the driver reserves beyond that is not part of
the preset; the scenario's `context_overhead` (the profile's constant) stands for the
memory no allocation can use.

A preset also says which bundled calibration profile was measured on that card, if any.
Timings always come from the scenario's `profile` (a card alone changes memory, not
speed); `pricing_note` says whether that profile belongs to the card, so an output can
state that an unprofiled card was priced by another card's figures.

Sources (vendor product pages and datasheets, read 2026-12-01):

- rtx4000ada: NVIDIA RTX 4000 Ada Generation datasheet, "20GB GDDR6 with ECC"
  (https://www.nvidia.com/en-us/design-visualization/rtx-4000/).
- rtx4090: GeForce RTX 4090 specifications, "24 GB GDDR6X"
  (https://www.nvidia.com/en-us/geforce/graphics-cards/40-series/rtx-4090/).
- rtx5070ti: GeForce RTX 5070 Ti specifications, "16 GB GDDR7"
  (https://www.nvidia.com/en-us/geforce/graphics-cards/50-series/rtx-5070-family/).
- rtx5090: GeForce RTX 5090 specifications, "32 GB GDDR7"
  (https://www.nvidia.com/en-us/geforce/graphics-cards/50-series/rtx-5090/).
- l40s: NVIDIA L40S datasheet, "48GB GDDR6 with ECC"
  (https://www.nvidia.com/en-us/data-center/l40s/).
- a100-40gb, a100-80gb: NVIDIA A100 datasheet, "40GB HBM2" / "80GB HBM2e"
  (https://www.nvidia.com/en-us/data-center/a100/).
- h100-80gb: NVIDIA H100 datasheet, H100 SXM and H100 PCIe "80GB"
  (https://www.nvidia.com/en-us/data-center/h100/).
- h200: NVIDIA H200 datasheet, "141GB HBM3e"
  (https://www.nvidia.com/en-us/data-center/h200/); our own device runs saw 143771 MiB
  total in `nvidia-smi` (docs/benchmarks.md), the 141 GiB less the driver's reserve.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from cuzk_sim.input_errors import InputError

GiB = 2**30


@dataclass(frozen=True)
class Card:
    """One purchasable card: its name, its memory and the profile measured on it."""

    name: str  # the preset's key, as written in scenarios
    model: str  # the vendor's product name
    vram_bytes: int  # the vendor's specified memory, binary GiB
    memory: str  # memory technology, as the vendor writes it
    source: str  # where the figure comes from
    profile: str | None  # bundled calibration profile measured on this card, or None


def _card(name: str, model: str, gib: int, memory: str, source: str, profile=None) -> Card:
    return Card(name, model, gib * GiB, memory, source, profile)


_NV = "https://www.nvidia.com/en-us"
CARDS: dict[str, Card] = {
    c.name: c
    for c in (
        _card(
            "rtx4000ada",
            "NVIDIA RTX 4000 Ada Generation",
            20,
            "GDDR6 with ECC",
            f"{_NV}/design-visualization/rtx-4000/",
        ),
        _card(
            "rtx4090",
            "NVIDIA GeForce RTX 4090",
            24,
            "GDDR6X",
            f"{_NV}/geforce/graphics-cards/40-series/rtx-4090/",
        ),
        _card(
            "rtx5070ti",
            "NVIDIA GeForce RTX 5070 Ti",
            16,
            "GDDR7",
            f"{_NV}/geforce/graphics-cards/50-series/rtx-5070-family/",
            profile="rtx5070ti",
        ),
        _card(
            "rtx5090",
            "NVIDIA GeForce RTX 5090",
            32,
            "GDDR7",
            f"{_NV}/geforce/graphics-cards/50-series/rtx-5090/",
        ),
        _card("l40s", "NVIDIA L40S", 48, "GDDR6 with ECC", f"{_NV}/data-center/l40s/"),
        _card("a100-40gb", "NVIDIA A100 40GB", 40, "HBM2", f"{_NV}/data-center/a100/"),
        _card("a100-80gb", "NVIDIA A100 80GB", 80, "HBM2e", f"{_NV}/data-center/a100/"),
        _card("h100-80gb", "NVIDIA H100 80GB", 80, "HBM3", f"{_NV}/data-center/h100/"),
        _card("h200", "NVIDIA H200", 141, "HBM3e", f"{_NV}/data-center/h200/", profile="h200"),
    )
}


def card(name: str) -> Card:
    """The preset called `name`; an unknown name is an InputError listing close names."""
    try:
        return CARDS[name]
    except (KeyError, TypeError):
        close = difflib.get_close_matches(str(name), CARDS, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise InputError(f"unknown card {name!r}{hint}; presets: {', '.join(CARDS)}") from None


def pricing_note(card_name: str | None, profile_name: str) -> str:
    """Which profile priced the timings of this card, in words for an output row."""
    if card_name is None:
        return f"priced by profile {profile_name}"
    c = card(card_name)
    if c.profile == profile_name:
        return f"priced by profile {profile_name}, measured on this card"
    if c.profile is None:
        return f"unprofiled card: priced by the scenario's profile {profile_name}"
    return (
        f"priced by the scenario's profile {profile_name}; the card's own profile is "
        f"{c.profile} (set profile = {c.profile!r} to use it)"
    )
