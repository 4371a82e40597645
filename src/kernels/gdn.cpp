// kernels/gdn: the Gated DeltaNet kernels (short causal conv, delta-rule state update, L2 norm, sigmoid
// gate), dispatched to AVX-512, AVX2 or the scalar reference.
#include <cmath>

#include "base/cpu.h"
#include "kernels/kernels.h"
#include "kernels/kernels_impl.h"

namespace bee {

void l2_norm(const float* x, float* y, int64_t n, float eps) {
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += (double)x[i] * (double)x[i];
    const float s = 1.0f / fmaxf(sqrtf((float)sum), eps);
    for (int64_t i = 0; i < n; i++) y[i] = x[i] * s;
}

void sigmoid_mul(float* x, const float* g, int64_t n) {
    if (cpu_isa() >= Isa::avx2) return avx2_ops::sigmoid_mul(x, g, n);
    for (int64_t i = 0; i < n; i++) x[i] = x[i] / (1.0f + expf(-g[i]));
}

void conv1d_step(float* state, const float* taps, int k, int64_t ld, const float* x, float* y, int64_t n) {
    if (cpu_isa() >= Isa::avx512) return avx512_ops::conv1d_step(state, taps, k, ld, x, y, n);
    if (cpu_isa() >= Isa::avx2) return avx2_ops::conv1d_step(state, taps, k, ld, x, y, n);
    ref::conv1d_step(state, taps, k, ld, x, y, n);
}

void gdn_step(float* M, int dk, int dv, const float* q, const float* k, const float* v, float g, float beta,
              float scale, float* o) {
    if (cpu_isa() >= Isa::avx512) return avx512_ops::gdn_step(M, dk, dv, q, k, v, g, beta, scale, o);
    if (cpu_isa() >= Isa::avx2) return avx2_ops::gdn_step(M, dk, dv, q, k, v, g, beta, scale, o);
    ref::gdn_step(M, dk, dv, q, k, v, g, beta, scale, o);
}

void gdn_steps(float* M, int dk, int dv, const GdnTokens& t, float scale) {
    if (cpu_isa() >= Isa::avx512) return avx512_ops::gdn_steps(M, dk, dv, t, scale);
    if (cpu_isa() >= Isa::avx2) return avx2_ops::gdn_steps(M, dk, dv, t, scale);
    for (int i = 0; i < t.n; i++)
        ref::gdn_step(M, dk, dv, t.q + i * t.qk_stride, t.k + i * t.qk_stride, t.v + i * t.v_stride,
                      t.g[i * t.gb_stride], t.beta[i * t.gb_stride], scale, t.o + i * t.o_stride);
}

}  // namespace bee
