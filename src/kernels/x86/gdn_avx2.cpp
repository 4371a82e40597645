// kernels/x86/gdn_avx2: the Gated DeltaNet kernels on 8 lanes (x86/gdn_body.h) and the sigmoid gate.
#include "kernels/kernels_impl.h"
#include "kernels/simd_avx2.h"
#include "kernels/x86/gdn_body.h"

namespace bee::avx2_ops {

namespace {
struct V8 {
    using T = __m256;
    static constexpr int W = 8;
    static T load(const float* p) { return _mm256_loadu_ps(p); }
    static void store(float* p, T v) { _mm256_storeu_ps(p, v); }
    static T set1(float x) { return _mm256_set1_ps(x); }
    static T zero() { return _mm256_setzero_ps(); }
    static T mul(T a, T b) { return _mm256_mul_ps(a, b); }
    static T add(T a, T b) { return _mm256_add_ps(a, b); }
    static T fmadd(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
    static float hsum(T v) { return avx2::hsum_f32x8(v); }
};
}  // namespace

void conv1d_step(float* state, const float* taps, int k, int64_t ld, const float* x, float* y, int64_t n) {
    gdn_body::conv1d_step<V8>(state, taps, k, ld, x, y, n);
}

void gdn_step(float* M, int dk, int dv, const float* q, const float* k, const float* v, float g, float beta,
              float scale, float* o) {
    gdn_body::gdn_step<V8>(M, dk, dv, q, k, v, g, beta, scale, o);
}

void gdn_steps(float* M, int dk, int dv, const GdnTokens& t, float scale) {
    gdn_body::gdn_steps<V8>(M, dk, dv, t, scale);
}

// x / (1 + exp(-g)), the tail through a masked load/store (every element takes the same instructions).
void sigmoid_mul(float* x, const float* g, int64_t n) {
    const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 den = _mm256_add_ps(one, exp8(_mm256_sub_ps(zero, _mm256_loadu_ps(g + i))));
        _mm256_storeu_ps(x + i, _mm256_div_ps(_mm256_loadu_ps(x + i), den));
    }
    if (i < n) {
        const __m256i m = tail_mask(n - i);
        const __m256 den = _mm256_add_ps(one, exp8(_mm256_sub_ps(zero, _mm256_maskload_ps(g + i, m))));
        _mm256_maskstore_ps(x + i, m, _mm256_div_ps(_mm256_maskload_ps(x + i, m), den));
    }
}

}  // namespace bee::avx2_ops
