// Radix-2 decimation-in-time NTT over Fr (Montgomery limbs, 8 u32 per element).
// The caller bit-reverses (`fr_bitrev_tiled` from 2^8 up, with the transform's input factor
// applied on the way; `fr_bitrev` / `fr_bitrev_scale` below), then runs the log n stages in
// groups, one launch per group (three passes over memory at 2^24): `fr_ntt_pass` (the
// default: groups of at most 9 stages, twiddles from a per-pass table or the two-level
// tables computed up front, the product inlined), `fr_ntt_group_tw` (the default
// before it; groups of at most 10) or `fr_ntt_group` (the earlier kernel), or groups of at
// most 8 in registers (`fr_ntt_reg8`, opt-in). gpu/ntt.py ntt_launches makes the launches.
// Twiddle w^k = hi[k >> lo_bits] * lo[k & (2^lo_bits - 1)]: two tables of ~sqrt(n) entries.
// Macros: NTT_TW_INLINE (default 0) 1 inlines the butterfly's product in fr_ntt_group_tw.
// NTT_REG_DIRECT_LOAD (default 0) 1: fr_ntt_reg8 loads each thread's round-0 elements
// straight from memory (lanes 8 rows apart) instead of consecutive rows per warp staged
// through shared memory.
// fr_ntt_pass's switches (each measured side by side on the H200, 2^24, default 5.84 ms:
// docs/benchmarks.md "NTT passes"): NTT_PASS_FR_MUL (default 0) 1 multiplies with fr_mul
// (fr_mul.cuh, r's limbs folded in; 5.93 ms), 0 with field.cuh's mul_inline.
// NTT_PASS_PLANES (default 0) 1 keeps a block's elements and twiddles in shared memory as
// two planes of 16-byte halves, swizzled (conflict-free 128-bit accesses; 5.93 ms: the index
// arithmetic costs more than the conflicts did), 0 as arrays of 32-byte Fr (2-way and worse
// bank conflicts). NTT_PASS_TABLE (default 1) 1 takes the twiddles of the passes before the
// last from the per-pass table (no product); 0 computes them from the two-level tables
// (twiddle_fast: a product where both parts are nonzero; 6.12 ms). NTT_PASS_TW_STAGE
// (default 0) 1 computes each stage's twiddles just before it, behind a barrier per stage
// (as fr_ntt_group_tw; 6.22 ms), instead of all of them up front behind one. The kernel
// `fr_ntt_pass_c2` of gpu/ntt.py is fr_ntt_pass with cl = 1 after the first pass (6.00 ms).
#include "fr_mul.cuh"
#ifndef NTT_TW_INLINE
#define NTT_TW_INLINE 0
#endif
#ifndef NTT_REG_DIRECT_LOAD
#define NTT_REG_DIRECT_LOAD 0
#endif
#ifndef NTT_PASS_FR_MUL
#define NTT_PASS_FR_MUL 0
#endif
#ifndef NTT_PASS_PLANES
#define NTT_PASS_PLANES 0
#endif
#ifndef NTT_PASS_TW_STAGE
#define NTT_PASS_TW_STAGE 0
#endif
#ifndef NTT_PASS_TABLE
#define NTT_PASS_TABLE 1
#endif

#define BLOCK_LOG 10  // at most 1024 elements (32 KiB) per block in fr_ntt_group

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
// blockDim.x = 2^(k-1), gridDim.x = n / 2^k.
extern "C" __global__ void fr_ntt_group(u32* a, const u32* hi, const u32* lo, int lo_bits,
                                        int log_n, int st, int k) {
    __shared__ Fr s[1 << BLOCK_LOG];
    long long b = blockIdx.x;
    long long low = b & ((1LL << st) - 1);
    long long base = ((b >> st) << (st + k)) | low;
    int t = threadIdx.x, half_block = 1 << (k - 1);
    s[t] = Fr::load(a + (base + ((long long)t << st)) * 8);
    s[t + half_block] = Fr::load(a + (base + ((long long)(t + half_block) << st)) * 8);
    __syncthreads();
    for (int sl = 0; sl < k; sl++) {
        int h = 1 << sl;
        int kk = t & (h - 1);
        int i = ((t >> sl) << (sl + 1)) + kk;
        // global index g = base + i 2^st; at global stage st + sl, g mod 2^(st+sl) = low + kk 2^st
        long long e = (low + ((long long)kk << st)) << (log_n - st - sl - 1);
        Fr w = twiddle(hi, lo, lo_bits, e);
        Fr u = s[i];
        Fr v = s[i + h] * w;
        s[i] = u + v;
        s[i + h] = u - v;
        __syncthreads();
    }
    s[t].store(a + (base + ((long long)t << st)) * 8);
    s[t + half_block].store(a + (base + ((long long)(t + half_block) << st)) * 8);
}

