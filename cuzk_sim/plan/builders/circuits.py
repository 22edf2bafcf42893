"""Circuit shapes of the Filecoin proofs that cuzk proves (32 GiB sectors).

Plans are functions of these shapes, so one builder yields production-size plans
(domain 2^27) on a laptop. Constraint counts, partition counts, domains, priorities and
host-memory estimates are the published figures (cuzk-facts.md, from curio
extern/cuzk `memory.rs` and the circuit table). MSM point counts and the tail fraction
are not published: they are estimates, stated as fractions of the constraint count.
"""

from __future__ import annotations

from dataclasses import dataclass

GIB = 2**30
FR_BYTES = 32  # one scalar field element
G1_AFFINE_BYTES = 96  # as supraseal stores affine G1 points
G2_AFFINE_BYTES = 192


@dataclass(frozen=True)
class CircuitShape:
    """One partition's circuit, as the prover sees it."""

    kind: str
    constraints: int  # rows of A, B, C = length of the a/b/c vectors (abc_size)
    domain_log2: int  # FFT domain N = 2^domain_log2 >= constraints + inputs
    partitions: int  # partitions per proof
    priority: int  # cuzk scheduler priority (higher runs first)
    host_bytes: int  # host-memory estimate per synthesized partition (memory.rs)
    l_fraction: float = 1.0  # L (aux) MSM points / constraints — estimate
    a_fraction: float = 1.0  # A MSM points / constraints — estimate
    b_fraction: float = 0.5  # B (G1 and G2) MSM points / constraints — estimate
    tail_fraction: float = 0.15  # share of scalars that are neither 0 nor 1 — estimate
    # the host side as a scenario states it (`[plan.host]`, cuzk_sim/scenario/plan_sources.py)
    synthesis_s: float | None = None  # one partition's synthesis; None: profile x constraints
    pce: bool = True  # the engine makes the kind's PCE available (load/extract) first
    # what the daemon keeps resident once the kind is used (cuzk-memory-manager.md 1.3/1.4,
    # cuzk-project.md Phase 5): the SRS in pinned host memory, the PCE on the heap
    srs_bytes: int = 0
    pce_bytes: int = 0
    witness_fraction: float = 1.0  # aux (witness) elements / constraints (PCE num_aux)

    @property
    def domain(self) -> int:
        return 1 << self.domain_log2

    @property
    def l_points(self) -> int:
        return int(self.constraints * self.l_fraction)

    @property
    def a_points(self) -> int:
        return int(self.constraints * self.a_fraction)

    @property
    def b_points(self) -> int:
        return int(self.constraints * self.b_fraction)

    def tail(self, points: int) -> int:
        """Points of the tail MSM left after the 0/1 scalars went to batch additions."""
        return int(points * self.tail_fraction)


MIB = 2**20
# SRS sizes: cuzk-memory-manager.md 1.3 (pinned = .params size). Its SnapDeals ~33 GiB,
# not cuzk-project.md's ~626 MB: a Groth16 key holds one G1 point per H element (2^27 x
# 96 B = 12 GiB at domain 2^27) besides A, B and L, so no 2^27 circuit's key is below
# 12 GiB; 626 MB is not a 32 GiB SnapDeals key (docs/simulator.md). PCE: cuzk-project.md
# Phase 5 (PoRep 25.7 GiB measured), cuzk-memory-manager.md 1.4 for the others.
SHAPES: dict[str, CircuitShape] = {
    "porep": CircuitShape(
        "porep", 130_278_541, 27, 10, 2, 14 * GIB,
        srs_bytes=44 * GIB, pce_bytes=round(25.7 * GIB), witness_fraction=130_169_893 / 130_278_541,
    ),
    "snapdeals": CircuitShape(
        "snapdeals", 81_049_499, 27, 16, 2, 9 * GIB, srs_bytes=33 * GIB, pce_bytes=17 * GIB
    ),
    "window_post": CircuitShape(
        "window_post", 125_279_217, 27, 1, 3, 14 * GIB, srs_bytes=57 * GIB, pce_bytes=26 * GIB
    ),
    "winning_post": CircuitShape(
        "winning_post", 370_590, 19, 1, 4, GIB // 2, srs_bytes=184 * MIB, pce_bytes=410 * MIB
    ),
}  # fmt: skip
