// quant/quant_k_fit_avx2: the affine sub-block fit of the Q4_K / Q5_K quantizers (fit_affine in
// quant_k_quantize.cpp) for the 8 sub-blocks of a super-block at once, one sub-block per AVX2 lane.
// Every lane performs exactly the scalar fit's float operations in the scalar order (sums stay
// sequential over the sub-block's elements; no FMA; min/max/blends chosen to match the scalar ?: on
// NaN too), so the bytes are those of the reference quantizer. The speed comes from running the 8
// independent sequential reductions side by side instead of one after another.
#include <immintrin.h>

#include <cstdint>

namespace bee {

namespace {

// nearest_int() of quant/blocks.h, per lane.
inline __m256i nearest_int_x8(__m256 v) {
    const __m256 t = _mm256_add_ps(v, _mm256_set1_ps(12582912.f));
    return _mm256_sub_epi32(_mm256_and_si256(_mm256_castps_si256(t), _mm256_set1_epi32(0x007fffff)),
                            _mm256_set1_epi32(0x00400000));
}

// clamp_int(v, 0, hi) per lane.
inline __m256i clamp_x8(__m256i v, __m256i hi) {
    return _mm256_min_epi32(_mm256_max_epi32(v, _mm256_setzero_si256()), hi);
}

inline __m256 blend(__m256 a, __m256 b, __m256 take_b) { return _mm256_blendv_ps(a, b, take_b); }

// Σ w·(scale·L + mn - x)² per lane, in element order.
inline __m256 affine_error_x8(const float (*xt)[8], const float (*wt)[8], const __m256i* L, __m256 scale, __m256 mn) {
    __m256 err = _mm256_setzero_ps();
    for (int i = 0; i < 32; ++i) {
        const __m256 diff =
            _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(scale, _mm256_cvtepi32_ps(L[i])), mn), _mm256_load_ps(xt[i]));
        err = _mm256_add_ps(err, _mm256_mul_ps(_mm256_load_ps(wt[i]), _mm256_mul_ps(diff, diff)));
    }
    return err;
}

}  // namespace

