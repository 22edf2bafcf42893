// Level 0 of the signed MSM's bucket accumulation with affine batch additions (Montgomery's
// trick), ACC_AFFINE=1 in msm_signed.cu: the same contract as acc_balanced (thread t sums the
// sorted entries [t L, (t + 1) L); whole buckets to `buckets`, the pieces of buckets that
// cross its range to slots 2t / 2t + 1), computed so:
// - the range goes in batches of up to B entries; a batch's points are gathered (negated for
//   a negative digit) into the thread's scratch A (B affine points);
// - passes p = 1, 2, ... pair, inside each run of one bucket [s, e) of the batch (offsets),
//   every i in (s, e) with i = h mod 2h (h = 2^(p-1)) with pred(i) = max(s, i - h):
//   A[pred] = A[pred] + A[i], all pairs of a pass disjoint. A pass's pairs share one
//   inversion: forward, P[k] = d_0 ... d_(k-1) (the denominators); one inverse; backward,
//   1 / d_k = inv P[k], inv = inv d_k. An affine addition: 6 products (3 of the trick, lambda,
//   lambda^2, lambda (x1 - x3)) against 11 for a mixed Jacobian one; a pass runs only while
//   it has at least `min_pairs` pairs (the inversion must pay);
// - after P passes, position o holds the sum of [o, next representative) for o = the run's
//   start or o = 0 mod 2^P; the run's representatives are summed in Jacobian (mixed
//   additions) exactly as acc_balanced sums points.
// Special pairs (infinity, P + P, P + (-P)) take denominator 1 and are resolved in the
// backward step, so the batch product never holds a zero.
// Scratch per launched thread g (grid-stride over t): A = B x 2W words, then P = B / 2 x W.
// ACC_AFFINE_INV (default 2): the batch's inverse by 2 divsteps (safegcd, inverse_safegcd),
// 1 Kaliski's binary inverse (inverse_binary), 0 Fermat (inverse).
#pragma once
#include "curve.cuh"
#ifndef ACC_AFFINE_INV
#define ACC_AFFINE_INV 2
#endif

template <class F>
__device__ __forceinline__ F batch_inverse_of(const F& a) {
#if ACC_AFFINE_INV == 2
    return inverse_safegcd(a);
#elif ACC_AFFINE_INV == 1
    return inverse_binary(a);
#else
    return inverse(a);
#endif
}

// Plain (not read-only-cache) 16-byte loads / stores of scratch written by this kernel.
template <class F>
__device__ __forceinline__ F scratch_load(const u32* p) {
    const int W = sizeof(F) / 4;
    u32 w[W];
#pragma unroll
    for (int k = 0; k < W / 4; k++) {
        uint4 v = reinterpret_cast<const uint4*>(p)[k];
        w[4 * k] = v.x;
        w[4 * k + 1] = v.y;
        w[4 * k + 2] = v.z;
        w[4 * k + 3] = v.w;
    }
    return F::load(w);
}
template <class F>
__device__ __forceinline__ void scratch_store(u32* p, const F& a) {
    const int W = sizeof(F) / 4;
    u32 w[W];
    a.store(w);
#pragma unroll
    for (int k = 0; k < W / 4; k++)
        reinterpret_cast<uint4*>(p)[k] =
            make_uint4(w[4 * k], w[4 * k + 1], w[4 * k + 2], w[4 * k + 3]);
}

template <class F>
__device__ __forceinline__ Affine<F> scratch_point(const u32* p) {
    const int W = sizeof(F) / 4;
    return {scratch_load<F>(p), scratch_load<F>(p + W)};
}

// Kinds of a pair (p1 = A[pred], p2 = A[i]) and its denominator (1 for the special kinds).
enum PairKind { PAIR_ADD = 0, PAIR_DBL = 1, PAIR_FIRST = 2, PAIR_SECOND = 3, PAIR_INF = 4 };

