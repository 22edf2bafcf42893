"""A SHA-256 compression as an R1CS, gadget by gadget as bellman's boolean gadgets build it.

Why: PoRep's constraints are mostly SHA-256 (the SDR labelling of every challenged node
and tree D's inclusion paths; Poseidon's share is small), so the witness shape of a
PoRep partition -- the share of aux assignments that are bits, and which variables the A
and B queries touch -- is that of SHA-256 compressions. This builds one (or a chain of
several) through our `Builder`, so `gpu/witness_shape.py` measures that shape here.

Gadgets (the constraint each one adds, x, y, z bits as linear combinations):
  alloc bit b        (1 - b) b = 0              (booleanity: b in A and B)
  xor  z = x ^ y     (2 x) y = x + y - z        (z is not checked boolean: it follows)
  ch   z = e ? f : g (f - g) e = z - g
  maj  z = maj(a,b,c)  t = b c;  (2 t - b - c) a = t - z
  add  words mod 2^32: sum of the terms' weighted bits = sum of the result's weighted
       bits + 2^32 carry, as 0 · 0 = (terms - result) (only in C); result and carry bits
       allocated as booleans
Rotations and shifts relabel bits (a shift brings constant zeros); constants (IV, K)
are linear combinations of the constant wire, and gadgets over two constants fold to a
constant with no constraint.
"""

from __future__ import annotations

from dataclasses import dataclass

from .circuits import LC, ONE, Builder
from .r1cs import R1CS

IV = (
    0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A,
    0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19,
)  # fmt: skip
K = (
    0x428A2F98, 0x71374491, 0xB5C0FBCF, 0xE9B5DBA5, 0x3956C25B, 0x59F111F1, 0x923F82A4,
    0xAB1C5ED5, 0xD807AA98, 0x12835B01, 0x243185BE, 0x550C7DC3, 0x72BE5D74, 0x80DEB1FE,
    0x9BDC06A7, 0xC19BF174, 0xE49B69C1, 0xEFBE4786, 0x0FC19DC6, 0x240CA1CC, 0x2DE92C6F,
    0x4A7484AA, 0x5CB0A9DC, 0x76F988DA, 0x983E5152, 0xA831C66D, 0xB00327C8, 0xBF597FC7,
    0xC6E00BF3, 0xD5A79147, 0x06CA6351, 0x14292967, 0x27B70A85, 0x2E1B2138, 0x4D2C6DFC,
    0x53380D13, 0x650A7354, 0x766A0ABB, 0x81C2C92E, 0x92722C85, 0xA2BFE8A1, 0xA81A664B,
    0xC24B8B70, 0xC76C51A3, 0xD192E819, 0xD6990624, 0xF40E3585, 0x106AA070, 0x19A4C116,
    0x1E376C08, 0x2748774C, 0x34B0BCB5, 0x391C0CB3, 0x4ED8AA4A, 0x5B9CCA4F, 0x682E6FF3,
    0x748F82EE, 0x78A5636F, 0x84C87814, 0x8CC70208, 0x90BEFFFA, 0xA4506CEB, 0xBEF9A3F7,
    0xC67178F2,
)  # fmt: skip
MASK = 0xFFFFFFFF


@dataclass(frozen=True)
class Bit:
    """A boolean value: its linear combination and its value (const: no wire)."""

    lc: LC
    value: int
    const: bool = False


Word = tuple[Bit, ...]  # 32 bits, least significant first


def _const_bit(v: int) -> Bit:
    return Bit(LC.constant(v) if v else LC(()), v, True)


def const_word(v: int) -> Word:
    return tuple(_const_bit((v >> i) & 1) for i in range(32))


def word_value(w: Word) -> int:
    return sum(b.value << i for i, b in enumerate(w))


