// Montgomery arithmetic over the BLS12-381 fields, 32-bit limbs, little-endian.
//
// Fr: the scalar field r (255 bits, 8 limbs); Fq: the base field p (381 bits, 12 limbs);
// Fq2 = Fq[u] / (u^2 + 1). An element x is held as x * 2^(32 N) mod m (Montgomery form).
// Multiplication is CIOS (Koc, Acar, Kaliski 1996) with 64-bit partial products.
// Macros: FIELD_MUL_INLINE (default 0) 1 inlines the Montgomery product into its callers
// (measured slower on an H200: more registers, bigger code; docs/benchmarks.md).
// FIELD_MUL_PTX (default 0) 1 computes it with PTX carry chains (mad.lo.cc / madc.hi.cc)
// instead of 64-bit C arithmetic. FIELD_MUL_WIDE (default 1) 1 computes it with 64-bit
// carry chains over limb pairs (one IMAD.WIDE.U32.X per partial product; see
// mont_mul_wide); 0 selects the 64-bit C product (the kernels of 2026-12-01 06:33 UTC).
// FQ2_SQR (default 1) 1 squares in Fq2 with 2 products instead of the 3 of fq2_mul
// (measured on the H200 at e58bfb9: G2 MSM 2^20 51.2 against 53.5 ms, G1 unchanged;
// docs/benchmarks.md); 0 keeps fq2_mul.
// FIELD_MUL_PAIRS (default 0) 1: fq2_mul / fq2_sqr run their 3 / 2 Fq products in one
// body, and mul_pair / sqr_pair (the XYZZ addition) two at once (off until measured).
// FIELD_SQR (default 0) 1: Fq squares (sqr(), the G1 formulas' squarings) by
// mont_sqr_wide, each cross product once (78 + 144 partial products instead of 288: 7-9 %
// fewer SASS instructions); 0: the product a * a. Measured slower on the H200 (G1
// precomputed 2^20 accumulation +2.5 %, docs/benchmarks.md): a second function body beside
// the product's in the kernels' calls. Only with the wide product (FIELD_MUL_WIDE=1,
// FIELD_MUL_PTX=0); Fr and Fq2 squares are unchanged.
// FIELD_LAZY (default 1) 1: Fq values in registers lie in [0, 2m) (lazy reduction): the
// wide product and square skip their final conditional subtraction (inputs < 2m give an
// output < 2m since 4m < 2^384), additions and subtractions reduce against 2m, is_zero and
// == compare mod m, and store() writes the canonical value (< m), so memory, and every
// result, is as before. 0: every value < m. Only with the wide product (FIELD_MUL_WIDE=1,
// FIELD_MUL_PTX=0); Fr is canonical either way. It applies to G1's Fq; FQ2_LAZY (default 0)
// 1 extends it to the Fq under Fq2 (G2): measured slower there (more code, more spills).
// FIELD_HOST_EMULATION: compile with a host C++ compiler (tests/gpu_prover/
// test_field_host_emulation.py): the CUDA qualifiers become plain C++ and the PTX carry
// operations are emulated with an explicit carry flag.
#pragma once

#ifdef FIELD_HOST_EMULATION
#define __constant__
#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __clz(x) __builtin_clz(x)
#endif

#ifndef FIELD_MUL_INLINE
#define FIELD_MUL_INLINE 0
#endif
#ifndef FIELD_MUL_PTX
#define FIELD_MUL_PTX 0
#endif
#ifndef FIELD_MUL_WIDE
#define FIELD_MUL_WIDE 1
#endif
#ifndef FQ2_SQR
#define FQ2_SQR 1
#endif
#ifndef FIELD_MUL_PAIRS
#define FIELD_MUL_PAIRS 0
#endif
#ifndef FIELD_SQR
#define FIELD_SQR 0
#endif
#ifndef FIELD_LAZY
#define FIELD_LAZY 1
#endif
#ifndef FQ2_LAZY
#define FQ2_LAZY 0
#endif
#if FIELD_MUL_INLINE
#define FIELD_MUL_ATTR __forceinline__
#else
#define FIELD_MUL_ATTR __noinline__
#endif

typedef unsigned int u32;
typedef unsigned long long u64;

__constant__ u32 FR_P[8] = {0x1u, 0xffffffffu, 0xfffe5bfeu, 0x53bda402u,
                            0x9a1d805u, 0x3339d808u, 0x299d7d48u, 0x73eda753u};
__constant__ u32 FR_ONE[8] = {0xfffffffeu, 0x1u, 0x34802u, 0x5884b7fau,
                              0xecbc4ff5u, 0x998c4fefu, 0xacc5056fu, 0x1824b159u};
__constant__ u32 FR_R2[8] = {0xf3f29c6du, 0xc999e990u, 0x87925c23u, 0x2b6cedcbu,
                             0x7254398fu, 0x5d31496u, 0x9f59ff11u, 0x748d9d9u};
__constant__ u32 FQ_P[12] = {0xffffaaabu, 0xb9feffffu, 0xb153ffffu, 0x1eabfffeu,
                             0xf6b0f624u, 0x6730d2a0u, 0xf38512bfu, 0x64774b84u,
                             0x434bacd7u, 0x4b1ba7b6u, 0x397fe69au, 0x1a0111eau};
__constant__ u32 FQ_ONE[12] = {0x2fffdu, 0x76090000u, 0xc40c0002u, 0xebf4000bu,
                               0x53c758bau, 0x5f489857u, 0x70525745u, 0x77ce5853u,
                               0xa256ec6du, 0x5c071a97u, 0xfa80e493u, 0x15f65ec3u};
__constant__ u32 FQ_R2[12] = {0x1c341746u, 0xf4df1f34u, 0x9d104f1u, 0xa76e6a6u,
                              0x4c95b6d5u, 0x8de5476cu, 0x939d83c0u, 0x67eb88a9u,
                              0xb519952du, 0x9a793e85u, 0x92cae3aau, 0x11988fe5u};