// fr_ntt_group with each stage's twiddles computed once per block into shared memory (a
// stage of span h needs h distinct twiddles; fr_ntt_group computes one per butterfly):
// 2^k - 1 twiddle products per block instead of k 2^(k-1). Same launch shape, plus dynamic
// shared memory of 3 2^(k-1) elements (sized by k: more blocks per SM for small groups).
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
#if NTT_TW_INLINE
        Fr v = mul_inline(s[i + h], tw[kk]);
#else
        Fr v = s[i + h] * tw[kk];
#endif
        s[i] = u + v;
        s[i + h] = u - v;
        __syncthreads();
    }
    s[t].store(a + (base + ((long long)t << st)) * 8);
    s[t + half_block].store(a + (base + ((long long)(t + half_block) << st)) * 8);
}

// fr_ntt_group_tw with two butterflies per thread and stage (butterflies t and t + 2^(k-2))
// and the product inlined, so two independent products are in flight in each thread.
// blockDim.x = 2^(k-2) (k >= 2); grid and dynamic shared memory as fr_ntt_group_tw.
extern "C" __global__ void fr_ntt_group_x2(u32* a, const u32* hi, const u32* lo, int lo_bits,
                                           int log_n, int st, int k) {
    extern __shared__ Fr dyn[];
    Fr* s = dyn;                // 2^k elements
    Fr* tw = dyn + (1 << k);  // 2^(k-1) twiddles
    long long b = blockIdx.x;
    long long low = b & ((1LL << st) - 1);
    long long base = ((b >> st) << (st + k)) | low;
    const int t = threadIdx.x, q = 1 << (k - 2);
#pragma unroll
    for (int r = 0; r < 4; r++) s[t + r * q] = Fr::load(a + (base + ((long long)(t + r * q) << st)) * 8);
    for (int sl = 0; sl < k; sl++) {
        const int h = 1 << sl;
        for (int j = t; j < h; j += q)
            tw[j] = twiddle(hi, lo, lo_bits, (low + ((long long)j << st)) << (log_n - st - sl - 1));
        __syncthreads();  // tw written; the previous stage's butterflies done
        const int k0 = t & (h - 1), i0 = ((t >> sl) << (sl + 1)) + k0;
        const int k1 = (t + q) & (h - 1), i1 = (((t + q) >> sl) << (sl + 1)) + k1;
        Fr u0 = s[i0], u1 = s[i1];
        Fr v0 = mul_inline(s[i0 + h], tw[k0]);
        Fr v1 = mul_inline(s[i1 + h], tw[k1]);
        s[i0] = u0 + v0;
        s[i0 + h] = u0 - v0;
        s[i1] = u1 + v1;
        s[i1 + h] = u1 - v1;
        __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < 4; r++) s[t + r * q].store(a + (base + ((long long)(t + r * q) << st)) * 8);
}

// ---------------------------------------------------------------------------------------
// fr_ntt_reg8 (and fr_ntt_reg4 / fr_ntt_reg2 for domains of 2 and 4 elements): stage groups
// of k <= 8 stages (gpu/ntt.py reg_stage_groups: 3 launches at 2^24) with the butterflies in
// registers. A block is one warp of 32 threads holding 32 E elements (E = 2^EL = 8): G =
// 32 E / 2^k groups of 2^k elements (the same groups as fr_ntt_group), 2^(k - EL) threads
// per group, E elements per thread. The k stages run in rounds of EL stages (the last may
// have fewer, q): in a round starting at local stage s0 a thread holds the 2^q elements of
// each of its 2^(EL - q) butterfly sub-groups and runs their q stages in registers (one
// inlined copy of E/2 products: the registers are rotated between stages; the first
// version, each stage unrolled, was 355 KB of code and ran at half speed); between
// rounds the elements are exchanged through shared memory (limb-major, swizzled so that a
// warp's 32 accesses of a limb hit 32 banks) with one __syncwarp, not a __syncthreads per
// stage. Each group's twiddles w_sl[kk] (2^k - 1 of them) are computed once per launch
// into shared memory: the first launch's are table entries with no product (their exponents
// have zero low bits), the others' one product each. Global stage 0's twiddle (1) is not
// multiplied.
// Element idx (< E) of a thread in round (s0, q): m = idx mod 2^q, c = idx >> q, the
// "other bits" o = tt + c 2^(k - EL), local index j = (o >> s0) 2^(s0 + q) + m 2^s0 +
// (o mod 2^s0); global index base + j 2^st (tests/gpu_prover/test_ntt_model.py models it).

