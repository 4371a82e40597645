// kernels/kv_avx2: AVX2+FMA+F16C attention primitives (q·k and acc += p·v) for F32 and F16 KV rows.
#include <cstring>

#include "kernels/kernels_impl.h"
#include "kernels/simd_avx2.h"

namespace bee::avx2_ops {

namespace {

// 8 halves at p (unaligned) -> 8 floats; the tail (rem < 8 elements) zero-filled.
inline __m256 load_f16x8(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p)); }
inline __m256 load_f16_tail(const uint8_t* p, int rem) {
    alignas(16) uint16_t h[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    memcpy(h, p, (size_t)rem * 2);
    return _mm256_cvtph_ps(_mm_load_si128((const __m128i*)h));
}

}  // namespace

float kv_dot_f32(const float* q, const uint8_t* k_row, int n) {
    const float* k = (const float*)k_row;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(k + i), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), _mm256_loadu_ps(k + i + 8), a1);
    }
    for (; i < n; i += 8) {
        const __m256i m = tail_mask(n - i);
        a0 = _mm256_fmadd_ps(_mm256_maskload_ps(q + i, m), _mm256_maskload_ps(k + i, m), a0);
    }
    return hsum(_mm256_add_ps(a0, a1));
}

float kv_dot_f16(const float* q, const uint8_t* k_row, int n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), load_f16x8(k_row + 2 * i), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), load_f16x8(k_row + 2 * i + 16), a1);
    }
    for (; i < n; i += 8) {
        const int rem = n - i < 8 ? n - i : 8;
        const __m256 k = rem == 8 ? load_f16x8(k_row + 2 * i) : load_f16_tail(k_row + 2 * i, rem);
        a0 = _mm256_fmadd_ps(_mm256_maskload_ps(q + i, tail_mask(rem)), k, a0);
    }
    return hsum(_mm256_add_ps(a0, a1));
}

void kv_axpy_f32(float* acc, float p, const uint8_t* v_row, int n) {
    const float* v = (const float*)v_row;
    const __m256 vp = _mm256_set1_ps(p);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(vp, _mm256_loadu_ps(v + i), _mm256_loadu_ps(acc + i)));
    }
    if (i < n) {
        const __m256i m = tail_mask(n - i);
        _mm256_maskstore_ps(acc + i, m, _mm256_fmadd_ps(vp, _mm256_maskload_ps(v + i, m), _mm256_maskload_ps(acc + i, m)));
    }
}

void kv_axpy_f16(float* acc, float p, const uint8_t* v_row, int n) {
    const __m256 vp = _mm256_set1_ps(p);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(vp, load_f16x8(v_row + 2 * i), _mm256_loadu_ps(acc + i)));
    }
    if (i < n) {
        const __m256i m = tail_mask(n - i);
        const __m256 v = load_f16_tail(v_row + 2 * i, n - i);
        _mm256_maskstore_ps(acc + i, m, _mm256_fmadd_ps(vp, v, _mm256_maskload_ps(acc + i, m)));
    }
}

}  // namespace bee::avx2_ops