class Sha256Builder(Builder):
    """A Builder with the boolean gadgets of the module docstring."""

    def bit(self, v: int) -> Bit:
        b = self.private(v)
        self.enforce(ONE - b, b, LC(()), "boolean")
        return Bit(b, v)

    def word(self, v: int) -> Word:
        return tuple(self.bit((v >> i) & 1) for i in range(32))

    def xor(self, x: Bit, y: Bit) -> Bit:
        v = x.value ^ y.value
        if x.const or y.const:  # x ^ 0 = x, x ^ 1 = 1 - x
            c, o = (x, y) if x.const else (y, x)
            return o if not c.value else Bit(ONE - o.lc, v, o.const)
        z = self.private(v)
        self.enforce(x.lc * 2, y.lc, x.lc + y.lc - z, "xor")
        return Bit(z, v)

    def ch(self, e: Bit, f: Bit, g: Bit) -> Bit:
        v = f.value if e.value else g.value
        if e.const and f.const and g.const:
            return _const_bit(v)
        z = self.private(v)
        self.enforce(f.lc - g.lc, e.lc, z - g.lc, "ch")
        return Bit(z, v)

    def maj(self, a: Bit, b: Bit, c: Bit) -> Bit:
        v = (a.value & b.value) ^ (a.value & c.value) ^ (b.value & c.value)
        if a.const and b.const and c.const:
            return _const_bit(v)
        t = self.mul(b.lc, c.lc, "maj.bc")
        z = self.private(v)
        self.enforce(t * 2 - b.lc - c.lc, a.lc, t - z, "maj")
        return Bit(z, v)

    def add(self, *words: Word) -> Word:
        """sum(words) mod 2^32 with one linear constraint (0 · 0 = terms - result)."""
        total = sum(word_value(w) for w in words)
        terms = LC(())
        for w in words:
            for i, b in enumerate(w):
                terms = terms + b.lc * (1 << i)
        out = self.word(total & MASK)
        carry_bits = (len(words) - 1).bit_length()
        carry = [self.bit((total >> (32 + i)) & 1) for i in range(carry_bits)]
        result = LC(())
        for i, b in enumerate((*out, *carry)):
            result = result + b.lc * (1 << i)
        self.enforce(LC(()), LC(()), terms - result, "add mod 2^32")
        return out


def _rotr(w: Word, k: int) -> Word:
    return tuple(w[(i + k) % 32] for i in range(32))


def _shr(w: Word, k: int) -> Word:
    return tuple(w[i + k] if i + k < 32 else _const_bit(0) for i in range(32))


def _xor3(cs: Sha256Builder, x: Word, y: Word, z: Word) -> Word:
    return tuple(cs.xor(cs.xor(a, b), c) for a, b, c in zip(x, y, z, strict=True))


def compress(cs: Sha256Builder, state: list[Word], block: list[Word]) -> list[Word]:
    """One SHA-256 compression of a 16-word block into an 8-word state (FIPS 180-4 6.2.2)."""
    w = list(block)
    for t in range(16, 64):
        s0 = _xor3(cs, _rotr(w[t - 15], 7), _rotr(w[t - 15], 18), _shr(w[t - 15], 3))
        s1 = _xor3(cs, _rotr(w[t - 2], 17), _rotr(w[t - 2], 19), _shr(w[t - 2], 10))
        w.append(cs.add(w[t - 16], s0, w[t - 7], s1))
    a, b, c, d, e, f, g, h = state
    for t in range(64):
        big_s1 = _xor3(cs, _rotr(e, 6), _rotr(e, 11), _rotr(e, 25))
        ch = tuple(cs.ch(*bits) for bits in zip(e, f, g, strict=True))
        big_s0 = _xor3(cs, _rotr(a, 2), _rotr(a, 13), _rotr(a, 22))
        maj = tuple(cs.maj(*bits) for bits in zip(a, b, c, strict=True))
        k = const_word(K[t])
        new_e = cs.add(d, h, big_s1, ch, k, w[t])
        new_a = cs.add(h, big_s1, ch, k, w[t], big_s0, maj)
        a, b, c, d, e, f, g, h = new_a, a, b, c, new_e, e, f, g
    return [cs.add(x, y) for x, y in zip(state, (a, b, c, d, e, f, g, h), strict=True)]


def sha256_chain(blocks: list[bytes]) -> tuple[R1CS, list[int], int]:
    """The compressions of `blocks` (64 bytes each, private bits) chained from the IV (a
    Merkle-Damgard hash without its padding rule); returns (R1CS, witness, digest as an
    int, big-endian words). The digest's first word is the one public input."""
    if not blocks or any(len(b) != 64 for b in blocks):
        raise ValueError("sha256_chain: blocks must be a non-empty list of 64-byte blocks")
    cs = Sha256Builder()
    first = cs.public(0)  # set below, once the digest is known
    state = [const_word(v) for v in IV]
    for raw in blocks:
        block = [cs.word(int.from_bytes(raw[4 * i : 4 * i + 4], "big")) for i in range(16)]
        state = compress(cs, state, block)
    digest = 0
    for word in state:
        digest = (digest << 32) | word_value(word)
    cs._values[first.terms[0][0]] = word_value(state[0])
    packed = LC(())
    for i, b in enumerate(state[0]):
        packed = packed + b.lc * (1 << i)
    cs.assert_equal(packed, first, "digest word 0 is public")
    r1cs, witness = cs.build()
    return r1cs, witness, digest