// x^e from the two tables; no product where e's high or low part is zero
__device__ __forceinline__ Fr twiddle_fast(const u32* hi, const u32* lo, int lo_bits,
                                           long long e) {
    long long mask = (1LL << lo_bits) - 1, h = e >> lo_bits, l = e & mask;
    if (l == 0) return Fr::load(hi + h * 8);
    if (h == 0) return Fr::load(lo + l * 8);
    return Fr::load(hi + h * 8) * Fr::load(lo + l * 8);
}

// bank swizzle of a shared-memory slot: a bijection on each row of 32 slots
__device__ __forceinline__ int reg_swizzle(int p) {
    int row = p >> 5;
    return p ^ ((row ^ (row << 2)) & 31);
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

// local index of element idx in round (s0, q) for the thread's o-bits base tt
__device__ __forceinline__ int reg_index(int idx, int tt, int tg_log, int s0, int q) {
    int m = idx & ((1 << q) - 1), o = tt + ((idx >> q) << tg_log);
    return ((o >> s0) << (s0 + q)) | (m << s0) | (o & ((1 << s0) - 1));
}

// rotl of the low EL bits of s by c (c may be >= EL)
template <int EL>
__device__ __forceinline__ int rotl_bits(int s, int c) {
    c %= EL;
    return ((s << c) | (s >> (EL - c))) & ((1 << EL) - 1);
}

// x[s] <- x[rotl(s, 1)]: register moves only (compile-time indices)
template <int EL>
__device__ __forceinline__ void rotate_slots(Fr* x) {
    Fr y[1 << EL];
#pragma unroll
    for (int s = 0; s < (1 << EL); s++) y[s] = x[((s << 1) | (s >> (EL - 1))) & ((1 << EL) - 1)];
#pragma unroll
    for (int s = 0; s < (1 << EL); s++) x[s] = y[s];
}

template <int EL>
__device__ __forceinline__ void ntt_reg_body(u32* a, const u32* hi, const u32* lo, int lo_bits,
                                             int log_n, int st, int k, const u32* phi,
                                             const u32* plo, const u32* ps, int pmode) {
    constexpr int E = 1 << EL, SLOTS = 32 * E;
    __shared__ u32 sx[8 * SLOTS];  // elements, limb-major
    __shared__ u32 sw[8 * SLOTS];  // each group's twiddles: slot g 2^k + 2^sl + kk
    const int lane = threadIdx.x, tg_log = k - EL, per_block = 32 >> tg_log;
    const long long groups = (1LL << log_n) >> k;
    const long long b0 = (long long)blockIdx.x * per_block;
    const long long st_mask = (1LL << st) - 1;
    // twiddles: slot idx = gi 2^k + e, e = 2^sl + kk
#pragma unroll 1
    for (int i = 0; i < E; i++) {
        const int idx = lane + 32 * i, gi = idx >> k, e = idx & ((1 << k) - 1);
        if (e != 0 && b0 + gi < groups) {
            const int sl = 31 - __clz(e), kk = e - (1 << sl);
            const long long lowi = (b0 + gi) & st_mask;
            const long long ex = (lowi + ((long long)kk << st)) << (log_n - st - sl - 1);
            slot_store<SLOTS>(sw, reg_swizzle(idx), twiddle_fast(hi, lo, lo_bits, ex));
        }
    }
    const int g = lane >> tg_log, tt = lane & ((1 << tg_log) - 1), gofs = g << k;
    const long long b = b0 + g;
    const bool valid = b < groups;
    const long long base = ((b >> st) << (st + k)) | (b & st_mask);
    Fr x[E];
#if NTT_REG_DIRECT_LOAD
#pragma unroll
    for (int idx = 0; idx < E; idx++) {
        const long long j = reg_index(idx, tt, tg_log, 0, EL);
        x[idx] = valid ? load_vec(a + (base + (j << st)) * 8) : Fr::zero();
    }
    __syncwarp();  // twiddles written
#else
    // load rows idx 2^tg_log + tt (a warp's lanes read consecutive rows of a group), then
    // through shared memory into round 0's order
#pragma unroll
    for (int idx = 0; idx < E; idx++) {
        const int j = (idx << tg_log) | tt;
        x[idx] = valid ? load_vec(a + (base + ((long long)j << st)) * 8) : Fr::zero();
    }
#pragma unroll
    for (int idx = 0; idx < E; idx++)
        slot_store<SLOTS>(sx, reg_swizzle(gofs + ((idx << tg_log) | tt)), x[idx]);
    __syncwarp();  // elements and twiddles written
#pragma unroll
    for (int idx = 0; idx < E; idx++)
        x[idx] = slot_load<SLOTS>(sx, reg_swizzle(gofs + reg_index(idx, tt, tg_log, 0, EL)));
    __syncwarp();  // read before the first exchange writes
#endif
    int s0 = 0, q = EL;
    while (true) {
        // sub-stage p pairs elements idx and idx + 2^p; the registers are rotated before
        // each one (slot s then holds idx = rotl(s, p + 1)) so that it always pairs slots r
        // and r + E/2: one copy of the E/2 inlined products serves every sub-stage.
#pragma unroll 1
        for (int p = 0; p < q; p++) {
            rotate_slots<EL>(x);
            const int sl = s0 + p;
#pragma unroll
            for (int r = 0; r < E / 2; r++) {
                Fr v = x[r + E / 2];
                if (st + sl != 0) {  // global stage 0: twiddle 1
                    const int idx = rotl_bits<EL>(r, p + 1);
                    const int o = tt + ((idx >> q) << tg_log);
                    const int kk = ((idx & ((1 << p) - 1)) << s0) | (o & ((1 << s0) - 1));
                    v = mul_inline(v, slot_load<SLOTS>(sw, reg_swizzle(gofs + (1 << sl) + kk)));
                }
                const Fr u = x[r];
                x[r] = u + v;
                x[r + E / 2] = u - v;
            }
        }
#pragma unroll 1
        for (int f = q; f < EL; f++) rotate_slots<EL>(x);  // back to slot = idx
        if (s0 + q == k) break;
        // exchange: round (s0, q) -> (s0 + q, q')
#pragma unroll
        for (int idx = 0; idx < E; idx++)
            slot_store<SLOTS>(sx, reg_swizzle(gofs + reg_index(idx, tt, tg_log, s0, q)), x[idx]);
        __syncwarp();
        s0 += q;
        q = min(EL, k - s0);
#pragma unroll
        for (int idx = 0; idx < E; idx++)
            x[idx] = slot_load<SLOTS>(sx, reg_swizzle(gofs + reg_index(idx, tt, tg_log, s0, q)));
        __syncwarp();  // read before the next exchange writes
    }
    if (valid) {
        const bool last = st + k == log_n;
        const Fr c = (last && (pmode & 1)) ? Fr::load(ps) : Fr::zero();
#pragma unroll
        for (int idx = 0; idx < E; idx++) {
            const long long i = base + ((long long)reg_index(idx, tt, tg_log, s0, q) << st);
            Fr y = x[idx];
            if (last && (pmode & 2)) y = y * twiddle_fast(phi, plo, lo_bits, i);
            if (last && (pmode & 1)) y = y * c;
            store_vec(a + i * 8, y);
        }
    }
}

// a: n = 2^log_n elements in place; stages st .. st + k - 1; blockDim.x = 32,
// gridDim.x = ceil((n >> k) / (32 E / 2^k)); k in [EL, EL + 5]. The last launch (st + k =
// log_n) scales its output a_i by the post factor: pmode bit 1: ps[0], bit 2: x^i from the
// power tables (phi, plo; same lo_bits); pmode 0: none (the pointers are not read).
#define REG_KERNEL(NAME, EL)                                                                 \
    extern "C" __global__ void __launch_bounds__(32)                                        \
        NAME(u32* a, const u32* hi, const u32* lo, int lo_bits, int log_n, int st, int k,    \
             const u32* phi, const u32* plo, const u32* ps, int pmode) {                     \
        ntt_reg_body<EL>(a, hi, lo, lo_bits, log_n, st, k, phi, plo, ps, pmode);              \
    }
REG_KERNEL(fr_ntt_reg8, 3)
REG_KERNEL(fr_ntt_reg4, 2)
REG_KERNEL(fr_ntt_reg2, 1)

// ---------------------------------------------------------------------------------------
// fr_ntt_pass: stages st .. st + k - 1 (k <= PASS_LOG = 9) of the same groups as
// fr_ntt_group_tw (a block holds the 2^k elements base + j 2^st of 2^cl adjacent groups,
// cl = 0 unless gpu/ntt.py asks for columns; blockDim.x = 2^(k-1+cl), one butterfly per
// thread and stage, gridDim.x = n / 2^(k+cl)), with
//  - every twiddle of the block (stage sl, kk < 2^sl: slot 2^sl + kk, 2^k - 1 of them)
//    computed up front behind one __syncthreads (fr_ntt_group_tw: 2^sl threads work, then a
//    __syncthreads, in every stage);
//  - no product for a twiddle of a pass before the last (st + k <= pt_log): each exponent e
//    is a multiple of 2^(log_n - pt_log) and pt[e >> (log_n - pt_log)] = w^e (the per-pass
//    table, 2^(pt_log - 1) entries; gpu/ntt.py pass_log); the last pass's one product each
//    (as twiddle_fast: none where a part is zero); and no product at global stage 0 (w^0 = 1);
//  - the product inlined (fr_ntt_group_tw calls field.cuh's out-of-line product), field.cuh's
//    mul_inline or fr_mul (NTT_PASS_FR_MUL); 128-bit global loads and stores;
//  - elements and twiddles in shared memory as Fr arrays or planes (NTT_PASS_PLANES).
// Dynamic shared memory: 2 2^(k+cl) elements (the elements and as many twiddle slots, slots
// 0 .. 2^cl - 1 unused).
#if NTT_PASS_FR_MUL
#define PASS_MUL fr_mul
#else
#define PASS_MUL mul_inline
#endif

#if NTT_PASS_PLANES
// slot i of an array of `count` elements: half 0 at p[q], half 1 at p[count + q], q = i with
// bits 0..2 flipped when bit 3 is set. A quarter warp (8 lanes, one 128-byte wavefront) then
// hits 8 distinct 16-byte bank groups in every access of the kernel: with one column, slot
// i = (t >> sl) 2^(sl + 1) + (t mod 2^sl) (and + 2^sl) over 8 consecutive t has distinct
// bits 0..2 for sl >= 3, and for sl < 3 spans 16 slots whose two halves (bit 3) are
// mirrored; with two columns (slot 2 i + c) the same holds with 4 butterflies of 2 lanes.
__device__ __forceinline__ int plane_q(int i) { return i ^ (((i >> 3) & 1) * 7); }
__device__ __forceinline__ Fr pass_get(const uint4* p, int count, int i) {
    const int q = plane_q(i);
    const uint4 x = p[q], y = p[count + q];
    Fr r;
    r.v[0] = x.x, r.v[1] = x.y, r.v[2] = x.z, r.v[3] = x.w;
    r.v[4] = y.x, r.v[5] = y.y, r.v[6] = y.z, r.v[7] = y.w;
    return r;
}
__device__ __forceinline__ void pass_put(uint4* p, int count, int i, const Fr& r) {
    const int q = plane_q(i);
    p[q] = make_uint4(r.v[0], r.v[1], r.v[2], r.v[3]);
    p[count + q] = make_uint4(r.v[4], r.v[5], r.v[6], r.v[7]);
}
#else
__device__ __forceinline__ Fr pass_get(const uint4* p, int count, int i) {
    return reinterpret_cast<const Fr*>(p)[i];
}
__device__ __forceinline__ void pass_put(uint4* p, int count, int i, const Fr& r) {
    reinterpret_cast<Fr*>(p)[i] = r;
}
#endif

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
    return PASS_MUL(load_vec(hi + eh * 8), load_vec(lo + el * 8));
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
    const bool table = NTT_PASS_TABLE && st + k <= pt_log;
#if !NTT_PASS_TW_STAGE
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int slot = t + r * half;
        if (slot >> cl == 0) continue;
        pass_put(tw, count, slot,
                 pass_twiddle(slot, cl, low, st, log_n, table, pt, pt_log, hi, lo, lo_bits));
    }
    __syncthreads();  // elements and twiddles written
