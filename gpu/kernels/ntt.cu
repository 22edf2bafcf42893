// Radix-2 decimation-in-time NTT over Fr (Montgomery limbs, 8 u32 per element).
// The caller bit-reverses (`fr_bitrev_tiled` from 2^8 up, with the transform's input factor
// applied on the way; `fr_bitrev` below, or for the baseline), then runs the log n stages in
// groups, one launch per group (three passes over memory at 2^24): `fr_ntt_pass` (the
// default: groups of at most 9 stages, twiddles from a per-pass table or the two-level
// tables computed up front, the product inlined; 5.84 ms at 2^24 on the H200) or
// `fr_ntt_group_tw` (the default before it, groups of at most 10: the NTT family's baseline,
// kept for side-by-side benchmarks). gpu/ntt.py ntt_launches makes the launches.
// Twiddle w^k = hi[k >> lo_bits] * lo[k & (2^lo_bits - 1)]: two tables of ~sqrt(n) entries.
// Retired (issue 29; each measured slower on the H200, docs/benchmarks.md and its history):
// fr_ntt_group, fr_ntt_group_x2, fr_ntt_reg8 (reg4, reg2, fr_bitrev_scale), fr_ntt_pass_c2
// (two columns per block: the kernel keeps its `cl` argument, gpu/ntt.py passes 0), and the
// switches NTT_TW_INLINE, NTT_REG_DIRECT_LOAD, NTT_PASS_FR_MUL (fr_mul.cuh), NTT_PASS_PLANES,
// NTT_PASS_TABLE=0, NTT_PASS_TW_STAGE.
#include "field.cuh"


__device__ __forceinline__ Fr twiddle(const u32* hi, const u32* lo, int lo_bits, long long k) {
    long long mask = (1LL << lo_bits) - 1;
    return Fr::load(hi + (k >> lo_bits) * 8) * Fr::load(lo + (k & mask) * 8);
}

extern "C" __global__ void fr_bitrev(u32* a, long long n, int log_n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        long long j = (long long)(__brevll((unsigned long long)i) >> (64 - log_n));
        if (i < j) {
            Fr x = Fr::load(a + i * 8);
            Fr y = Fr::load(a + j * 8);
            y.store(a + i * 8);
            x.store(a + j * 8);
        }
    }
}

// Stages st .. st + k - 1 (butterfly spans 2^st .. 2^(st+k-1)) in one launch. These stages
// only mix elements whose indices agree outside bits [st, st + k): each block loads one such
// group of 2^k elements (stride 2^st; a 32-byte element is one memory sector, so strided
// loads waste no bandwidth) into shared memory, runs the k stages there, and writes back.
// blockDim.x = 2^(k-1), gridDim.x = n / 2^k. Each stage's twiddles are computed once per
// block into shared memory (a stage of span h needs h distinct twiddles): 2^k - 1 twiddle
// products per block; dynamic shared memory of 3 2^(k-1) elements (sized by k: more blocks
// per SM for small groups).
extern "C" __global__ void fr_ntt_group_tw(u32* a, const u32* hi, const u32* lo, int lo_bits,
                                           int log_n, int st, int k) {
    extern __shared__ Fr dyn[];
    Fr* s = dyn;                // 2^k elements
    Fr* tw = dyn + (1 << k);  // 2^(k-1) twiddles
    long long b = blockIdx.x;
    long long low = b & ((1LL << st) - 1);
    long long base = ((b >> st) << (st + k)) | low;
    int t = threadIdx.x, half_block = 1 << (k - 1);
    s[t] = Fr::load(a + (base + ((long long)t << st)) * 8);
    s[t + half_block] = Fr::load(a + (base + ((long long)(t + half_block) << st)) * 8);
    for (int sl = 0; sl < k; sl++) {
        int h = 1 << sl;
        if (t < h)
            tw[t] = twiddle(hi, lo, lo_bits, (low + ((long long)t << st)) << (log_n - st - sl - 1));
        __syncthreads();  // tw written; the previous stage's butterflies done
        int kk = t & (h - 1);
        int i = ((t >> sl) << (sl + 1)) + kk;
        Fr u = s[i];
        Fr v = s[i + h] * tw[kk];
        s[i] = u + v;
        s[i + h] = u - v;
        __syncthreads();
    }
    s[t].store(a + (base + ((long long)t << st)) * 8);
    s[t + half_block].store(a + (base + ((long long)(t + half_block) << st)) * 8);
}

// x^e from the two tables; no product where e's high or low part is zero
__device__ __forceinline__ Fr twiddle_fast(const u32* hi, const u32* lo, int lo_bits,
                                           long long e) {
    long long mask = (1LL << lo_bits) - 1, h = e >> lo_bits, l = e & mask;
    if (l == 0) return Fr::load(hi + h * 8);
    if (h == 0) return Fr::load(lo + l * 8);
    return Fr::load(hi + h * 8) * Fr::load(lo + l * 8);
}

template <int SLOTS>
__device__ __forceinline__ void slot_store(u32* s, int slot, const Fr& x) {
#pragma unroll
    for (int l = 0; l < 8; l++) s[l * SLOTS + slot] = x.v[l];
}

