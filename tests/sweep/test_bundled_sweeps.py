"""The bundled sweeps run, and docs/capacity-planning.md shows what they compute (its
tables are rebuilt here from the results and must appear in the document)."""

from __future__ import annotations

import pytest
from sweep_fixtures import REPO, SCENARIOS

from cuzk_sim import api
from cuzk_sim.units import format_size

DOC = (REPO / "docs" / "capacity-planning.md").read_text()
SWEEPS = SCENARIOS / "sweeps"


@pytest.fixture(scope="module")
def phase9():
    return api.sweep(SWEEPS / "phase9-workers-vram-prestage.toml", jobs=1, plots=False)


@pytest.fixture(scope="module")
def rtx4000ada():
    return api.sweep(SWEEPS / "rtx4000ada-snapdeals-workers-mutex.toml", jobs=1, plots=False)


def _s(v):
    # seconds per proof and proofs per hour (3600 / s, by hand), as the summary prints them
    return "-" if v is None else f"{v:.2f} s = {3600 / v:.1f}/h"


def test_phase9_max_workers_table_is_in_the_doc(phase9):
    shown = 0
    for g in phase9.summary["max_safe_workers"]:
        vram, prestage = g["group"]["hardware.vram"], g["group"]["variant.prestage"]
        line = (
            f"| vram={vram}, prestage={prestage} | "
            f"{g['max_safe_workers'] if g['max_safe_workers'] is not None else 'none'} | "
            f"{_s(g['seconds_per_proof'])} | {g['first_unsafe_workers'] or '-'} | "
            f"{g['first_unsafe_buffer'] or '-'} |"
        )
        if vram in ("24 GiB", "32 GiB") and prestage != "outside_mutex":
            assert g["max_safe_workers"] == 4  # the doc's note under the table
        else:
            assert line in DOC, line
            shown += 1
    assert shown == 11


def test_phase9_min_vram_search_table_is_in_the_doc(phase9):
    by = {
        (b["group"]["engine.gpus.gpu_workers_per_device"], b["group"]["variant.prestage"]): b
        for b in phase9.boundaries
        if b["kind"] == "min_vram"
    }
    for w in range(1, 5):
        cells = [
            format_size(by[w, p]["min_safe_vram_bytes"])
            for p in ("off", "outside_mutex", "under_mutex")
        ]
        assert f"| {w} | {' | '.join(cells)} |" in DOC


def test_rtx4000ada_tables_are_in_the_doc(rtx4000ada):
    grid = {g["group"]["variant.mutex_scope"]: g for g in rtx4000ada.summary["max_safe_workers"]}
    searched = {
        b["group"]["variant.mutex_scope"]: b["max_safe_workers"]
        for b in rtx4000ada.boundaries
        if b["kind"] == "max_workers"
    }
    for scope, label in (
        ("none", "none (the incident's binary)"),
        ("device", "device"),
        ("global", "global"),
    ):
        g = grid[scope]
        line = (
            f"| {label} | {g['max_safe_workers']} ({searched[scope]}) | "
            f"{_s(g['seconds_per_proof'])} | {g['first_unsafe_workers'] or '-'} | "
            f"{g['first_unsafe_buffer'] or '-'} |"
        )
        assert line in DOC, line
    no_mutex = sorted(
        (b["group"]["engine.gpus.gpu_workers_per_device"], b["min_safe_vram_bytes"])
        for b in rtx4000ada.boundaries
        if b["kind"] == "min_vram" and b["group"]["variant.mutex_scope"] == "none"
    )
    text = (
        f"{format_size(no_mutex[0][1])} for 1 worker, {format_size(no_mutex[1][1])} for 2, "
        f"{format_size(no_mutex[2][1])} for 3, {format_size(no_mutex[3][1])}"
    )
    assert text in " ".join(DOC.split()), text


def test_the_incident_scenario_holds_its_expectation(rtx4000ada):
    """Two workers without the mutex OOM on the 20 GB card (cuzk-facts.md), one does not."""
    rows = {
        (r["engine.gpus.gpu_workers_per_device"], r["variant.mutex_scope"]): r
        for r in rtx4000ada.rows
    }
    assert rows[2, "none"]["oom"] and not rows[1, "none"]["oom"]
    assert rows[2, "none"]["vram_bytes"] == 20 * 2**30
    assert "derived from rtx5070ti" in rows[2, "none"]["pricing"]  # the card's own profile


