// kernels/ops_avx2: AVX2+FMA versions of rms_norm, silu, gelu_tanh, softmax and a vector exp.
#include <cmath>

#include "kernels/kernels_impl.h"
#include "kernels/simd_avx2.h"

namespace bee::avx2_ops {

namespace {

// Applies f to every group of 8 (the tail through a masked load/store, so every element takes the
// same instruction sequence whatever n is).
template <typename F>
inline void map8(float* x, int64_t n, F f) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, f(_mm256_loadu_ps(x + i)));
    if (i < n) {
        const __m256i m = tail_mask(n - i);
        _mm256_maskstore_ps(x + i, m, f(_mm256_maskload_ps(x + i, m)));
    }
}

// x = f(x) * y, 8 lanes at a time (the product rounds once, as a separate mul pass would).
template <typename F>
inline void map8_mul(float* x, const float* y, int64_t n, F f) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(x + i, _mm256_mul_ps(f(_mm256_loadu_ps(x + i)), _mm256_loadu_ps(y + i)));
    if (i < n) {
        const __m256i m = tail_mask(n - i);
        _mm256_maskstore_ps(x + i, m, _mm256_mul_ps(f(_mm256_maskload_ps(x + i, m)), _mm256_maskload_ps(y + i, m)));
    }
}

inline __m256 silu8(__m256 v) {
    return _mm256_div_ps(v, _mm256_add_ps(_mm256_set1_ps(1.0f), exp8(_mm256_sub_ps(_mm256_setzero_ps(), v))));
}

// 0.5·x·(1 + tanh(u)) == x / (1 + exp(-2u)), u = sqrt(2/π)·x·(1 + 0.044715·x²): no cancellation near 0.
inline __m256 gelu_tanh8(__m256 v) {
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 inner = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(0.044715f), v), v, one);  // 1 + 0.044715·x²
    const __m256 m2u = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(-2.0f * 0.79788456080286535587989211986876f), v),
                                     inner);  // -2u
    return _mm256_div_ps(v, _mm256_add_ps(one, exp8(m2u)));
}

}  // namespace

void exp_inplace(float* x, int64_t n) {
    map8(x, n, [](__m256 v) { return exp8(v); });
}

namespace {

// One head of softmax_heads, 8 lanes at a time.
// note: the scalar loops this replaces (scale, running max, subtract, exp, sum, one element at a time) were
// about a third of attention's time at short contexts (8 server slots, ~80 cells each).
float softmax_step(float* s, int nt, float scale, float* m, float* l) {
    static_assert(kAttnTile == 32, "four vectors of 8 per tile");
    const __m256 vs = _mm256_set1_ps(scale), ninf = _mm256_set1_ps(-INFINITY);
    __m256 x[4];
    __m256 mx = ninf;
    for (int k = 0; k < 4; k++) {
        const __m256 valid = _mm256_castsi256_ps(tail_mask(nt - 8 * k));  // lanes c < nt
        x[k] = _mm256_blendv_ps(ninf, _mm256_mul_ps(_mm256_loadu_ps(s + 8 * k), vs), valid);
        mx = _mm256_max_ps(x[k], mx);
    }
    const float tmax = hmax(mx);
    float corr = 1.0f;
    if (tmax > *m) {
        if (*m != -INFINITY) corr = expf(*m - tmax);
        *l *= corr;
        *m = tmax;
    }
    const __m256 vm = _mm256_set1_ps(*m);
    __m256 sum = _mm256_setzero_ps();
    for (int k = 0; k < 4; k++) {
        // exp8(-inf) is 0, so the lanes past nt add nothing
        const __m256 p = exp8(_mm256_sub_ps(x[k], vm));
        _mm256_storeu_ps(s + 8 * k, p);
        sum = _mm256_add_ps(sum, p);
    }
    *l += hsum(sum);
    return corr;
}

}  // namespace

void softmax_heads(float* s, int nh, int nt, float scale, float* m, float* l, float* corr) {
    for (int i = 0; i < nh; i++) corr[i] = softmax_step(s + i * kAttnTile, nt, scale, m + i, l + i);
}

void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps) {
    __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();  // squares summed in double
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        const __m256 sq = _mm256_mul_ps(v, v);
        acc0 = _mm256_add_pd(acc0, _mm256_cvtps_pd(_mm256_castps256_ps128(sq)));
        acc1 = _mm256_add_pd(acc1, _mm256_cvtps_pd(_mm256_extractf128_ps(sq, 1)));
    }
    double buf[4];
    _mm256_storeu_pd(buf, _mm256_add_pd(acc0, acc1));
    double sum = (buf[0] + buf[1]) + (buf[2] + buf[3]);
    for (; i < n; i++) sum += (double)(x[i] * x[i]);
    const float mean = (float)(sum / (double)n);
    const float s = 1.0f / sqrtf(mean + eps);
    const __m256 vs = _mm256_set1_ps(s);
    for (i = 0; i + 8 <= n; i += 8) {
        __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), vs);
        if (w) v = _mm256_mul_ps(v, _mm256_loadu_ps(w + i));
        _mm256_storeu_ps(y + i, v);
    }
    for (; i < n; i++) y[i] = w ? (x[i] * s) * w[i] : x[i] * s;
}

void silu(float* x, int64_t n) { map8(x, n, silu8); }
void gelu_tanh(float* x, int64_t n) { map8(x, n, gelu_tanh8); }
void silu_mul(float* x, const float* y, int64_t n) { map8_mul(x, y, n, silu8); }
void gelu_tanh_mul(float* x, const float* y, int64_t n) { map8_mul(x, y, n, gelu_tanh8); }

void softmax(float* x, int64_t n) {
    if (n <= 0) return;
    __m256 mx = _mm256_set1_ps(-INFINITY);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) mx = _mm256_max_ps(mx, _mm256_loadu_ps(x + i));
    float m = hmax(mx);
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    const __m256 vm = _mm256_set1_ps(m);
    map8(x, n, [vm](__m256 v) { return exp8(_mm256_sub_ps(v, vm)); });
    __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();  // sum in double
    for (i = 0; i < n; i += 8) {
        const __m256 v = i + 8 <= n ? _mm256_loadu_ps(x + i) : _mm256_maskload_ps(x + i, tail_mask(n - i));
        acc0 = _mm256_add_pd(acc0, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
        acc1 = _mm256_add_pd(acc1, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    }
    double buf[4];
    _mm256_storeu_pd(buf, _mm256_add_pd(acc0, acc1));
    const __m256 inv = _mm256_set1_ps((float)(1.0 / ((buf[0] + buf[1]) + (buf[2] + buf[3]))));
    map8(x, n, [inv](__m256 v) { return _mm256_mul_ps(v, inv); });
}

}  // namespace bee::avx2_ops