template <int SLOTS>
__device__ __forceinline__ Fr slot_load(const u32* s, int slot) {
    Fr x;
#pragma unroll
    for (int l = 0; l < 8; l++) x.v[l] = s[l * SLOTS + slot];
    return x;
}

__device__ __forceinline__ Fr load_vec(const u32* p) {
    uint4 x = reinterpret_cast<const uint4*>(p)[0], y = reinterpret_cast<const uint4*>(p)[1];
    Fr r;
    r.v[0] = x.x, r.v[1] = x.y, r.v[2] = x.z, r.v[3] = x.w;
    r.v[4] = y.x, r.v[5] = y.y, r.v[6] = y.z, r.v[7] = y.w;
    return r;
}

__device__ __forceinline__ void store_vec(u32* p, const Fr& r) {
    reinterpret_cast<uint4*>(p)[0] = make_uint4(r.v[0], r.v[1], r.v[2], r.v[3]);
    reinterpret_cast<uint4*>(p)[1] = make_uint4(r.v[4], r.v[5], r.v[6], r.v[7]);
}

// ---------------------------------------------------------------------------------------
// fr_ntt_pass: stages st .. st + k - 1 (k <= PASS_LOG = 9) of the same groups as
// fr_ntt_group_tw (a block holds the 2^k elements base + j 2^st of 2^cl adjacent groups;
// gpu/ntt.py passes cl = 0 since fr_ntt_pass_c2, cl = 1, was retired; blockDim.x =
// 2^(k-1+cl), one butterfly per thread and stage, gridDim.x = n / 2^(k+cl)), with
//  - every twiddle of the block (stage sl, kk < 2^sl: slot 2^sl + kk, 2^k - 1 of them)
//    computed up front behind one __syncthreads (fr_ntt_group_tw: 2^sl threads work, then a
//    __syncthreads, in every stage);
//  - no product for a twiddle of a pass before the last (st + k <= pt_log): each exponent e
//    is a multiple of 2^(log_n - pt_log) and pt[e >> (log_n - pt_log)] = w^e (the per-pass
//    table, 2^(pt_log - 1) entries; gpu/ntt.py pass_log); the last pass's one product each
//    (as twiddle_fast: none where a part is zero); and no product at global stage 0 (w^0 = 1);
//  - the product inlined (fr_ntt_group_tw calls field.cuh's out-of-line product), field.cuh's
//    mul_inline; 128-bit global loads and stores;
//  - elements and twiddles in shared memory as Fr arrays.
// Dynamic shared memory: 2 2^(k+cl) elements (the elements and as many twiddle slots, slots
// 0 .. 2^cl - 1 unused).

__device__ __forceinline__ Fr pass_get(const uint4* p, int count, int i) {
    return reinterpret_cast<const Fr*>(p)[i];
}
__device__ __forceinline__ void pass_put(uint4* p, int count, int i, const Fr& r) {
    reinterpret_cast<Fr*>(p)[i] = r;
}

// twiddle slot `slot` of a block (e = slot >> cl = 2^sl + kk, column slot mod 2^cl): from the
// per-pass table (`table`) or the two-level tables (twiddle_fast with the product inlined)
__device__ __forceinline__ Fr pass_twiddle(int slot, int cl, long long low, int st, int log_n,
                                           bool table, const u32* pt, int pt_log,
                                           const u32* hi, const u32* lo, int lo_bits) {
    const int e = slot >> cl, sl = 31 - __clz(e), kk = e - (1 << sl);
    const long long ex = (low + (slot & ((1 << cl) - 1)) + ((long long)kk << st))
                         << (log_n - st - sl - 1);
    if (table) return load_vec(pt + (ex >> (log_n - pt_log)) * 8);
    const long long eh = ex >> lo_bits, el = ex & ((1LL << lo_bits) - 1);
    if (el == 0) return load_vec(hi + eh * 8);
    if (eh == 0) return load_vec(lo + el * 8);
    return mul_inline(load_vec(hi + eh * 8), load_vec(lo + el * 8));
}