// x, w: 256 values and weights (sub-block j = elements 32j..32j+31). Writes the quants L (256), the
// scale and the negated min of each sub-block, as fit_affine(32, nmax, ..., abs_err = false) would.
void fit_affine_x8_avx2(const float* x, const float* w, int nmax, float rmin, float rdelta, int nstep, uint8_t* L,
                        float* scales, float* neg_mins) {
    alignas(32) float xt[32][8], wt[32][8];  // [element][sub-block]
    for (int j = 0; j < 8; ++j)
        for (int i = 0; i < 32; ++i) {
            xt[i][j] = x[32 * j + i];
            wt[i][j] = w[32 * j + i];
        }
    const __m256 zero = _mm256_setzero_ps(), nmax_f = _mm256_set1_ps((float)nmax);
    const __m256i nmax_i = _mm256_set1_epi32(nmax);
    __m256 lo = _mm256_load_ps(xt[0]), hi = lo, sum_w = zero, sum_x = zero;
    for (int i = 0; i < 32; ++i) {
        const __m256 xi = _mm256_load_ps(xt[i]), wi = _mm256_load_ps(wt[i]);
        lo = _mm256_min_ps(xi, lo);  // xi < lo ? xi : lo
        hi = _mm256_max_ps(xi, hi);  // xi > hi ? xi : hi
        sum_w = _mm256_add_ps(sum_w, wi);
        sum_x = _mm256_add_ps(sum_x, _mm256_mul_ps(wi, xi));
    }
    lo = blend(lo, zero, _mm256_cmp_ps(lo, zero, _CMP_GT_OQ));
    const __m256 constant = _mm256_cmp_ps(hi, lo, _CMP_NGT_UQ);  // !(hi > lo): all quants 0

    const __m256 iscale0 = _mm256_div_ps(nmax_f, _mm256_sub_ps(hi, lo));
    __m256 scale = _mm256_div_ps(_mm256_set1_ps(1.0f), iscale0), mn = lo;
    __m256i best_L[32], trial[32];
    for (int i = 0; i < 32; ++i)
        best_L[i] = clamp_x8(nearest_int_x8(_mm256_mul_ps(iscale0, _mm256_sub_ps(_mm256_load_ps(xt[i]), lo))), nmax_i);
    __m256 best = affine_error_x8(xt, wt, best_L, scale, mn);
    for (int k = 0; k <= nstep; ++k) {
        const __m256 iscale =
            _mm256_div_ps(_mm256_set1_ps(rmin + rdelta * (float)k + (float)nmax), _mm256_sub_ps(hi, mn));
        __m256 sum_l = zero, sum_l2 = zero, sum_xl = zero;
        for (int i = 0; i < 32; ++i) {
            const __m256 xi = _mm256_load_ps(xt[i]), wi = _mm256_load_ps(wt[i]);
            const __m256 v = _mm256_mul_ps(iscale, _mm256_sub_ps(xi, mn));
            __m256i l = clamp_x8(nearest_int_x8(_mm256_min_ps(v, nmax_f)), nmax_i);            // v < nmax ? v : nmax
            l = _mm256_and_si256(l, _mm256_castps_si256(_mm256_cmp_ps(v, zero, _CMP_GT_OQ)));  // v > 0 ? l : 0
            trial[i] = l;
            const __m256 lf = _mm256_cvtepi32_ps(l), wl = _mm256_mul_ps(wi, lf);
            sum_l = _mm256_add_ps(sum_l, wl);
            sum_l2 = _mm256_add_ps(sum_l2, _mm256_mul_ps(wl, lf));
            sum_xl = _mm256_add_ps(sum_xl, _mm256_mul_ps(wl, xi));
        }
        const __m256 det = _mm256_sub_ps(_mm256_mul_ps(sum_w, sum_l2), _mm256_mul_ps(sum_l, sum_l));
        const __m256 valid = _mm256_cmp_ps(det, zero, _CMP_GT_OQ);
        __m256 s = _mm256_div_ps(_mm256_sub_ps(_mm256_mul_ps(sum_w, sum_xl), _mm256_mul_ps(sum_x, sum_l)), det);
        __m256 m = _mm256_div_ps(_mm256_sub_ps(_mm256_mul_ps(sum_l2, sum_x), _mm256_mul_ps(sum_l, sum_xl)), det);
        const __m256 positive = _mm256_cmp_ps(m, zero, _CMP_GT_OQ);  // refit the scale alone
        m = blend(m, zero, positive);
        s = blend(s, _mm256_div_ps(sum_xl, sum_l2), positive);
        const __m256 err = affine_error_x8(xt, wt, trial, s, m);
        const __m256 better = _mm256_and_ps(valid, _mm256_cmp_ps(err, best, _CMP_LT_OQ));
        if (_mm256_movemask_ps(better) == 0) continue;
        const __m256i take = _mm256_castps_si256(better);
        for (int i = 0; i < 32; ++i) best_L[i] = _mm256_blendv_epi8(best_L[i], trial[i], take);
        best = blend(best, err, better);
        scale = blend(scale, s, better);
        mn = blend(mn, m, better);
    }
    // constant sub-blocks: quants 0, scale 0, the value carried by the min
    const __m256 neg = _mm256_set1_ps(-0.0f);
    _mm256_storeu_ps(scales, blend(scale, zero, constant));
    _mm256_storeu_ps(neg_mins, _mm256_xor_ps(blend(mn, lo, constant), neg));
    alignas(32) int32_t lanes[8];
    for (int i = 0; i < 32; ++i) {
        _mm256_store_si256((__m256i*)lanes, _mm256_andnot_si256(_mm256_castps_si256(constant), best_L[i]));
        for (int j = 0; j < 8; ++j) L[32 * j + i] = (uint8_t)lanes[j];
    }
}

}  // namespace bee
