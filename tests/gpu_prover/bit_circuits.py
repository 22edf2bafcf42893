"""Hypothesis strategies for 0/1-heavy witnesses over sparse queries: small circuits of
bellman's boolean gadgets (reference/circuits_sha256.py: booleanity, xor, ch, maj, add
mod 2^32 on short words) plus a few field-valued products, so that most aux scalars are
0 or 1, some are neither, and many variables enter only C (the A / B queries leave them
out)."""

from __future__ import annotations

from hypothesis import strategies as st


@st.composite
def bit_circuits(draw, max_bits: int = 6):
    """(R1CS, witness): `bits` booleans, gadgets over them, `fields` field products."""
    from cuzk_sim.reference.circuits import LC
    from cuzk_sim.reference.circuits_sha256 import Bit, Sha256Builder
    from cuzk_sim.reference.field import R

    cs = Sha256Builder()
    cs.public(draw(st.integers(0, 5)))
    bits = [cs.bit(draw(st.integers(0, 1))) for _ in range(draw(st.integers(2, max_bits)))]
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["xor", "ch", "maj", "and"]))
        x, y, z = (draw(st.sampled_from(bits)) for _ in range(3))
        if op == "xor":
            bits.append(cs.xor(x, y))
        elif op == "ch":
            bits.append(cs.ch(x, y, z))
        elif op == "maj":
            bits.append(cs.maj(x, y, z))
        else:
            bits.append(Bit(cs.mul(x.lc, y.lc, "and"), x.value & y.value))
    if draw(st.booleans()):  # a 4-bit word addition: result and carry bits, one C-only row
        words = [tuple(draw(st.sampled_from(bits)) for _ in range(4)) for _ in range(2)]
        total = sum(sum(b.value << i for i, b in enumerate(w)) for w in words)
        out = [cs.bit((total >> i) & 1) for i in range(5)]
        terms = LC(())
        for w in words:
            for i, b in enumerate(w):
                terms = terms + b.lc * (1 << i)
        result = LC(())
        for i, b in enumerate(out):
            result = result + b.lc * (1 << i)
        cs.enforce(LC(()), LC(()), terms - result, "add")
    for _ in range(draw(st.integers(0, 2))):  # field-valued scalars: the rest of a split
        x = cs.private(draw(st.integers(2, R - 1)))
        cs.mul(x, draw(st.sampled_from(bits)).lc + 1, "field")
    return cs.build()