struct FrTraits {
    static const int N = 8;
    static const u32 INV = 0xffffffffu;  // -r^-1 mod 2^32
    __device__ static __forceinline__ u32 mod(int i) { return FR_P[i]; }
    __device__ static __forceinline__ u32 one(int i) { return FR_ONE[i]; }
    __device__ static __forceinline__ u32 r2(int i) { return FR_R2[i]; }
};

struct FqTraits {
    static const int N = 12;
    static const u32 INV = 0xfffcfffdu;  // -p^-1 mod 2^32
    __device__ static __forceinline__ u32 mod(int i) { return FQ_P[i]; }
    __device__ static __forceinline__ u32 one(int i) { return FQ_ONE[i]; }
    __device__ static __forceinline__ u32 r2(int i) { return FQ_R2[i]; }
};

// Lazy reduction (FIELD_LAZY): which fields hold values in [0, 2m) between operations and
// `bound`, the limbs of the multiple of m that additions and subtractions reduce against
// (2m lazy, m otherwise). Fq only (4m < 2^384 leaves the room); Fr stays canonical.
__constant__ u32 FQ_P2[12] = {0xffff5556u, 0x73fdffffu, 0x62a7ffffu, 0x3d57fffdu,
                              0xed61ec48u, 0xce61a541u, 0xe70a257eu, 0xc8ee9709u,
                              0x869759aeu, 0x96374f6cu, 0x72ffcd34u, 0x340223d4u};
template <class T>
struct Lazy {
    static const bool on = false;
    __device__ static __forceinline__ u32 bound(int i) { return T::mod(i); }
};
template <>
struct Lazy<FqTraits> {
    static const bool on = FIELD_LAZY && FIELD_MUL_WIDE && !FIELD_MUL_PTX;
    __device__ static __forceinline__ u32 bound(int i) { return on ? FQ_P2[i] : FQ_P[i]; }
};

template <class T>
struct Fp {
    static const int N = T::N;
    u32 v[T::N];

    __device__ static __forceinline__ Fp zero() {
        Fp r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = 0;
        return r;
    }
    __device__ static __forceinline__ Fp one() {
        Fp r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = T::one(i);
        return r;
    }
    __device__ static __forceinline__ Fp load(const u32* p) {
        Fp r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = p[i];
        return r;
    }
    // memory holds canonical values (< m), whatever the registers hold (FIELD_LAZY)
    __device__ __forceinline__ void store(u32* p) const {
        if (Lazy<T>::on) {
            const Fp c = canonical();
#pragma unroll
            for (int i = 0; i < N; i++) p[i] = c.v[i];
        } else {
#pragma unroll
            for (int i = 0; i < N; i++) p[i] = v[i];
        }
    }
    // the value < m (lazy: one conditional subtraction of m; else itself)
    __device__ __forceinline__ Fp canonical() const {
        Fp c = *this;
        if (Lazy<T>::on) c.reduce_once(0);
        return c;
    }
    // = 0 mod m (lazy: 0 or m)
    __device__ __forceinline__ bool is_zero() const {
        u32 acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= v[i];
        if (!Lazy<T>::on) return acc == 0;
        u32 accm = 0;
#pragma unroll
        for (int i = 0; i < N; i++) accm |= v[i] ^ T::mod(i);
        return acc == 0 || accm == 0;
    }
    __device__ __forceinline__ bool operator==(const Fp& b) const {
        u32 acc = 0;
        if (Lazy<T>::on) {
            const Fp x = canonical(), y = b.canonical();
#pragma unroll
            for (int i = 0; i < N; i++) acc |= x.v[i] ^ y.v[i];
        } else {
#pragma unroll
            for (int i = 0; i < N; i++) acc |= v[i] ^ b.v[i];
        }
        return acc == 0;
    }
    // x <- x - m when x >= m, for x < 2m with `extra` the bit above the top limb: compute
    // x - m and keep it unless it borrowed (and no extra bit). Branch-free: the threads of a
    // warp take different paths here at random, so a branch would diverge.
    __device__ __forceinline__ void reduce_once(u32 extra) {
        u32 d[T::N];
        u64 borrow = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            u64 t = (u64)v[i] - T::mod(i) - borrow;
            d[i] = (u32)t;
            borrow = (t >> 32) & 1;
        }
        u32 keep = 0u - (u32)((extra != 0) | (borrow == 0));
#pragma unroll
        for (int i = 0; i < N; i++) v[i] = (d[i] & keep) | (v[i] & ~keep);
    }
    // x <- x - B when x >= B (B = Lazy<T>::bound: 2m lazy, else m), for x < 2B
    __device__ __forceinline__ void reduce_bound(u32 extra) {
        u32 d[T::N];
        u64 borrow = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            u64 t = (u64)v[i] - Lazy<T>::bound(i) - borrow;
            d[i] = (u32)t;
            borrow = (t >> 32) & 1;
        }
        u32 keep = 0u - (u32)((extra != 0) | (borrow == 0));
#pragma unroll
        for (int i = 0; i < N; i++) v[i] = (d[i] & keep) | (v[i] & ~keep);
    }
};

// a + b mod m (lazy Fq: inputs and output < 2m, else < m)
template <class T>
__device__ __forceinline__ Fp<T> operator+(const Fp<T>& a, const Fp<T>& b) {
    Fp<T> r;
    u64 carry = 0;
#pragma unroll
    for (int i = 0; i < T::N; i++) {
        u64 s = (u64)a.v[i] + b.v[i] + carry;
        r.v[i] = (u32)s;
        carry = s >> 32;
    }
    r.reduce_bound((u32)carry);
    return r;
}

