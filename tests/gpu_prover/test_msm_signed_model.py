"""A Python model of kernels/msm_signed.cu's index arithmetic, run in CI (no GPU): the
signed recoding, the bucket layout, the balanced accumulation with its boundary slots and
fix-up, the segmented reduction and the Horner combine. The group is the integers mod a
prime (addition for point addition), so the expected value is plain sum s_i p_i mod q."""

from __future__ import annotations

import bisect
import random

import pytest
from cuzk_sim.gpu.msm import LEVEL_FAN_IN, SIGNED_BITS, SignedShape
from cuzk_sim.reference.field import R

Q = 2**61 - 1  # the toy group Z/Q


def window_raw(s: int, bit: int, c: int) -> int:
    return (s >> bit) & ((1 << c) - 1)


def signed_digits(s: int, c: int, nw: int) -> list[tuple[int, int, int]]:
    """(window, magnitude, negative) as the kernel's signed_digits, magnitude 0 skipped."""
    out, carry, half = [], 0, 1 << (c - 1)
    for w in range(nw):
        d = window_raw(s, w * c, c) + carry
        carry = int(d > half)
        mag = (1 << c) - d if carry else d
        if mag:
            out.append((w, mag, carry))
    assert carry == 0, "the top window carried out"
    return out


@pytest.mark.parametrize("c", [4, 5, 11, 13, 16, 20])
def test_signed_digits_recode_every_scalar(c):
    nw = -(-SIGNED_BITS // c)
    rng = random.Random(c)
    for s in [0, 1, R - 1, (R - 1) // 2, 2**254, 2**c - 1, 2 ** (c - 1)] + [
        rng.randrange(R) for _ in range(300)
    ]:
        digits = signed_digits(s, c, nw)
        assert sum((-m if neg else m) << (w * c) for w, m, neg in digits) == s
        assert all(1 <= m <= 1 << (c - 1) for _, m, _ in digits)


def model_msm(
    points: list[int], scalars: list[int], shape: SignedShape, chunk: int, fan: int = LEVEL_FAN_IN
) -> int:
    n, c, g = len(points), shape.c, shape.sets
    nb = shape.buckets
    base = points
    if shape.precomputed:  # table[t n + i] = 2^(t g c) P_i
        base = [(p << (t * g * c)) % Q for t in range(shape.tables) for p in points]
    starts, order = _model_sort(scalars, shape, n)
    buckets: list[int | None] = [None] * nb
    writes = [0] * nb
    items = _model_level0(base, starts, order, nb, chunk, buckets, writes)
    _model_levels(items, nb, fan, buckets, writes)
    # acc_empty
    for b in range(nb):
        if starts[b] == starts[b + 1]:
            buckets[b] = 0
            writes[b] += 1
    assert writes == [1] * nb, "every bucket written exactly once"
    return _model_reduce(buckets, shape)


def _model_sort(scalars: list[int], shape: SignedShape, n: int) -> tuple[list[int], list]:
    """signed_count / signed_scatter: the buckets' starts and the sorted (index, sign)."""
    c, nw, g = shape.c, shape.windows, shape.sets
    per_set, nb = shape.per_set, shape.buckets
    keyed = []
    for i, s in enumerate(scalars):
        for w, mag, neg in signed_digits(s, c, nw):
            keyed.append((((w % g) * per_set) + mag - 1, (w // g) * n + i, neg))
    counts = [0] * nb
    for b, _, _ in keyed:
        counts[b] += 1
    starts = [0]
    for k in counts:
        starts.append(starts[-1] + k)
    cursor, order = list(starts[:nb]), [None] * len(keyed)
    for b, idx, neg in keyed:
        order[cursor[b]] = (idx, neg)
        cursor[b] += 1
    return starts, order


def _model_level0(
    base: list[int],
    starts: list[int],
    order: list,
    nb: int,
    chunk: int,
    buckets: list[int | None],
    writes: list[int],
) -> list[tuple[int, int, bool]]:
    """acc_balanced (level 0): thread t adds entries [t L, (t + 1) L); a bucket wholly inside
    is final; pieces of crossing buckets go to slots 2t (began before) / 2t + 1 (continues)."""
    total = starts[nb]
    threads = -(-max(1, total) // chunk)
    items: list[tuple[int, int, bool]] = []  # (value, key, valid) per slot
    for t in range(threads):
        lo, hi = t * chunk, min(t * chunk + chunk, total)
        if lo >= hi:
            items += [(0, nb, False), (0, nb, False)]
            continue
        b = bisect.bisect_right(starts, lo) - 1  # last b with starts[b] <= lo (binary search)
        b_first, bstart, bend = b, starts[b], starts[b + 1]
        head, tail = (0, False), (0, False)
        acc, fresh = 0, True
        for j in range(lo, hi):
            idx, neg = order[j]
            p = -base[idx] % Q if neg else base[idx]
            acc = p if fresh else (acc + p) % Q
            fresh = False
            if j + 1 == bend or j + 1 == hi:
                if bstart < lo:
                    head = (acc, True)
                elif bend > hi:
                    tail = (acc, True)
                else:
                    buckets[b] = acc
                    writes[b] += 1
                fresh = True
                if j + 1 < hi:
                    b += 1
                    bstart, bend = starts[b], starts[b + 1]
                    while bend <= j + 1:
                        b += 1
                        bstart, bend = starts[b], starts[b + 1]
        items += [(head[0], b_first, head[1]), (tail[0], b, tail[1])]
    return items


def _model_levels(
    items: list[tuple[int, int, bool]],
    nb: int,
    fan: int,
    buckets: list[int | None],
    writes: list[int],
) -> None:
    """acc_level: the same over the slots (fan-in `fan`), until one thread holds them all."""
    while True:
        keys = [k for _, k, _ in items]
        assert keys == sorted(keys), "slot keys must stay monotone"
        n_items = len(items)
        level_threads = -(-n_items // fan)
        out: list[tuple[int, int, bool]] = []
        for u in range(level_threads):
            lo, hi = u * fan, min(u * fan + fan, n_items)
            kfirst, klast = keys[lo], keys[hi - 1]
            before = lo > 0 and keys[lo - 1] == kfirst
            after = hi < n_items and keys[hi] == klast
            head, tail = (0, False), (0, False)
            acc, anyv = 0, False
            for q in range(lo, hi):
                v, k, ok = items[q]
                if ok:
                    acc, anyv = (acc + v) % Q, True
                if q + 1 == hi or keys[q + 1] != k:
                    if k == kfirst and before:
                        head = (acc, anyv)
                    elif k == klast and after:
                        tail = (acc, anyv)
                    elif anyv and k < nb:
                        buckets[k] = acc
                        writes[k] += 1
                    acc, anyv = 0, False
            out += [(head[0], kfirst, head[1]), (tail[0], klast, tail[1])]
        if level_threads == 1:
            assert not any(ok for _, _, ok in out)
            break
        items = out


def _model_reduce(buckets: list, shape: SignedShape) -> int:
    """set_reduce + tree: per set, sum_k (k + 1) B_k by segments; then the Horner over the
    sets with c-bit shifts."""
    c, g, per_set = shape.c, shape.sets, shape.per_set
    segs = shape.segments
    seg_len = per_set // segs
    sums = []
    for j in range(g):
        total_j = 0
        for s in range(segs):
            lo = s * seg_len
            run = acc = 0
            for k in range(lo + seg_len - 1, lo - 1, -1):
                run = (run + buckets[j * per_set + k]) % Q
                acc = (acc + run) % Q
            total_j = (total_j + acc + lo * run) % Q
        sums.append(total_j)
    # combine: Horner over the sets with c-bit shifts
    acc = sums[g - 1]
    for j in range(g - 2, -1, -1):
        acc = ((acc << c) + sums[j]) % Q
    return acc


@pytest.mark.parametrize("skew", ["random", "ones", "few values"])
@pytest.mark.parametrize("precomputed", [False, True])
@pytest.mark.parametrize(
    "n,chunk,fan", [(1, 1, 4), (7, 3, 4), (50, None, 16), (50, 5, 5), (200, 8, 4)]
)
def test_model_of_the_signed_balanced_msm_equals_the_sum(n, chunk, fan, precomputed, skew):
    """Random scalars, and skewed ones (witnesses are mostly 0/1): buckets with thousands of
    entries cross many threads, so the pieces go through several levels."""
    rng = random.Random(n * 7 + (chunk or 0) + precomputed)
    points = [rng.randrange(Q) for _ in range(n)]
    if skew == "random":
        scalars = [rng.randrange(R) for _ in range(n)]
    elif skew == "ones":
        scalars = [rng.choice([0, 1, 1, 1, R - 1]) for _ in range(n)]
    else:
        scalars = [rng.choice([3, 2**200, R - 1]) for _ in range(n)]
    scalars[0] = R - 1
    if n > 2:
        scalars[1] = 0
        points[2] = points[0]  # a repeated point
    shape = SignedShape.of("g1", n, precomputed=precomputed)
    got = model_msm(points, scalars, shape, chunk or shape.acc_chunk, fan)
    assert got == sum(s * p for s, p in zip(scalars, points, strict=True)) % Q


def test_signed_shape_by_hand():
    # 2^20 points: c = 16, 16 windows (16 x 16 = 256 bits), 2^15 buckets per window;
    # 2^24 entries over at most 2^18 threads -> 64 points per thread
    s = SignedShape.of("g1", 1 << 20)
    assert (s.c, s.windows, s.sets, s.buckets) == (16, 16, 16, 16 << 15)
    assert (s.acc_chunk, s.acc_threads) == (64, 1 << 18)
    assert s.scratch()["slots"] == 4 * 2 * (1 << 18) * 36
    # precomputed: c = 20, 13 windows (260 bits) -> 13 tables of 2^20 G1 points, one set
    p = SignedShape.of("g1", 1 << 20, precomputed=True)
    assert (p.c, p.windows, p.sets, p.buckets) == (20, 13, 1, 1 << 19)
    assert p.table_bytes() == 13 * (1 << 20) * 96


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_jacobian_result_made_affine_on_the_host_matches_py_ecc(group):
    """The signed MSM returns X, Y, Z (Montgomery); jacobian_to_affine must give the affine
    limbs of X / Z^2, Y / Z^3 (py_ecc's normalize as the oracle), and (0, 0) for Z = 0."""
    import py_ecc.optimized_bls12_381 as bls
    from cuzk_sim.gpu import encoding
    from cuzk_sim.gpu.msm import jacobian_to_affine
    from cuzk_sim.reference.field import Q

    rng = random.Random(5)
    g1 = group == "g1"
    gen, to_limbs = (bls.G1, encoding.g1_to_limbs) if g1 else (bls.G2, encoding.g2_to_limbs)

    def coords(e):
        return [int(e.n)] if g1 else [int(c) for c in e.coeffs]

    for _ in range(3):
        P = bls.multiply(gen, rng.randrange(1, R))
        x, y = bls.normalize(P)
        z = bls.FQ(rng.randrange(1, Q)) if g1 else bls.FQ2([rng.randrange(Q), rng.randrange(Q)])
        jac = coords(x * z * z) + coords(y * z * z * z) + coords(z)
        words = encoding.ints_to_limbs([c * encoding.FQ_MONT % Q for c in jac], 12).reshape(-1)
        assert (jacobian_to_affine(group, words) == to_limbs([P]).reshape(-1)).all()
    one = encoding.FQ_MONT
    inf = [one, one, 0] if g1 else [one, 0, one, 0, 0, 0]
    assert not jacobian_to_affine(group, encoding.ints_to_limbs(inf, 12).reshape(-1)).any()