def test_cards_sweep_prices_each_card_by_its_own_profile():
    """Every preset gets its own VRAM and profile (the card rule), the row says which
    profile and whether measured or derived, and the doc's table is the sweep's."""
    from cuzk_sim.cards import CARDS, card_profile

    out = api.sweep(SWEEPS / "cards-porep-sweep.toml", jobs=1, plots=False)
    rows = {(r["hardware.card"], r["variant.prestage"]): r for r in out.rows}
    assert {c for c, _ in rows} == set(CARDS)
    for c in CARDS:
        off, on = rows[c, "off"], rows[c, "under_mutex"]
        assert off["vram_bytes"] == CARDS[c].vram_bytes
        assert off["priced_by"] == card_profile(c, "cuzk")
        kind = "measured" if c == "rtx5070ti" else "derived"
        assert f"({kind}" in off["pricing"]
        line = (
            f"| {c} | {off['priced_by']} ({kind}) | {off['seconds_per_proof']:.2f} | "
            f"{on['seconds_per_proof']:.2f} |"
        )
        assert line in DOC, line
    # the cards differ where the card is the bottleneck (no pre-staging)
    assert len({round(rows[c, "off"]["seconds_per_proof"], 1) for c in CARDS}) >= 4


def _dominates(a, b) -> bool:
    """Card a has at least as much of every resource the scaling rules scale by (integer
    rate for the kernels, memory bandwidth for NTT, PCIe rate for copies) and strictly
    more of one: by the rules' arithmetic its GPU section is no longer than b's."""
    pairs = [(a.int_rate, b.int_rate), (a.mem_bw, b.mem_bw), (a.pcie_bytes, b.pcie_bytes)]
    return all(x >= y for x, y in pairs) and any(x > y for x, y in pairs)


def test_gpu_bound_cards_sweep_gives_each_card_its_own_figure():
    """cards-porep-gpu-bound-sweep: with the B_G2 MSM on the GPU on a host that keeps the
    card fed, every preset is bound by its own GPU section (verdict gpu, copy or mutex,
    never the host side or the CPU pool), the nine s/proof are pairwise distinct, and a
    card with more of every scaled resource is faster. With the B_G2 MSM on the CPU the
    pool's chain binds: 10 partitions x (1.6 + 1.0) s = 26 s/proof at least, for every
    card. The doc's table is the sweep's."""
    from cuzk_sim.cards import CARDS, card_profile

    out = api.sweep(SWEEPS / "cards-porep-gpu-bound-sweep.toml", jobs=1, plots=False)
    rows = {(r["hardware.card"], r["variant.b_g2_msm"]): r for r in out.rows}
    assert {c for c, _ in rows} == set(CARDS)
    gpu = {c: rows[c, "gpu"] for c in CARDS}
    for c, r in gpu.items():
        assert r["safe"] and r["priced_by"] == card_profile(c, "cuzk")
        assert r["bottleneck"] in ("gpu", "copy", "mutex"), (c, r["bottleneck"])
        assert rows[c, "cpu"]["seconds_per_proof"] >= 10 * (1.6 + 1.0)
    spp = {c: r["seconds_per_proof"] for c, r in gpu.items()}
    assert len({round(v, 2) for v in spp.values()}) == len(CARDS)  # pairwise distinct
    ordered = [(a, b) for a in CARDS for b in CARDS if _dominates(CARDS[a], CARDS[b])]
    assert len(ordered) >= 10  # e.g. h200 over h100, rtx5090 over rtx4090 and rtx5070ti
    for a, b in ordered:
        assert spp[a] < spp[b], (a, b, spp[a], spp[b])
    for c in CARDS:
        kind = "measured" if c == "rtx5070ti" else "derived"
        line = (
            f"| {c} | {gpu[c]['priced_by']} ({kind}) | "
            f"{rows[c, 'cpu']['seconds_per_proof']:.2f} ({rows[c, 'cpu']['bottleneck']}) | "
            f"{spp[c]:.2f} ({gpu[c]['bottleneck']}) |"
        )
        assert line in DOC, line