// a - b mod m (lazy Fq: inputs and output < 2m, else < m)
template <class T>
__device__ __forceinline__ Fp<T> operator-(const Fp<T>& a, const Fp<T>& b) {
    Fp<T> r;
    u64 borrow = 0;
#pragma unroll
    for (int i = 0; i < T::N; i++) {
        u64 d = (u64)a.v[i] - b.v[i] - borrow;
        r.v[i] = (u32)d;
        borrow = (d >> 32) & 1;
    }
    u32 mask = 0u - (u32)borrow;  // add the bound (m, lazy 2m) back when a < b, branch-free
    u64 carry = 0;
#pragma unroll
    for (int i = 0; i < T::N; i++) {
        u64 s = (u64)r.v[i] + (Lazy<T>::bound(i) & mask) + carry;
        r.v[i] = (u32)s;
        carry = s >> 32;
    }
    return r;
}

template <class T>
__device__ __forceinline__ Fp<T> operator-(const Fp<T>& a) {
    return Fp<T>::zero() - a;
}

// Carry-chain steps on a limb pair (hi:lo) and on single limbs: PTX on the device (ptxas
// turns each mad.lo.cc + madc.hi.cc pair into one IMAD.WIDE.U32.X), the same steps with an
// explicit carry flag on the host. cf: the carry flag of the chain in progress.
#ifdef FIELD_HOST_EMULATION
static u32 field_cf;
inline void madw_first(u32& lo, u32& hi, u32 x, u32 y) {  // (hi:lo) += x y, carry out
    u64 p = (u64)x * y, s = (u64)lo + (u32)p;
    lo = (u32)s;
    s = (u64)hi + (u32)(p >> 32) + (s >> 32);
    hi = (u32)s;
    field_cf = (u32)(s >> 32);
}
inline void madw_cc(u32& lo, u32& hi, u32 x, u32 y) {  // (hi:lo) += x y + cf, carry out
    u64 p = (u64)x * y, s = (u64)lo + (u32)p + field_cf;
    lo = (u32)s;
    s = (u64)hi + (u32)(p >> 32) + (s >> 32);
    hi = (u32)s;
    field_cf = (u32)(s >> 32);
}
inline void madw_last(u32& lo, u32& hi, u32 x, u32 y) {  // (hi:lo) += x y + cf, no carry out
    u64 p = (u64)x * y, s = (u64)lo + (u32)p + field_cf;
    lo = (u32)s;
    hi = (u32)((u64)hi + (u32)(p >> 32) + (s >> 32));
}
inline void add_carry(u32& t) { t += field_cf; }  // t += cf
inline void add_cc(u32& d, u32 a, u32 b) {  // d = a + b, carry out
    u64 s = (u64)a + b;
    d = (u32)s;
    field_cf = (u32)(s >> 32);
}
inline void addc_cc(u32& d, u32 a, u32 b) {  // d = a + b + cf, carry out
    u64 s = (u64)a + b + field_cf;
    d = (u32)s;
    field_cf = (u32)(s >> 32);
}
inline void addc(u32& d, u32 a, u32 b) { d = a + b + field_cf; }  // d = a + b + cf
#else
__device__ __forceinline__ void madw_first(u32& lo, u32& hi, u32 x, u32 y) {
    asm volatile("mad.lo.cc.u32 %0, %2, %3, %0;\n\tmadc.hi.cc.u32 %1, %2, %3, %1;"
                 : "+r"(lo), "+r"(hi)
                 : "r"(x), "r"(y));
}
__device__ __forceinline__ void madw_cc(u32& lo, u32& hi, u32 x, u32 y) {
    asm volatile("madc.lo.cc.u32 %0, %2, %3, %0;\n\tmadc.hi.cc.u32 %1, %2, %3, %1;"
                 : "+r"(lo), "+r"(hi)
                 : "r"(x), "r"(y));
}
__device__ __forceinline__ void madw_last(u32& lo, u32& hi, u32 x, u32 y) {
    asm volatile("madc.lo.cc.u32 %0, %2, %3, %0;\n\tmadc.hi.u32 %1, %2, %3, %1;"
                 : "+r"(lo), "+r"(hi)
                 : "r"(x), "r"(y));
}
__device__ __forceinline__ void add_carry(u32& t) { asm volatile("addc.u32 %0, %0, 0;" : "+r"(t)); }
__device__ __forceinline__ void add_cc(u32& d, u32 a, u32 b) {
    asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
}
__device__ __forceinline__ void addc_cc(u32& d, u32 a, u32 b) {
    asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
}
__device__ __forceinline__ void addc(u32& d, u32 a, u32 b) {
    asm volatile("addc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
}
#endif

// Montgomery product (CIOS) with 64-bit carry chains over limb pairs. t (< 2m) is held as
// ev + 2^32 od: ev[k] at word k (pairs (2j, 2j + 1) aligned with the products of the even
// limbs), od[k] at word k + 1 (the products of the odd limbs). Round i:
//   ev += a_even b_i, od = a_odd b_i; u = ev[0] (-1/m) mod 2^32 (od has no word 0);
//   ev += u m_even, od += u m_odd; t = od + ev[1..N] (t / 2^32; word 0 is 0).
// So each partial product is one 64-bit multiply-add in one carry chain, and no chain has
// to carry the other's halves. Bounds: t + a b_i + u m < 2m 2^32 <= 2^(32 (N + 1)) (2m <=
// 2^(32 N)), so ev fits in N + 1 words, od in N (its chain's last carry is 0) and the new t
// in N. Needs N even; inputs < m, output < m -- or, lazy (Lazy<T>::on, 4m <= 2^(32 N)),
// inputs < 2m: then t + a b_i + u m < 3m 2^32 + 2m, t stays < 3m, and the output
// (a b + U m) / 2^(32 N) < 4m^2 / 2^(32 N) + m < 2m is returned as it is.
// The first half of a round of the wide product: ev += a_even b_i (ev = a_even b_0 in round
// 0), od = a_odd b_i (fr_mul.cuh's product shares it).
template <int N>
__device__ __forceinline__ void mont_product_round(u32* ev, u32* od, const u32* a, u32 bi,
                                                   bool first) {
    if (first) {
#pragma unroll
        for (int j = 0; j < N; j += 2) {
            u64 e = (u64)a[j] * bi;
            ev[j] = (u32)e;
            ev[j + 1] = (u32)(e >> 32);
        }
    } else {
        madw_first(ev[0], ev[1], a[0], bi);
#pragma unroll
        for (int j = 2; j < N; j += 2) madw_cc(ev[j], ev[j + 1], a[j], bi);
        add_carry(ev[N]);
    }
#pragma unroll
    for (int j = 1; j < N; j += 2) {
        u64 o = (u64)a[j] * bi;
        od[j - 1] = (u32)o;
        od[j] = (u32)(o >> 32);
    }
}

// The second half of a round of the wide product (and square): u = t_0 (-1/m) mod 2^32,
// ev += u m_even, od += u m_odd, then t = (od + ev[1..N]) (t / 2^32; word 0 is 0).
template <class T>
__device__ __forceinline__ void mont_reduce_round(u32* ev, u32* od) {
    const int N = T::N;
    const u32 u = ev[0] * T::INV;
    madw_first(ev[0], ev[1], T::mod(0), u);
#pragma unroll
    for (int j = 2; j < N; j += 2) madw_cc(ev[j], ev[j + 1], T::mod(j), u);
    add_carry(ev[N]);
    madw_first(od[0], od[1], T::mod(1), u);
#pragma unroll
    for (int j = 3; j < N - 1; j += 2) madw_cc(od[j - 1], od[j], T::mod(j), u);
    madw_last(od[N - 2], od[N - 1], T::mod(N - 1), u);
    add_cc(ev[0], od[0], ev[1]);
#pragma unroll
    for (int k = 1; k < N - 1; k++) addc_cc(ev[k], od[k], ev[k + 1]);
    addc(ev[N - 1], od[N - 1], ev[N]);
    ev[N] = 0;
}

template <class T>
__device__ __forceinline__ Fp<T> mont_mul_wide_body(const Fp<T>& a, const Fp<T>& b) {
    const int N = T::N;
    u32 ev[T::N + 1], od[T::N];
    ev[N] = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        mont_product_round<T::N>(ev, od, a.v, b.v[i], i == 0);
        mont_reduce_round<T>(ev, od);
    }
    Fp<T> r;
#pragma unroll
    for (int i = 0; i < N; i++) r.v[i] = ev[i];
    if (!Lazy<T>::on) r.reduce_once(0);  // lazy: t < 2m is the output
    return r;
}