template <class F>
__device__ __forceinline__ F pair_den(const Affine<F>& p1, const Affine<F>& p2, int& kind) {
    if (p2.is_inf()) kind = PAIR_FIRST;
    else if (p1.is_inf()) kind = PAIR_SECOND;
    else if (!(p1.x == p2.x)) kind = PAIR_ADD;
    else if (p1.y == p2.y && !p1.y.is_zero()) kind = PAIR_DBL;
    else kind = PAIR_INF;  // p2 = -p1 (or a 2-torsion point, not in these groups)
    if (kind == PAIR_ADD) return p2.x - p1.x;
    if (kind == PAIR_DBL) return p1.y + p1.y;
    return F::one();
}

// p1 + p2 given inv = 1 / pair_den(p1, p2)
template <class F>
__device__ __noinline__ Affine<F> pair_sum(const Affine<F> p1, const Affine<F> p2, const F inv,
                                           int kind) {
    if (kind == PAIR_FIRST) return p1;
    if (kind == PAIR_SECOND) return p2;
    if (kind == PAIR_INF) return {F::zero(), F::zero()};
    F num;
    if (kind == PAIR_ADD) {
        num = p2.y - p1.y;
    } else {
        F xx = sqr(p1.x);
        num = xx + xx + xx;
    }
    F lambda = num * inv;
    F x3 = sqr(lambda) - p1.x - p2.x;
    F y3 = lambda * (p1.x - x3) - p1.y;
    return {x3, y3};
}

// The runs of one bucket in [bs, be), first to last (or last to first), as offsets [s, e)
// from bs; b0: the bucket holding bs; b_last: the one holding be - 1.
template <class Fn>
__device__ __forceinline__ void for_runs(const u32* starts, long long bs, long long be,
                                         long long b0, Fn f) {
    long long s = bs, bb = b0;
    while (s < be) {
        long long e = min((long long)starts[bb + 1], be);
        f((int)(s - bs), (int)(e - bs), bb);
        s = e;
        while (s < be && (long long)starts[bb + 1] <= s) bb++;
    }
}
template <class Fn>
__device__ __forceinline__ void for_runs_reverse(const u32* starts, long long bs, long long be,
                                                 long long b_last, Fn f) {
    long long e = be, bb = b_last;
    while (e > bs) {
        long long s = max((long long)starts[bb], bs);
        f((int)(s - bs), (int)(e - bs));
        e = s;
        while (e > bs && (long long)starts[bb] >= e) bb--;
    }
}

// First i in (s, e) with i = h mod 2h (or e if none).
__device__ __forceinline__ int first_pair(int s, int e, int h) {
    int i = ((s + h) / (2 * h)) * (2 * h) + h;
    if (i <= s) i += 2 * h;
    return i < e ? i : e;
}