extern "C" __global__ void __launch_bounds__(256)
    fr_ntt_pass(u32* a, const u32* hi, const u32* lo, int lo_bits, int log_n, int st, int k,
                const u32* pt, int pt_log, int cl) {
    extern __shared__ uint4 dyn_pass[];
    // 2^cl adjacent columns per block (cl <= st): element (row j, column c) of the block is
    // a[base + c + j 2^st], slot j 2^cl + c (a warp's lanes read 2^cl 32-byte elements in a
    // row: 64-byte runs for cl = 1)
    const int count = 1 << (k + cl), half = count >> 1, t = threadIdx.x;
    const int cmask = (1 << cl) - 1, c = t & cmask, tb = t >> cl;
    uint4* s = dyn_pass;              // 2^(k + cl) elements (2 2^(k + cl) uint4)
    uint4* tw = dyn_pass + 2 * count;  // 2^(k + cl) twiddle slots (2 2^(k + cl) uint4)
    const long long b = (long long)blockIdx.x << cl;
    const long long low = b & ((1LL << st) - 1);
    const long long base = ((b >> st) << (st + k)) | low;
#define PASS_AT(slot) (base + ((slot) & cmask) + ((long long)((slot) >> cl) << st))
    const Fr x0 = load_vec(a + PASS_AT(t) * 8);
    const Fr x1 = load_vec(a + PASS_AT(t + half) * 8);
    pass_put(s, count, t, x0);
    pass_put(s, count, t + half, x1);
    const bool table = st + k <= pt_log;
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int slot = t + r * half;
        if (slot >> cl == 0) continue;
        pass_put(tw, count, slot,
                 pass_twiddle(slot, cl, low, st, log_n, table, pt, pt_log, hi, lo, lo_bits));
    }
    __syncthreads();  // elements and twiddles written
    for (int sl = 0; sl < k; sl++) {
        const int h = 1 << sl, kk = tb & (h - 1);
        const int i = ((((tb >> sl) << (sl + 1)) + kk) << cl) | c, j = i + (h << cl);
        const Fr u = pass_get(s, count, i);
        Fr v = pass_get(s, count, j);
        if (st + sl != 0) v = mul_inline(v, pass_get(tw, count, ((h + kk) << cl) | c));
        pass_put(s, count, i, u + v);
        pass_put(s, count, j, u - v);
        __syncthreads();
    }
    store_vec(a + PASS_AT(t) * 8, pass_get(s, count, t));
    store_vec(a + PASS_AT(t + half) * 8, pass_get(s, count, t + half));
#undef PASS_AT
}

// The bit reversal by tiles, for log_n >= 8: index i = (h, M, l) (4, log_n - 8 and 4 bits)
// goes to rev(i) = (rev l, rev M, rev h), so tile M = {(h, M, l)} and tile rev M swap
// whole: the block of M (<= rev M) loads both (rows of 16 elements: 512-byte runs, not the
// 32-byte scattered sectors of fr_bitrev), transposes them through shared memory (limb-
// major, slot P ^ (P >> 5): the scattered writes hit 32 banks) and stores each into the
// other's place. 256 threads, gridDim.x = 2^(log_n - 8). The elements are scaled on the way
// (the coset shift and 1/n of the transforms folded into the pass that moves every element
// anyway): f(j) = ps[0] (mode bit 1) times x^j from the power tables phi, plo (mode bit 2).
extern "C" __global__ void __launch_bounds__(256)
    fr_bitrev_tiled(u32* a, int log_n, const u32* phi, const u32* plo, int lo_bits,
                    const u32* ps, int mode) {
    __shared__ u32 sa[8 * 256], sb[8 * 256];
    const int m = log_n - 8;
    const long long M = blockIdx.x;
    const long long Mr = m ? (long long)(__brevll((unsigned long long)M) >> (64 - m)) : 0;
    if (Mr < M) return;
    const int t = threadIdx.x, h = t >> 4, l = t & 15;
    const int P = ((__brev(l) >> 28) << 4) | (__brev(h) >> 28);
    const long long ia = ((long long)h << (m + 4)) | (M << 4) | l;
    const long long ib = ((long long)h << (m + 4)) | (Mr << 4) | l;
    Fr x = load_vec(a + ia * 8), y = load_vec(a + ib * 8);
    if (mode & 2) {
        x = x * twiddle_fast(phi, plo, lo_bits, ia);
        y = y * twiddle_fast(phi, plo, lo_bits, ib);
    }
    if (mode & 1) {
        const Fr c = Fr::load(ps);
        x = x * c;
        y = y * c;
    }
    slot_store<256>(sa, P ^ (P >> 5), x);  // bound for (rev l, Mr, rev h)
    slot_store<256>(sb, P ^ (P >> 5), y);  // bound for (rev l, M, rev h)
    __syncthreads();
    store_vec(a + ib * 8, slot_load<256>(sa, t ^ (t >> 5)));
    if (Mr != M) store_vec(a + ia * 8, slot_load<256>(sb, t ^ (t >> 5)));
}

// The Fr product's throughput: each thread runs 4 independent chains x_c <- x_c y of
// `iters` products (4 iters products per thread) and stores the chains' product, so that
// nothing is optimised away. gpu_bench.py times it for the NTT's roofline.
extern "C" __global__ void fr_mul_rate(u32* out, const u32* in, int iters) {
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    Fr y = Fr::load(in + (t & 1023) * 8);
    Fr x0 = Fr::load(in + ((t + 1) & 1023) * 8), x1 = Fr::load(in + ((t + 2) & 1023) * 8);
    Fr x2 = Fr::load(in + ((t + 3) & 1023) * 8), x3 = Fr::load(in + ((t + 4) & 1023) * 8);
    for (int i = 0; i < iters; i++) {
        x0 = mul_inline(x0, y);
        x1 = mul_inline(x1, y);
        x2 = mul_inline(x2, y);
        x3 = mul_inline(x3, y);
    }
    (mul_inline(mul_inline(x0, x1), mul_inline(x2, x3))).store(out + t * 8);
}