template <class T>
__device__ FIELD_MUL_ATTR Fp<T> mont_mul_wide(const Fp<T> a, const Fp<T> b) {
    return mont_mul_wide_body(a, b);
}

// Montgomery square a^2 2^(-32N) mod m: the rounds of mont_mul_wide_body with b = a, but
// each cross product a_i a_j (i < j) computed once. Round i adds a_i e instead of a b_i,
// where e_j = 0 (j < i), e_i = a_i, e_j = limb j of 2 sum_{k > i} a_k 2^(32 k) (j > i: the
// limbs of 2a, except that limb i + 1 is a_{i+1} << 1 without a_i's top bit); over all
// rounds the rows sum to a^2, so the result is (a^2 + U m) / 2^(32 N) < 2m as in the
// product. N (N + 1) / 2 products a_i e_j instead of N^2 (Fq: 78 instead of 144; the N^2 of
// u m stay). Bounds, for a < 2m (lazy) and m < 2^(32 N - 2): 2a < 4m fits N limbs, e_j <
// 2^32, and in round i, a_i e < 4m 2^32: the running t stays < 5m < 2^(32 N) (ev fits N + 1
// words); od's top pair holds a_i e_(N-1) + u m_(N-1) < 2^64 (top limbs: 2a < 2^31, m <
// 2^29); the output < 2m (reduced to < m unless lazy). Needs N even and m < 2^(32 N - 2):
// Fq (2^381), not Fr (2^254.9).
template <class T>
__device__ __forceinline__ Fp<T> mont_sqr_wide_body(const Fp<T>& a) {
    const int N = T::N;
    u32 two[T::N], ev[T::N + 1], od[T::N];
    two[0] = a.v[0] << 1;
#pragma unroll
    for (int j = 1; j < N; j++) two[j] = (a.v[j] << 1) | (a.v[j - 1] >> 31);
    ev[N] = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        const u32 ai = a.v[i];
#define SQR_E(j) ((j) == i ? ai : (j) == i + 1 ? a.v[(j)] << 1 : two[(j)])
        if (i == 0) {
#pragma unroll
            for (int j = 0; j < N; j += 2) {
                u64 e = (u64)SQR_E(j) * ai;
                ev[j] = (u32)e;
                ev[j + 1] = (u32)(e >> 32);
            }
        } else {
            const int j0 = (i + 1) & ~1;  // the first even j >= i
            if (j0 < N) {
                madw_first(ev[j0], ev[j0 + 1], SQR_E(j0), ai);
#pragma unroll
                for (int j = j0 + 2; j < N; j += 2) madw_cc(ev[j], ev[j + 1], SQR_E(j), ai);
                add_carry(ev[N]);
            }
        }
#pragma unroll
        for (int j = 1; j < N; j += 2) {
            u64 o = j < i ? 0 : (u64)SQR_E(j) * ai;
            od[j - 1] = (u32)o;
            od[j] = (u32)(o >> 32);
        }
#undef SQR_E
        mont_reduce_round<T>(ev, od);
    }
    Fp<T> r;
#pragma unroll
    for (int i = 0; i < N; i++) r.v[i] = ev[i];
    if (!Lazy<T>::on) r.reduce_once(0);  // lazy: t < 2m is the output
    return r;
}

template <class T>
__device__ FIELD_MUL_ATTR Fp<T> mont_sqr_wide(const Fp<T> a) {
    return mont_sqr_wide_body(a);
}

// The product inlined into its caller (the NTT's butterflies: short kernels with registers
// to spare, where a call boundary would keep two products from overlapping).
template <class T>
__device__ __forceinline__ Fp<T> mul_inline(const Fp<T>& a, const Fp<T>& b) {
#if FIELD_MUL_WIDE && !FIELD_MUL_PTX
    return mont_mul_wide_body(a, b);
#else
    return a * b;
#endif
}

