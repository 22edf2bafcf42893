// Montgomery arithmetic over the BLS12-381 fields, 32-bit limbs, little-endian.
//
// Fr: the scalar field r (255 bits, 8 limbs); Fq: the base field p (381 bits, 12 limbs);
// Fq2 = Fq[u] / (u^2 + 1). An element x is held as x * 2^(32 N) mod m (Montgomery form).
// Multiplication is CIOS (Koc, Acar, Kaliski 1996) with 64-bit partial products.
// Macro: FIELD_MUL_WIDE (default 1) 1 computes the product with 64-bit carry chains over
// limb pairs (one IMAD.WIDE.U32.X per partial product; see mont_mul_wide); 0 selects the
// 64-bit C product (the kernels of 2026-12-01 06:33 UTC): the field's baseline, kept for
// side-by-side benchmarks (benchmarks/gpu_bench.py `old`). With the wide product, Fq values
// of G1 lie in [0, 2m) in registers (lazy reduction): the product skips its final
// conditional subtraction (inputs < 2m give an output < 2m since 4m < 2^384), additions and
// subtractions reduce against 2m, is_zero and == compare mod m, and store() writes the
// canonical value (< m), so memory, and every result, is as with canonical values (G1
// accumulation 5 % faster); Fr and G2's Fq2 stay canonical. Fq2 squares take 2 products
// (fq2_sqr). The product is a called (__noinline__) function.
// Retired (issue 29; measured on the H200, lost, figures in docs/benchmarks.md and its
// history): FIELD_MUL_INLINE, FIELD_MUL_PTX, FIELD_MUL_PAIRS, FIELD_SQR (mont_sqr_wide),
// FIELD_LAZY=0, FQ2_LAZY=1, FQ2_SQR=0, and the binary and divsteps inverses of the affine
// batch accumulation.
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

#ifndef FIELD_MUL_WIDE
#define FIELD_MUL_WIDE 1
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

// Lazy reduction (with the wide product): which fields hold values in [0, 2m) between operations and
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
    static const bool on = FIELD_MUL_WIDE;
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
    // memory holds canonical values (< m), whatever the registers hold (lazy reduction)
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
// 0), od = a_odd b_i.
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
__device__ __noinline__ Fp<T> mont_mul_wide(const Fp<T> a, const Fp<T> b) {
    return mont_mul_wide_body(a, b);
}

// The product inlined into its caller (the NTT's butterflies: short kernels with registers
// to spare, where a call boundary would keep two products from overlapping).
template <class T>
__device__ __forceinline__ Fp<T> mul_inline(const Fp<T>& a, const Fp<T>& b) {
#if FIELD_MUL_WIDE
    return mont_mul_wide_body(a, b);
#else
    return a * b;
#endif
}

// Montgomery product a * b * 2^(-32N) mod m (CIOS). The curve formulas that call it are not
// inlined (see curve.cuh), which keeps NVRTC's compile time bounded.
template <class T>
__device__ __noinline__ Fp<T> mont_mul(const Fp<T> a, const Fp<T> b) {
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

template <class T>
__device__ __forceinline__ Fp<T> operator*(const Fp<T>& a, const Fp<T>& b) {
#if FIELD_MUL_WIDE
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

typedef Fp<FrTraits> Fr;
typedef Fp<FqTraits> Fq;

// Fq2 = Fq[u]/(u^2 + 1): c0 + c1 u, over FqU: the same field as Fq with a traits type of its
// own, so that lazy reduction can be on for G1's Fq and off for G2's (on there too, FQ2_LAZY,
// it measured slower: more code, more spills; retired, issue 29).
struct FqUTraits : FqTraits {};
template <>
struct Lazy<FqUTraits> {
    static const bool on = false;
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
    FqU t0 = a.c0 * b.c0;
    FqU t1 = a.c1 * b.c1;
    FqU t2 = (a.c0 + a.c1) * (b.c0 + b.c1);
    return {t0 - t1, t2 - t0 - t1};
}

__device__ __forceinline__ Fq2 operator*(const Fq2& a, const Fq2& b) { return fq2_mul(a, b); }

// (a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u: 2 products instead of 3
__device__ __noinline__ Fq2 fq2_sqr(const Fq2 a) {
    FqU t = a.c0 * a.c1;
    return {(a.c0 + a.c1) * (a.c0 - a.c1), t + t};
}

// x^2: the curve formulas square through this (Fq2: 2 products; Fq, Fr: the product)
template <class T>
__device__ __forceinline__ Fp<T> sqr(const Fp<T>& a) {
    return a * a;
}
__device__ __forceinline__ Fq2 sqr(const Fq2& a) {
    return fq2_sqr(a);
}

// (a0 + a1 u)^-1 = (a0 - a1 u) / (a0^2 + a1^2)
__device__ __forceinline__ Fq2 inverse(const Fq2& a) {
    FqU norm_inv = inverse(a.c0 * a.c0 + a.c1 * a.c1);
    return {a.c0 * norm_inv, -(a.c1 * norm_inv)};
}

__device__ __forceinline__ Fq2 to_mont(const Fq2& a) { return {to_mont(a.c0), to_mont(a.c1)}; }
__device__ __forceinline__ Fq2 from_mont(const Fq2& a) {
    return {from_mont(a.c0), from_mont(a.c1)};
}