#endif
    for (int sl = 0; sl < k; sl++) {
        const int h = 1 << sl, kk = tb & (h - 1);
#if NTT_PASS_TW_STAGE  // this stage's 2^(sl + cl) twiddles, then a barrier (as fr_ntt_group_tw)
        if (t < (h << cl)) {
            const int slot = (h << cl) + t;
            pass_put(tw, count, slot,
                     pass_twiddle(slot, cl, low, st, log_n, table, pt, pt_log, hi, lo, lo_bits));
        }
        __syncthreads();  // twiddles (and at sl = 0 the elements) written
#endif
        const int i = ((((tb >> sl) << (sl + 1)) + kk) << cl) | c, j = i + (h << cl);
        const Fr u = pass_get(s, count, i);
        Fr v = pass_get(s, count, j);
        if (st + sl != 0) v = PASS_MUL(v, pass_get(tw, count, ((h + kk) << cl) | c));
        pass_put(s, count, i, u + v);
        pass_put(s, count, j, u - v);
        __syncthreads();
    }
    store_vec(a + PASS_AT(t) * 8, pass_get(s, count, t));
    store_vec(a + PASS_AT(t + half) * 8, pass_get(s, count, t + half));
#undef PASS_AT
}

// fr_bitrev with the elements scaled on the way (the coset shift and 1/n of the transforms
// folded into the pass that moves every element anyway): a_i <- f(j) a_j for i = rev(j),
// f(j) = ps[0] (mode bit 1) times x^j from the power tables phi, plo (mode bit 2).
extern "C" __global__ void fr_bitrev_scale(u32* a, long long n, int log_n, const u32* phi,
                                           const u32* plo, int lo_bits, const u32* ps, int mode) {
    const Fr c = (mode & 1) ? Fr::load(ps) : Fr::zero();
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        long long j = (long long)(__brevll((unsigned long long)i) >> (64 - log_n));
        if (i <= j) {
            Fr x = Fr::load(a + i * 8), y = Fr::load(a + j * 8);
            if (mode & 2) {
                x = x * twiddle_fast(phi, plo, lo_bits, i);
                y = y * twiddle_fast(phi, plo, lo_bits, j);
            }
            if (mode & 1) {
                x = x * c;
                y = y * c;
            }
            y.store(a + i * 8);
            if (i != j) x.store(a + j * 8);
        }
    }
}