// Montgomery product a * b * 2^(-32N) mod m (CIOS). The curve formulas that call it are not
// inlined (see curve.cuh), which keeps NVRTC's compile time bounded.
#if FIELD_MUL_PTX
// t[0..N-1] += lo(x[j] y), carry into t[N], t[N+1]; then t[1..N] += hi(x[j] y), carry into
// t[N+1]. Each chain is a run of volatile asm statements (kept in order, carry flag intact).
template <int N>
__device__ __forceinline__ void mul_add_row(u32* t, const u32* x, u32 y) {
    asm volatile("mad.lo.cc.u32 %0, %1, %2, %0;" : "+r"(t[0]) : "r"(x[0]), "r"(y));
#pragma unroll
    for (int j = 1; j < N; j++)
        asm volatile("madc.lo.cc.u32 %0, %1, %2, %0;" : "+r"(t[j]) : "r"(x[j]), "r"(y));
    asm volatile("addc.cc.u32 %0, %0, 0;" : "+r"(t[N]));
    asm volatile("addc.u32 %0, %0, 0;" : "+r"(t[N + 1]));
    asm volatile("mad.hi.cc.u32 %0, %1, %2, %0;" : "+r"(t[1]) : "r"(x[0]), "r"(y));
#pragma unroll
    for (int j = 1; j < N; j++)
        asm volatile("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(t[j + 1]) : "r"(x[j]), "r"(y));
    asm volatile("addc.u32 %0, %0, 0;" : "+r"(t[N + 1]));
}

template <class T>
__device__ FIELD_MUL_ATTR Fp<T> mont_mul(const Fp<T> a, const Fp<T> b) {
    const int N = T::N;
    u32 t[T::N + 2], p[T::N];
#pragma unroll
    for (int i = 0; i < N + 2; i++) t[i] = 0;
#pragma unroll
    for (int i = 0; i < N; i++) p[i] = T::mod(i);
#pragma unroll
    for (int i = 0; i < N; i++) {
        mul_add_row<T::N>(t, a.v, b.v[i]);  // t += a b_i
        u32 m = t[0] * T::INV;
        mul_add_row<T::N>(t, p, m);  // t += m p, so t_0 = 0
#pragma unroll
        for (int j = 0; j <= N; j++) t[j] = t[j + 1];  // t /= 2^32
        t[N + 1] = 0;
    }
    Fp<T> r;
#pragma unroll
    for (int i = 0; i < N; i++) r.v[i] = t[i];
    r.reduce_once(t[N]);
    return r;
}
#else
template <class T>
__device__ FIELD_MUL_ATTR Fp<T> mont_mul(const Fp<T> a, const Fp<T> b) {
    const int N = T::N;
    u32 t[T::N + 2];
#pragma unroll
    for (int i = 0; i < N + 2; i++) t[i] = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        u64 c = 0;
#pragma unroll
        for (int j = 0; j < N; j++) {
            c = (u64)t[j] + (u64)a.v[j] * b.v[i] + c;
            t[j] = (u32)c;
            c >>= 32;
        }
        u64 s = (u64)t[N] + c;
        t[N] = (u32)s;
        t[N + 1] = (u32)(s >> 32);
        u32 m = t[0] * T::INV;
        c = ((u64)t[0] + (u64)m * T::mod(0)) >> 32;
#pragma unroll
        for (int j = 1; j < N; j++) {
            c = (u64)t[j] + (u64)m * T::mod(j) + c;
            t[j - 1] = (u32)c;
            c >>= 32;
        }
        s = (u64)t[N] + c;
        t[N - 1] = (u32)s;
        t[N] = t[N + 1] + (u32)(s >> 32);
    }
    Fp<T> r;
#pragma unroll
    for (int i = 0; i < N; i++) r.v[i] = t[i];
    r.reduce_once(t[N]);
    return r;
}
#endif

template <class T>
__device__ __forceinline__ Fp<T> operator*(const Fp<T>& a, const Fp<T>& b) {
#if FIELD_MUL_WIDE && !FIELD_MUL_PTX
    return mont_mul_wide(a, b);
#else
    return mont_mul(a, b);
#endif
}

template <class T>
__device__ __forceinline__ Fp<T> to_mont(const Fp<T>& a) {
    Fp<T> r2;
#pragma unroll
    for (int i = 0; i < T::N; i++) r2.v[i] = T::r2(i);
    return a * r2;
}

template <class T>
__device__ __forceinline__ Fp<T> from_mont(const Fp<T>& a) {
    Fp<T> one = Fp<T>::zero();
    one.v[0] = 1;
    return a * one;
}

// a^e for a little-endian exponent of `words` 32-bit words (square and multiply).
template <class T>
__device__ Fp<T> pow_words(const Fp<T>& a, const u32* e, int words) {
    Fp<T> r = Fp<T>::one();
    for (int w = words - 1; w >= 0; w--) {
        for (int bit = 31; bit >= 0; bit--) {
            r = r * r;
            if ((e[w] >> bit) & 1) r = r * a;
        }
    }
    return r;
}

// a^k for a small exponent k (square and multiply over 32 bits).
template <class T>
__device__ Fp<T> pow_u32(const Fp<T>& a, u32 k) {
    Fp<T> r = Fp<T>::one();
    Fp<T> base = a;
    while (k) {
        if (k & 1) r = r * base;
        base = base * base;
        k >>= 1;
    }
    return r;
}

// a^-1 = a^(m-2) (Fermat); 0 maps to 0.
template <class T>
__device__ Fp<T> inverse(const Fp<T>& a) {
    u32 e[T::N];
#pragma unroll
    for (int i = 0; i < T::N; i++) e[i] = T::mod(i);
    u32 borrow = e[0] < 2;  // m - 2 (Fr's low limb is 1: the borrow runs on)
    e[0] -= 2;
#pragma unroll
    for (int i = 1; i < T::N; i++) {
        u32 b = e[i] < borrow;
        e[i] -= borrow;
        borrow = b;
    }
    return pow_words(a, e, T::N);
}