template <class F>
__device__ void acc_affine(const u32* points, const u32* order, const u32* starts,
                           long long nbuckets, long long L, u32* buckets, u32* slots, u32* kv,
                           long long nthreads, u32* scratch, int B, int min_pairs) {
    const int W = sizeof(F) / 4;
    const long long total = starts[nbuckets];
    const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    u32* A = scratch + g * ((long long)B * 2 * W + (long long)(B / 2) * W);
    u32* P = A + (long long)B * 2 * W;
    for (long long t = g; t < nthreads; t += (long long)blockDim.x * gridDim.x) {
        long long lo = t * L, hi = min(lo + L, total);
        Jacobian<F> head = Jacobian<F>::inf(), tail = Jacobian<F>::inf();
        if (lo >= hi) {
            put_slot<F>(slots, kv, 2 * t, (u32)nbuckets, false, head);
            put_slot<F>(slots, kv, 2 * t + 1, (u32)nbuckets, false, tail);
            continue;
        }
        long long a = 0, z = nbuckets;  // last b with starts[b] <= lo
        while (z - a > 1) {
            long long mid = (a + z) >> 1;
            if ((long long)starts[mid] <= lo) a = mid;
            else z = mid;
        }
        long long b = a, b_first = a;
        long long bstart = starts[b], bend = starts[b + 1];
        bool head_ok = false, tail_ok = false;
        Jacobian<F> acc = Jacobian<F>::inf();
        bool fresh = true;
        for (long long bs = lo; bs < hi; bs += B) {
            const long long be = min(bs + B, hi);
            for (int o = 0; o < (int)(be - bs); o++) {
                u32 e = order[bs + o];
                Affine<F> p = load_affine_vec<F>(points + (u64)(e & 0x7fffffffu) * 2 * W);
                if (e >> 31) p.y = -p.y;
                scratch_store(A + o * 2 * W, p.x);
                scratch_store(A + o * 2 * W + W, p.y);
            }
            int passes = 0;
            for (int h = 1; h < (int)(be - bs); h *= 2) {
                int pairs = 0;
                long long b_last = b;
                for_runs(starts, bs, be, b, [&](int s, int e, long long bb) {
                    int i = first_pair(s, e, h);
                    if (i < e) pairs += (e - 1 - i) / (2 * h) + 1;
                    b_last = bb;
                });
                if (pairs < min_pairs) break;
                F prod = F::one();
                int k = 0;
                for_runs(starts, bs, be, b, [&](int s, int e, long long) {
                    for (int i = first_pair(s, e, h); i < e; i += 2 * h) {
                        int q = max(s, i - h);
                        // the x's decide, but for x = 0 (infinity is (0, 0)) or equal x's
                        F x1 = scratch_load<F>(A + q * 2 * W), x2 = scratch_load<F>(A + i * 2 * W);
                        F d = x2 - x1;
                        if (x1.is_zero() || x2.is_zero() || d.is_zero()) {
                            Affine<F> p1 = {x1, scratch_load<F>(A + q * 2 * W + W)};
                            Affine<F> p2 = {x2, scratch_load<F>(A + i * 2 * W + W)};
                            int kind;
                            d = pair_den(p1, p2, kind);
                        }
                        scratch_store(P + k * W, prod);
                        prod = k == 0 ? d : prod * d;
                        k++;
                    }
                });
                F inv = batch_inverse_of(prod);
                for_runs_reverse(starts, bs, be, b_last, [&](int s, int e) {
                    int first = first_pair(s, e, h);
                    if (first >= e) return;
                    for (int i = first + ((e - 1 - first) / (2 * h)) * 2 * h; i >= first;
                         i -= 2 * h) {
                        int q = max(s, i - h);
                        Affine<F> p1 = scratch_point<F>(A + q * 2 * W);
                        Affine<F> p2 = scratch_point<F>(A + i * 2 * W);
                        int kind;
                        F d = pair_den(p1, p2, kind);
                        k--;
                        F di = k == 0 ? inv : inv * scratch_load<F>(P + k * W);
                        inv = inv * d;
                        Affine<F> r = pair_sum(p1, p2, di, kind);
                        scratch_store(A + q * 2 * W, r.x);
                        scratch_store(A + q * 2 * W + W, r.y);
                    }
                });
                passes++;
            }
            const int mask = (1 << passes) - 1;
            for (long long j = bs; j < be; j++) {
                int o = (int)(j - bs);
                if ((o & mask) == 0 || j == max(bstart, bs)) {
                    Affine<F> p = scratch_point<F>(A + o * 2 * W);
                    acc = fresh ? Jacobian<F>::from_affine(p) : add_mixed(acc, p);
                    fresh = false;
                }
                if (j + 1 == bend || j + 1 == hi) {
                    if (bstart < lo) {
                        head = acc;
                        head_ok = true;
                    } else if (bend > hi) {
                        tail = acc;
                        tail_ok = true;
                    } else {
                        store_jacobian(buckets + b * 3 * W, acc);
                    }
                    fresh = true;
                    if (j + 1 < hi) {
                        do {
                            b++;
                            bstart = starts[b];
                            bend = starts[b + 1];
                        } while (bend <= j + 1);
                    }
                }
            }
        }
        put_slot<F>(slots, kv, 2 * t, (u32)b_first, head_ok, head);
        put_slot<F>(slots, kv, 2 * t + 1, (u32)b, tail_ok, tail);
    }
}
