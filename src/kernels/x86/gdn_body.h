// kernels/x86/gdn_body: the Gated DeltaNet kernels written once over a vector type (V::W lanes), built by
// x86/gdn_avx2.cpp (8 lanes) and x86/gdn_avx512.cpp (16 lanes). Include only from those files.
// Scalar tails use fmaf, so an element computed in a tail rounds exactly as in a vector lane.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

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

// kernels.h gdn_step. note: each row is read twice while it sits in L1 (the dot with k must be complete
// before the update), and e·M is recomputed in the second pass instead of stored.
template <class V>
void gdn_step(float* M, int dk, int dv, const float* q, const float* k, const float* v, float g, float beta,
              float scale, float* o) {
    const float e = expf(g);
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

}  // namespace bee::gdn_body