// a^-1 by Kaliski's almost Montgomery inverse (binary; additions, subtractions and shifts
// only) instead of Fermat's ~600 products: phase 1 finds x = a^-1 2^k mod m (bits(m) <= k <=
// 2 bits(m)) with u = m, v = a, r = 0, s = 1 (invariant m = u s + v r, so r, s <= 2m: N
// limbs hold them); phase 2 doubles x (64 N - k) times mod m, giving a^-1 2^(64 N). For a
// Montgomery input a R (R = 2^(32 N)) that is a^-1 R^-1 R^2 = a^-1 R: the Montgomery form of
// the inverse. 0 maps to 0. Data-dependent trip counts: a warp runs its slowest lane's.
// Cost (Fq): ~540 phase-1 steps of a few 12-limb additions / shifts, ~230 doublings.
template <class T>
__device__ __forceinline__ u32 limbs_sub(u32* d, const u32* a, const u32* b) {  // d = a - b
    u64 borrow = 0;
#pragma unroll
    for (int i = 0; i < T::N; i++) {
        u64 t = (u64)a[i] - b[i] - borrow;
        d[i] = (u32)t;
        borrow = (t >> 32) & 1;
    }
    return (u32)borrow;
}
template <class T>
__device__ __forceinline__ void limbs_add(u32* d, const u32* a, const u32* b) {  // d = a + b
    u64 carry = 0;
#pragma unroll
    for (int i = 0; i < T::N; i++) {
        u64 t = (u64)a[i] + b[i] + carry;
        d[i] = (u32)t;
        carry = t >> 32;
    }
}
template <class T>
__device__ __forceinline__ void limbs_shr1(u32* a) {
#pragma unroll
    for (int i = 0; i < T::N - 1; i++) a[i] = (a[i] >> 1) | (a[i + 1] << 31);
    a[T::N - 1] >>= 1;
}
template <class T>
__device__ __forceinline__ void limbs_shl1(u32* a) {
#pragma unroll
    for (int i = T::N - 1; i > 0; i--) a[i] = (a[i] << 1) | (a[i - 1] >> 31);
    a[0] <<= 1;
}

template <class T>
__device__ __noinline__ Fp<T> inverse_binary(const Fp<T> a0) {
    const int N = T::N;
    const Fp<T> a = a0.canonical();  // the steps below need a < m
    if (a.is_zero()) return a;
    u32 u[T::N], v[T::N], r[T::N], s[T::N], t[T::N];
#pragma unroll
    for (int i = 0; i < N; i++) {
        u[i] = T::mod(i);
        v[i] = a.v[i];
        r[i] = 0;
        s[i] = 0;
    }
    s[0] = 1;
    int k = 0;
    for (;;) {
        u32 vz = 0;
#pragma unroll
        for (int i = 0; i < N; i++) vz |= v[i];
        if (vz == 0) break;
        bool u_step;  // halve u (after u - v when both are odd) or halve v
        if ((u[0] & 1) == 0) u_step = true;
        else if ((v[0] & 1) == 0) u_step = false;
        else u_step = limbs_sub<T>(t, v, u) != 0;  // v < u
        if (u_step) {
            if (u[0] & 1) {
                limbs_sub<T>(u, u, v);
                limbs_add<T>(r, r, s);
            }
            limbs_shr1<T>(u);
            limbs_shl1<T>(s);
        } else {
            if (v[0] & 1) {
                limbs_sub<T>(v, v, u);
                limbs_add<T>(s, s, r);
            }
            limbs_shr1<T>(v);
            limbs_shl1<T>(r);
        }
        k++;
    }
    Fp<T> x;
#pragma unroll
    for (int i = 0; i < N; i++) x.v[i] = r[i];
    x.reduce_once(0);  // r < 2m
    x = Fp<T>::zero() - x;  // m - r: a^-1 2^k
    for (; k < 64 * N; k++) x = x + x;
    return x;
}

// a^-1 by Bernstein-Yang divsteps (safegcd), 30 at a time: each round runs 30 divsteps on
// the low 30 bits of f and g only (they decide every step), giving a transition matrix
// (u v; q r) with |u| + |v|, |q| + |r| <= 2^30, then applies it to the whole f, g (exact
// division by 2^30) and to d, e mod m (f = d a, g = e a mod m; md m added to make the
// division exact, d, e kept in [0, m)). Numbers in signed 30-bit limbs (Fq: 13). When g = 0,
// f = +-1 and a^-1 = +-d. A Montgomery input a R gives a^-1 R^-1: two products by R^2 make it
// a^-1 R. Rounds: ~27 for Fq (a warp runs its slowest lane's, ~28), ~1 k instructions
// each. 0 maps to 0.
template <class T>
__device__ __forceinline__ void to_limbs30(int* out, const u32* in) {
    const int L = (32 * T::N + 29) / 30;
#pragma unroll
    for (int i = 0; i < L; i++) {
        const int bit = 30 * i, w = bit / 32, off = bit % 32;
        u64 pair = (u64)in[w] | ((w + 1 < T::N) ? (u64)in[w + 1] << 32 : 0);
        out[i] = (int)((pair >> off) & 0x3fffffffu);
    }
}

// out = x + (m if mask) in 30-bit limbs (top limb signed)
template <int L>
__device__ __forceinline__ void limbs30_add_masked(int* x, const int* m, int mask) {
    int c = 0;
#pragma unroll
    for (int i = 0; i < L - 1; i++) {
        c += x[i] + (m[i] & mask);
        x[i] = c & 0x3fffffff;
        c >>= 30;
    }
    x[L - 1] += c + (m[L - 1] & mask);
}

