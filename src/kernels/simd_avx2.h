// kernels/simd_avx2: small AVX2+FMA helpers shared by the kernels' *_avx2.cpp files (include only there).
#pragma once
#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "kernels/x86/avx2_util.h"

namespace bee::avx2_ops {

// exp(x) for 8 floats: n = round(x·log2 e), r = x - n·ln2 (two-part ln2), exp(r) by its degree-7 Taylor
// polynomial (|r| <= 0.347: truncation < 5e-9 relative), times 2^n built in the exponent field.
// Max error ~1 ulp for x in [-87, 88.37]; below -87 the result is 0, above 88.37 it is +inf.
inline __m256 exp8(__m256 x) {
    const __m256 lo = _mm256_set1_ps(-87.0f), hi = _mm256_set1_ps(88.37f);
    const __m256 xc = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), xc);  // ln2 high part (exact n·hi)
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860682030941723e-06f), r);    // ln2 low part
    __m256 p = _mm256_set1_ps(1.0f / 5040);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    // n in [-126, 127]
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    __m256 res = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    res = _mm256_blendv_ps(res, _mm256_setzero_ps(), _mm256_cmp_ps(x, lo, _CMP_LT_OQ));
    res = _mm256_blendv_ps(res, _mm256_set1_ps(INFINITY), _mm256_cmp_ps(x, hi, _CMP_GT_OQ));
    return _mm256_blendv_ps(res, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));  // NaN stays NaN
}

// Lane mask selecting the first `rem` (0..8) lanes.
inline __m256i tail_mask(int64_t rem) {
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)rem), idx);
}

// Sum of the 8 lanes in a fixed order (one implementation for every kernel file).
inline float hsum(__m256 v) { return avx2::hsum_f32x8(v); }

inline float hmax(__m256 v) { return avx2::hmax_f32x8(v); }

}  // namespace bee::avx2_ops
