// kernels/x86/gdn_body: the Gated DeltaNet kernels written once over a vector type (V::W lanes), built by
// x86/gdn_avx2.cpp (8 lanes) and x86/gdn_avx512.cpp (16 lanes). Include only from those files.
// Scalar tails use fmaf, so an element computed in a tail rounds exactly as in a vector lane.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/kernels.h"

namespace bee::gdn_body {

// kernels.h conv1d_step.
template <class V>
void conv1d_step(float* state, const float* taps, int k, int64_t ld, const float* x, float* y, int64_t n) {
    int64_t c = 0;
    for (; c + V::W <= n; c += V::W) {
        typename V::T acc = V::zero();
        if (k >= 2) acc = V::mul(V::load(taps + c), V::load(state + c));
        for (int i = 1; i + 1 < k; i++)
            acc = V::fmadd(V::load(taps + (int64_t)i * ld + c), V::load(state + (int64_t)i * ld + c), acc);
        const typename V::T xv = V::load(x + c);
        V::store(y + c, V::fmadd(V::load(taps + (int64_t)(k - 1) * ld + c), xv, acc));
        for (int i = 0; i + 2 < k; i++)
            V::store(state + (int64_t)i * ld + c, V::load(state + (int64_t)(i + 1) * ld + c));
        if (k >= 2) V::store(state + (int64_t)(k - 2) * ld + c, xv);
    }
    for (; c < n; c++) {
        float acc = k >= 2 ? taps[c] * state[c] : 0.0f;
        for (int i = 1; i + 1 < k; i++) acc = fmaf(taps[(int64_t)i * ld + c], state[(int64_t)i * ld + c], acc);
        const float xc = x[c];
        y[c] = fmaf(taps[(int64_t)(k - 1) * ld + c], xc, acc);
        for (int i = 0; i + 2 < k; i++) state[(int64_t)i * ld + c] = state[(int64_t)(i + 1) * ld + c];
        if (k >= 2) state[(int64_t)(k - 2) * ld + c] = xc;
    }
}

// gdn_step for rows of DK floats (a multiple of 2 V::W) held in registers: each row is loaded and stored
// once. The same operations in the same order as the general loop below, so the same bits.
template <class V, int DK>
void gdn_step_fixed(float* M, int dv, const float* q, const float* k, const float* v, float e, float beta, float scale,
                    float* o) {
    constexpr int N = DK / V::W;
    static_assert(DK % (2 * V::W) == 0, "pairs of vectors");
    const typename V::T ve = V::set1(e);
    for (int j = 0; j < dv; j++) {
        float* r = M + (int64_t)j * DK;
        typename V::T x[N];
        typename V::T a0 = V::zero(), a1 = V::zero();
#pragma GCC unroll 16
        for (int i = 0; i < N; i += 2) {
            x[i] = V::mul(ve, V::load(r + i * V::W));
            x[i + 1] = V::mul(ve, V::load(r + (i + 1) * V::W));
            a0 = V::fmadd(x[i], V::load(k + i * V::W), a0);
            a1 = V::fmadd(x[i + 1], V::load(k + (i + 1) * V::W), a1);
        }
        const float d = beta * (v[j] - V::hsum(V::add(a0, a1)));
        const typename V::T vd = V::set1(d);
        a0 = V::zero();
        a1 = V::zero();
#pragma GCC unroll 16
        for (int i = 0; i < N; i += 2) {
            x[i] = V::fmadd(vd, V::load(k + i * V::W), x[i]);
            x[i + 1] = V::fmadd(vd, V::load(k + (i + 1) * V::W), x[i + 1]);
            V::store(r + i * V::W, x[i]);
            V::store(r + (i + 1) * V::W, x[i + 1]);
            a0 = V::fmadd(x[i], V::load(q + i * V::W), a0);
            a1 = V::fmadd(x[i + 1], V::load(q + (i + 1) * V::W), a1);
        }
        o[j] = scale * V::hsum(V::add(a0, a1));
    }
}

// kernels.h gdn_step. note: in the general loop each row is read twice (the dot with k must be complete
// before the update) and e·M is recomputed in the second pass instead of stored; 128-wide heads (every
// Qwen3.5 size) take gdn_step_fixed, which keeps the row in registers between the two passes.
template <class V>
void gdn_step(float* M, int dk, int dv, const float* q, const float* k, const float* v, float g, float beta,
              float scale, float* o) {
    const float e = expf(g);
    if (dk == 128) return gdn_step_fixed<V, 128>(M, dv, q, k, v, e, beta, scale, o);
    const typename V::T ve = V::set1(e);
    for (int j = 0; j < dv; j++) {
        float* r = M + (int64_t)j * dk;  // (dk) row j of the transposed state
        typename V::T a0 = V::zero(), a1 = V::zero();
        int i = 0;
        for (; i + 2 * V::W <= dk; i += 2 * V::W) {
            a0 = V::fmadd(V::mul(ve, V::load(r + i)), V::load(k + i), a0);
            a1 = V::fmadd(V::mul(ve, V::load(r + i + V::W)), V::load(k + i + V::W), a1);
        }
        for (; i + V::W <= dk; i += V::W) a0 = V::fmadd(V::mul(ve, V::load(r + i)), V::load(k + i), a0);
        float s = V::hsum(V::add(a0, a1));
        for (; i < dk; i++) s = fmaf(e * r[i], k[i], s);
        const float d = beta * (v[j] - s);
        const typename V::T vd = V::set1(d);
        a0 = V::zero();
        a1 = V::zero();
        i = 0;
        for (; i + 2 * V::W <= dk; i += 2 * V::W) {
            const typename V::T n0 = V::fmadd(vd, V::load(k + i), V::mul(ve, V::load(r + i)));
            const typename V::T n1 = V::fmadd(vd, V::load(k + i + V::W), V::mul(ve, V::load(r + i + V::W)));
            V::store(r + i, n0);
            V::store(r + i + V::W, n1);
            a0 = V::fmadd(n0, V::load(q + i), a0);
            a1 = V::fmadd(n1, V::load(q + i + V::W), a1);
        }
        for (; i + V::W <= dk; i += V::W) {
            const typename V::T n0 = V::fmadd(vd, V::load(k + i), V::mul(ve, V::load(r + i)));
            V::store(r + i, n0);
            a0 = V::fmadd(n0, V::load(q + i), a0);
        }
        float a = V::hsum(V::add(a0, a1));
        for (; i < dk; i++) {
            r[i] = fmaf(d, k[i], e * r[i]);
            a = fmaf(r[i], q[i], a);
        }
        o[j] = scale * a;
    }
}

// kernels.h gdn_steps for rows of DK floats: R rows at a time stay in registers through a chunk of tokens
// (whose q and k stay in L1), with gdn_step_fixed's operations per row and token, so the same bits.
// note: one row's tokens form a dependency chain (two horizontal sums each); R independent rows overlap
// their chains and share the loads of k and q.
template <class V, int DK, int R>
void gdn_rows_tokens(float* M, int j0, const GdnTokens& t, int t0, int nt, const float* e, float scale) {
    constexpr int N = DK / V::W;
    typename V::T x[R][N];
#pragma GCC unroll 16
    for (int r = 0; r < R; r++)
#pragma GCC unroll 16
        for (int i = 0; i < N; i++) x[r][i] = V::load(M + (int64_t)(j0 + r) * DK + i * V::W);
    for (int tt = 0; tt < nt; tt++) {
        const int64_t ti = t0 + tt;
        const float* k = t.k + ti * t.qk_stride;
        const float* q = t.q + ti * t.qk_stride;
        const typename V::T ve = V::set1(e[tt]);
        typename V::T a0[R], a1[R];
#pragma GCC unroll 16
        for (int r = 0; r < R; r++) a0[r] = a1[r] = V::zero();
#pragma GCC unroll 16
        for (int i = 0; i < N; i += 2) {
            const typename V::T k0 = V::load(k + i * V::W), k1 = V::load(k + (i + 1) * V::W);
#pragma GCC unroll 16
            for (int r = 0; r < R; r++) {
                x[r][i] = V::mul(ve, x[r][i]);
                x[r][i + 1] = V::mul(ve, x[r][i + 1]);
                a0[r] = V::fmadd(x[r][i], k0, a0[r]);
                a1[r] = V::fmadd(x[r][i + 1], k1, a1[r]);
            }
        }
        const float beta = t.beta[ti * t.gb_stride];
        const float* v = t.v + ti * t.v_stride + j0;
        typename V::T vd[R];
#pragma GCC unroll 16
        for (int r = 0; r < R; r++) {
            vd[r] = V::set1(beta * (v[r] - V::hsum(V::add(a0[r], a1[r]))));
            a0[r] = a1[r] = V::zero();
        }
#pragma GCC unroll 16
        for (int i = 0; i < N; i += 2) {
            const typename V::T k0 = V::load(k + i * V::W), k1 = V::load(k + (i + 1) * V::W);
            const typename V::T q0 = V::load(q + i * V::W), q1 = V::load(q + (i + 1) * V::W);
#pragma GCC unroll 16
            for (int r = 0; r < R; r++) {
                x[r][i] = V::fmadd(vd[r], k0, x[r][i]);
                x[r][i + 1] = V::fmadd(vd[r], k1, x[r][i + 1]);
                a0[r] = V::fmadd(x[r][i], q0, a0[r]);
                a1[r] = V::fmadd(x[r][i + 1], q1, a1[r]);
            }
        }
        float* o = t.o + ti * t.o_stride + j0;
#pragma GCC unroll 16
        for (int r = 0; r < R; r++) o[r] = scale * V::hsum(V::add(a0[r], a1[r]));
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; r++)
#pragma GCC unroll 16
        for (int i = 0; i < N; i++) V::store(M + (int64_t)(j0 + r) * DK + i * V::W, x[r][i]);
}

template <class V, int DK>
void gdn_steps_fixed(float* M, int dv, const GdnTokens& t, float scale) {
    constexpr int kChunk = 16;
    constexpr int R = V::W == 16 ? 2 : 1;  // 2 x 8 zmm rows; 16 ymm registers hold less than one
    float e[kChunk];
    for (int t0 = 0; t0 < t.n; t0 += kChunk) {
        const int nt = std::min(kChunk, t.n - t0);
        for (int i = 0; i < nt; i++) e[i] = expf(t.g[(t0 + i) * t.gb_stride]);
        int j = 0;
        for (; j + R <= dv; j += R) gdn_rows_tokens<V, DK, R>(M, j, t, t0, nt, e, scale);
        for (; j < dv; j++) gdn_rows_tokens<V, DK, 1>(M, j, t, t0, nt, e, scale);
    }
}

template <class V>
void gdn_steps(float* M, int dk, int dv, const GdnTokens& t, float scale) {
    if (dk == 128) return gdn_steps_fixed<V, 128>(M, dv, t, scale);
    for (int i = 0; i < t.n; i++)
        gdn_step<V>(M, dk, dv, t.q + i * t.qk_stride, t.k + i * t.qk_stride, t.v + i * t.v_stride, t.g[i * t.gb_stride],
                    t.beta[i * t.gb_stride], scale, t.o + i * t.o_stride);
}

}  // namespace bee::gdn_body