// x -= m when x >= m (x in [0, 2m))
template <int L>
__device__ __forceinline__ void limbs30_reduce(int* x, const int* m) {
    int t[L];
    int c = 0;
#pragma unroll
    for (int i = 0; i < L - 1; i++) {
        c += x[i] - m[i];
        t[i] = c & 0x3fffffff;
        c >>= 30;
    }
    t[L - 1] = x[L - 1] - m[L - 1] + c;
    const int keep = t[L - 1] >> 31;  // -1: x < m, keep x
#pragma unroll
    for (int i = 0; i < L; i++) x[i] = (x[i] & keep) | (t[i] & ~keep);
}

// (u x + v y) / 2^30 and (q x + r y) / 2^30 over 30-bit limbs, plus (mx, my) m (mx = my = 0
// for f, g); the low 30 bits of each sum are zero by construction.
template <int L>
__device__ __forceinline__ void limbs30_update(int* x, int* y, const int* m, int u, int v, int q,
                                               int r, int mx, int my) {
    long long cx = (long long)u * x[0] + (long long)v * y[0] + (long long)mx * m[0];
    long long cy = (long long)q * x[0] + (long long)r * y[0] + (long long)my * m[0];
    cx >>= 30;
    cy >>= 30;
#pragma unroll
    for (int i = 1; i < L; i++) {
        cx += (long long)u * x[i] + (long long)v * y[i] + (long long)mx * m[i];
        cy += (long long)q * x[i] + (long long)r * y[i] + (long long)my * m[i];
        x[i - 1] = (int)(cx & 0x3fffffff);
        y[i - 1] = (int)(cy & 0x3fffffff);
        cx >>= 30;
        cy >>= 30;
    }
    x[L - 1] = (int)cx;
    y[L - 1] = (int)cy;
}

template <class T>
__device__ __noinline__ Fp<T> inverse_safegcd(const Fp<T> a0) {
    const int N = T::N;
    const int L = (32 * T::N + 29) / 30;
    const Fp<T> a = a0.canonical();  // the limbs below need a < m
    if (a.is_zero()) return a;
    u32 mw[T::N];
#pragma unroll
    for (int i = 0; i < N; i++) mw[i] = T::mod(i);
    int m[L], f[L], g[L], d[L], e[L];
    to_limbs30<T>(m, mw);
    to_limbs30<T>(g, a.v);
#pragma unroll
    for (int i = 0; i < L; i++) {
        f[i] = m[i];
        d[i] = 0;
        e[i] = 0;
    }
    e[0] = 1;
    const u32 mneg = T::INV & 0x3fffffffu;  // -m^-1 mod 2^30
    int delta = 1;
    for (int round = 0; round < 64; round++) {
        int gz = 0;
#pragma unroll
        for (int i = 0; i < L; i++) gz |= g[i];
        if (gz == 0) break;
        u32 fl = (u32)f[0], gl = (u32)g[0];
        int u = 1, v = 0, q = 0, r = 1;
        for (int i = 0; i < 30; i++) {
            if (delta > 0 && (gl & 1)) {  // (f, g) <- (g, -f), delta <- -delta
                u32 tf = fl;
                fl = gl;
                gl = 0u - tf;
                int tu = u, tv = v;
                u = q;
                v = r;
                q = -tu;
                r = -tv;
                delta = -delta;
            }
            if (gl & 1) {
                gl += fl;
                q += u;
                r += v;
            }
            delta++;
            gl >>= 1;
            u <<= 1;
            v <<= 1;
        }
        limbs30_update<L>(f, g, m, u, v, q, r, 0, 0);
        const u32 cd = (u32)u * (u32)d[0] + (u32)v * (u32)e[0];
        const u32 ce = (u32)q * (u32)d[0] + (u32)r * (u32)e[0];
        const int md = (int)((mneg * cd) & 0x3fffffffu), me = (int)((mneg * ce) & 0x3fffffffu);
        limbs30_update<L>(d, e, m, u, v, q, r, md, me);  // now in (-m, 2m)
        limbs30_add_masked<L>(d, m, d[L - 1] >> 31);
        limbs30_add_masked<L>(e, m, e[L - 1] >> 31);
        limbs30_reduce<L>(d, m);
        limbs30_reduce<L>(e, m);
    }
    // f = +-1: a^-1 = f d
    int dz = 0;
#pragma unroll
    for (int i = 0; i < L; i++) dz |= d[i];
    if (f[L - 1] < 0 && dz != 0) {  // m - d
        int c = 0;
#pragma unroll
        for (int i = 0; i < L - 1; i++) {
            c += m[i] - d[i];
            d[i] = c & 0x3fffffff;
            c >>= 30;
        }
        d[L - 1] = m[L - 1] - d[L - 1] + c;
    }
    Fp<T> y;
    u64 acc = 0;
    int nbits = 0, w = 0;
#pragma unroll
    for (int i = 0; i < L; i++) {
        acc |= (u64)(u32)d[i] << nbits;
        nbits += 30;
        if (nbits >= 32 && w < N) {
            y.v[w++] = (u32)acc;
            acc >>= 32;
            nbits -= 32;
        }
    }
    for (; w < N; w++) {
        y.v[w] = (u32)acc;
        acc >>= 32;
    }
    return to_mont(to_mont(y));  // (a R)^-1 R^2 = a^-1 R
}

typedef Fp<FrTraits> Fr;
typedef Fp<FqTraits> Fq;

// Two independent products: with FIELD_MUL_PAIRS=1 (and the wide product) one call runs
// both, and ptxas interleaves their carry chains (each waits only on its own carry
// predicate), so a thread has two products in flight; else two calls, as `*`.
#define FIELD_PAIRED (FIELD_MUL_PAIRS && FIELD_MUL_WIDE && !FIELD_MUL_PTX)
template <class F>
struct Two {
    F x, y;
};
template <class T>
__device__ __noinline__ Two<Fp<T>> mont_mul_pair(const Fp<T> a, const Fp<T> b, const Fp<T> c,
                                                 const Fp<T> d) {
    return {mont_mul_wide_body(a, b), mont_mul_wide_body(c, d)};
}
template <class F>
__device__ __forceinline__ Two<F> mul_pair(const F& a, const F& b, const F& c, const F& d) {
    return {a * b, c * d};
}
template <class T>
__device__ __forceinline__ Two<Fp<T>> mul_pair(const Fp<T>& a, const Fp<T>& b, const Fp<T>& c,
                                               const Fp<T>& d) {
#if FIELD_PAIRED
    return mont_mul_pair(a, b, c, d);
#else
    return {a * b, c * d};
#endif
}

