// kernels/x86/gdn_avx512: the Gated DeltaNet kernels on 16 lanes (x86/gdn_body.h).
// note: GCC 12's AVX-512 headers build intrinsics on _mm512_undefined_*(), which -Wmaybe-uninitialized
// reports in optimised builds (as in kv_avx512.cpp).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/kernels_impl.h"
#include "kernels/x86/gdn_body.h"

namespace bee::avx512_ops {

namespace {
struct V16 {
    using T = __m512;
    static constexpr int W = 16;
    static T load(const float* p) { return _mm512_loadu_ps(p); }
    static void store(float* p, T v) { _mm512_storeu_ps(p, v); }
    static T set1(float x) { return _mm512_set1_ps(x); }
    static T zero() { return _mm512_setzero_ps(); }
    static T mul(T a, T b) { return _mm512_mul_ps(a, b); }
    static T add(T a, T b) { return _mm512_add_ps(a, b); }
    static T fmadd(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
    static float hsum(T v) { return _mm512_reduce_add_ps(v); }
};
}  // namespace

void conv1d_step(float* state, const float* taps, int k, int64_t ld, const float* x, float* y, int64_t n) {
    gdn_body::conv1d_step<V16>(state, taps, k, ld, x, y, n);
}

void gdn_step(float* M, int dk, int dv, const float* q, const float* k, const float* v, float g, float beta,
              float scale, float* o) {
    gdn_body::gdn_step<V16>(M, dk, dv, q, k, v, g, beta, scale, o);
}

void gdn_steps(float* M, int dk, int dv, const GdnTokens& t, float scale) {
    gdn_body::gdn_steps<V16>(M, dk, dv, t, scale);
}

}  // namespace bee::avx512_ops