// The bit reversal by tiles, for log_n >= 8: index i = (h, M, l) (4, log_n - 8 and 4 bits)
// goes to rev(i) = (rev l, rev M, rev h), so tile M = {(h, M, l)} and tile rev M swap
// whole: the block of M (<= rev M) loads both (rows of 16 elements: 512-byte runs, not the
// 32-byte scattered sectors of fr_bitrev), transposes them through shared memory (limb-
// major, slot P ^ (P >> 5): the scattered writes hit 32 banks) and stores each into the
// other's place. 256 threads, gridDim.x = 2^(log_n - 8). Scaled like fr_bitrev_scale
// (mode 0: not scaled).
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


// fr_mul_rate with fr_mul (fr_mul.cuh, r's limbs folded in) in place of mul_inline.
extern "C" __global__ void fr_mul_rate_r(u32* out, const u32* in, int iters) {
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    Fr y = Fr::load(in + (t & 1023) * 8);
    Fr x0 = Fr::load(in + ((t + 1) & 1023) * 8), x1 = Fr::load(in + ((t + 2) & 1023) * 8);
    Fr x2 = Fr::load(in + ((t + 3) & 1023) * 8), x3 = Fr::load(in + ((t + 4) & 1023) * 8);
    for (int i = 0; i < iters; i++) {
        x0 = fr_mul(x0, y);
        x1 = fr_mul(x1, y);
        x2 = fr_mul(x2, y);
        x3 = fr_mul(x3, y);
    }
    (fr_mul(fr_mul(x0, x1), fr_mul(x2, x3))).store(out + t * 8);
}