// Fq2 = Fq[u]/(u^2 + 1): c0 + c1 u, over FqU: the same field as Fq with a traits type of its
// own, so that lazy reduction (FIELD_LAZY) can be on for G1's Fq and off for G2's (FQ2_LAZY:
// measured slower there; docs/benchmarks.md).
struct FqUTraits : FqTraits {};
template <>
struct Lazy<FqUTraits> {
    static const bool on = FQ2_LAZY && Lazy<FqTraits>::on;
    __device__ static __forceinline__ u32 bound(int i) { return on ? FQ_P2[i] : FQ_P[i]; }
};
typedef Fp<FqUTraits> FqU;
struct Fq2 {
    FqU c0, c1;
    __device__ static __forceinline__ Fq2 zero() { return {FqU::zero(), FqU::zero()}; }
    __device__ static __forceinline__ Fq2 one() { return {FqU::one(), FqU::zero()}; }
    __device__ static __forceinline__ Fq2 load(const u32* p) {
        return {FqU::load(p), FqU::load(p + 12)};
    }
    __device__ __forceinline__ void store(u32* p) const {
        c0.store(p);
        c1.store(p + 12);
    }
    __device__ __forceinline__ bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
    __device__ __forceinline__ bool operator==(const Fq2& b) const {
        return c0 == b.c0 && c1 == b.c1;
    }
};

__device__ __forceinline__ Fq2 operator+(const Fq2& a, const Fq2& b) {
    return {a.c0 + b.c0, a.c1 + b.c1};
}
__device__ __forceinline__ Fq2 operator-(const Fq2& a, const Fq2& b) {
    return {a.c0 - b.c0, a.c1 - b.c1};
}
__device__ __forceinline__ Fq2 operator-(const Fq2& a) { return {-a.c0, -a.c1}; }

// (a0 + a1 u)(b0 + b1 u) = (a0 b0 - a1 b1) + ((a0 + a1)(b0 + b1) - a0 b0 - a1 b1) u
__device__ __noinline__ Fq2 fq2_mul(const Fq2 a, const Fq2 b) {
#if FIELD_PAIRED  // three independent products in one body
    FqU s = a.c0 + a.c1, u = b.c0 + b.c1;
    FqU t0 = mont_mul_wide_body(a.c0, b.c0);
    FqU t1 = mont_mul_wide_body(a.c1, b.c1);
    FqU t2 = mont_mul_wide_body(s, u);
#else
    FqU t0 = a.c0 * b.c0;
    FqU t1 = a.c1 * b.c1;
    FqU t2 = (a.c0 + a.c1) * (b.c0 + b.c1);
#endif
    return {t0 - t1, t2 - t0 - t1};
}

__device__ __forceinline__ Fq2 operator*(const Fq2& a, const Fq2& b) { return fq2_mul(a, b); }

// (a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u: 2 products instead of 3
__device__ __noinline__ Fq2 fq2_sqr(const Fq2 a) {
#if FIELD_PAIRED
    FqU s = a.c0 + a.c1, d = a.c0 - a.c1;
    FqU t = mont_mul_wide_body(a.c0, a.c1);
    FqU r0 = mont_mul_wide_body(s, d);
    return {r0, t + t};
#else
    FqU t = a.c0 * a.c1;
    return {(a.c0 + a.c1) * (a.c0 - a.c1), t + t};
#endif
}

// x^2: the curve formulas square through this (Fq2: 2 products; FqU: the dedicated square
// with FIELD_SQR=1, else the product; Fr: the product)
template <class T>
__device__ __forceinline__ Fp<T> sqr(const Fp<T>& a) {
    return a * a;
}
#if FIELD_SQR && FIELD_MUL_WIDE && !FIELD_MUL_PTX
__device__ __forceinline__ Fq sqr(const Fq& a) { return mont_sqr_wide(a); }
#endif
__device__ __forceinline__ Fq2 sqr(const Fq2& a) {
#if FQ2_SQR
    return fq2_sqr(a);
#else
    return fq2_mul(a, a);
#endif
}

// {a^2, b^2}: a pair of products for Fp, two squares otherwise
template <class F>
__device__ __forceinline__ Two<F> sqr_pair(const F& a, const F& b) {
    return {sqr(a), sqr(b)};
}
template <class T>
__device__ __forceinline__ Two<Fp<T>> sqr_pair(const Fp<T>& a, const Fp<T>& b) {
    return mul_pair(a, a, b, b);
}

// (a0 + a1 u)^-1 = (a0 - a1 u) / (a0^2 + a1^2)
__device__ __forceinline__ Fq2 inverse(const Fq2& a) {
    FqU norm_inv = inverse(a.c0 * a.c0 + a.c1 * a.c1);
    return {a.c0 * norm_inv, -(a.c1 * norm_inv)};
}

// the same through the binary inverse of the norm (the affine batch accumulation)
__device__ __forceinline__ Fq2 inverse_binary(const Fq2& a) {
    FqU norm_inv = inverse_binary(a.c0 * a.c0 + a.c1 * a.c1);
    return {a.c0 * norm_inv, -(a.c1 * norm_inv)};
}

__device__ __forceinline__ Fq2 inverse_safegcd(const Fq2& a) {
    FqU norm_inv = inverse_safegcd(a.c0 * a.c0 + a.c1 * a.c1);
    return {a.c0 * norm_inv, -(a.c1 * norm_inv)};
}

__device__ __forceinline__ Fq2 to_mont(const Fq2& a) { return {to_mont(a.c0), to_mont(a.c1)}; }
__device__ __forceinline__ Fq2 from_mont(const Fq2& a) {
    return {from_mont(a.c0), from_mont(a.c1)};
}
