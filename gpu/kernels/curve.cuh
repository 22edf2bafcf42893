// Short Weierstrass curves y^2 = x^3 + b with a = 0 (BLS12-381 G1 over Fq, G2 over Fq2),
// points in Jacobian coordinates (x, y) = (X / Z^2, Y / Z^3); Z = 0 is infinity.
// Affine points in memory: x then y (Montgomery limbs); (0, 0) encodes infinity (it is not
// on either curve since b != 0). Formulas: Bernstein-Lange EFD, a = 0.
// Macros expected: none. Needs field.cuh.
#pragma once
#include "field.cuh"

template <class F>
struct Affine {
    F x, y;
    __device__ __forceinline__ bool is_inf() const { return x.is_zero() && y.is_zero(); }
};

template <class F>
struct Jacobian {
    F x, y, z;
    __device__ static __forceinline__ Jacobian inf() { return {F::one(), F::one(), F::zero()}; }
    __device__ __forceinline__ bool is_inf() const { return z.is_zero(); }
    __device__ static __forceinline__ Jacobian from_affine(const Affine<F>& p) {
        if (p.is_inf()) return inf();
        return {p.x, p.y, F::one()};
    }
};

// dbl-2009-l: A = X^2, B = Y^2, C = B^2, D = 2((X + B)^2 - A - C), E = 3A, F = E^2,
// X3 = F - 2D, Y3 = E (D - X3) - 8C, Z3 = 2 Y Z
template <class F>
__device__ __noinline__ Jacobian<F> dbl(const Jacobian<F> p) {
    if (p.is_inf()) return p;
    F A = sqr(p.x);
    F B = sqr(p.y);
    F C = sqr(B);
    F t = p.x + B;
    F D = sqr(t) - A - C;
    D = D + D;
    F E = A + A + A;
    F FF = sqr(E);
    F x3 = FF - D - D;
    F C8 = C + C;
    C8 = C8 + C8;
    C8 = C8 + C8;
    F y3 = E * (D - x3) - C8;
    F z3 = p.y * p.z;
    z3 = z3 + z3;
    return {x3, y3, z3};
}

// madd-2007-bl (Z2 = 1): Z1Z1 = Z1^2, U2 = X2 Z1Z1, S2 = Y2 Z1 Z1Z1, H = U2 - X1, HH = H^2,
// I = 4 HH, J = H I, r = 2 (S2 - Y1), V = X1 I, X3 = r^2 - J - 2V, Y3 = r (V - X3) - 2 Y1 J,
// Z3 = (Z1 + H)^2 - Z1Z1 - HH
template <class F>
__device__ __noinline__ Jacobian<F> add_mixed(const Jacobian<F> p, const Affine<F> q) {
    if (q.is_inf()) return p;
    if (p.is_inf()) return Jacobian<F>::from_affine(q);
    F Z1Z1 = sqr(p.z);
    F U2 = q.x * Z1Z1;
    F S2 = q.y * p.z * Z1Z1;
    F H = U2 - p.x;
    F r = S2 - p.y;
    if (H.is_zero()) {
        if (r.is_zero()) return dbl(p);
        return Jacobian<F>::inf();
    }
    r = r + r;
    F HH = sqr(H);
    F I = HH + HH;
    I = I + I;
    F J = H * I;
    F V = p.x * I;
    F x3 = sqr(r) - J - V - V;
    F Y1J = p.y * J;
    F y3 = r * (V - x3) - Y1J - Y1J;
    F t = p.z + H;
    F z3 = sqr(t) - Z1Z1 - HH;
    return {x3, y3, z3};
}

// add-2007-bl: U1 = X1 Z2Z2, U2 = X2 Z1Z1, S1 = Y1 Z2 Z2Z2, S2 = Y2 Z1 Z1Z1, H = U2 - U1,
// I = (2H)^2, J = H I, r = 2 (S2 - S1), V = U1 I, X3 = r^2 - J - 2V,
// Y3 = r (V - X3) - 2 S1 J, Z3 = ((Z1 + Z2)^2 - Z1Z1 - Z2Z2) H
template <class F>
__device__ __noinline__ Jacobian<F> add(const Jacobian<F> p, const Jacobian<F> q) {
    if (q.is_inf()) return p;
    if (p.is_inf()) return q;
    F Z1Z1 = sqr(p.z);
    F Z2Z2 = sqr(q.z);
    F U1 = p.x * Z2Z2;
    F U2 = q.x * Z1Z1;
    F S1 = p.y * q.z * Z2Z2;
    F S2 = q.y * p.z * Z1Z1;
    F H = U2 - U1;
    F r = S2 - S1;
    if (H.is_zero()) {
        if (r.is_zero()) return dbl(p);
        return Jacobian<F>::inf();
    }
    r = r + r;
    F H2 = H + H;
    F I = sqr(H2);
    F J = H * I;
    F V = U1 * I;
    F x3 = sqr(r) - J - V - V;
    F S1J = S1 * J;
    F y3 = r * (V - x3) - S1J - S1J;
    F t = p.z + q.z;
    F z3 = (sqr(t) - Z1Z1 - Z2Z2) * H;
    return {x3, y3, z3};
}

// k P for a small k (double and add, most significant bit first).
template <class F>
__device__ Jacobian<F> mul_u32(const Jacobian<F>& p, u32 k) {
    Jacobian<F> acc = Jacobian<F>::inf();
    for (int bit = 31 - __clz(k | 1); bit >= 0; bit--) {
        acc = dbl(acc);
        if ((k >> bit) & 1) acc = add(acc, p);
    }
    return acc;
}

// (X / Z^2, Y / Z^3); infinity -> (0, 0)
template <class F>
__device__ Affine<F> to_affine(const Jacobian<F>& p) {
    if (p.is_inf()) return {F::zero(), F::zero()};
    F zi = inverse(p.z);
    F zi2 = sqr(zi);
    return {p.x * zi2, p.y * zi2 * zi};
}

template <class F>
__device__ __forceinline__ Affine<F> load_affine(const u32* p) {
    const int W = sizeof(F) / 4;
    return {F::load(p), F::load(p + W)};
}

template <class F>
__device__ __forceinline__ void store_affine(u32* p, const Affine<F>& a) {
    const int W = sizeof(F) / 4;
    a.x.store(p);
    a.y.store(p + W);
}

template <class F>
__device__ __forceinline__ Jacobian<F> load_jacobian(const u32* p) {
    const int W = sizeof(F) / 4;
    return {F::load(p), F::load(p + W), F::load(p + 2 * W)};
}

template <class F>
__device__ __forceinline__ void store_jacobian(u32* p, const Jacobian<F>& a) {
    const int W = sizeof(F) / 4;
    a.x.store(p);
    a.y.store(p + W);
    a.z.store(p + 2 * W);
}
