// kernels/x86/quantize_avx2: AVX2 float -> Q8_0 / Q8_1 / Q8_K activation quantizers, byte-identical to
// the reference quantizers in quant/ (quant_legacy.cpp, quant_k.cpp) for every input, NaN and inf included.
// note: no float multiply here feeds a float add or subtract, so -ffp-contract cannot fuse one into an
// FMA and change a rounding; the scales are computed with the same scalar expressions as the reference.
#include "kernels/x86/avx2_util.h"
#include "quant/blocks.h"

namespace bee::avx2 {

namespace {

inline __m256 sign_bit() { return _mm256_set1_ps(-0.0f); }

inline __m256 abs_ps(__m256 v) { return _mm256_andnot_ps(sign_bit(), v); }

// max(|v|, acc) lane-wise, skipping NaN lanes of v (as the reference's `|x| > amax ? |x| : amax`).
inline __m256 absmax_step(__m256 v, __m256 acc) { return _mm256_max_ps(abs_ps(v), acc); }

// roundf (half away from zero) of finite v, exactly: floor(|v|), +1 when the fraction is >= 0.5.
inline __m256 round_half_away(__m256 v) {
    const __m256 a = abs_ps(v);
    const __m256 f = _mm256_round_ps(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __m256 up = _mm256_cmp_ps(a, _mm256_add_ps(f, _mm256_set1_ps(0.5f)), _CMP_GE_OQ);
    const __m256 r = _mm256_add_ps(f, _mm256_and_ps(up, _mm256_set1_ps(1.0f)));
    return _mm256_or_ps(r, _mm256_and_ps(v, sign_bit()));
}

// The reference round_q8(x * id): NaN -> 0, else roundf clamped to [-128, 127]; as int32 lanes.
// note: clamping before rounding gives the same integer as rounding then clamping.
inline __m256i round_q8(__m256 x, __m256 id) {
    __m256 v = _mm256_mul_ps(x, id);
    v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));
    v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-128.0f)), _mm256_set1_ps(127.0f));
    return _mm256_cvtps_epi32(round_half_away(v));
}

// The reference nearest_int(x * iscale) (ties to even; NaN lanes keep ggml's bit formula) as int32.
// note: for a finite product |x * iscale| <= ~127, where nearest_int is plain round-to-even; an
// infinite one converts to INT32_MIN, which saturates to -128 as the reference clamps it.
inline __m256i nearest_q8k(__m256 x, __m256 iscale) {
    const __m256 v = _mm256_mul_ps(x, iscale);
    const __m256i r = _mm256_cvtps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const __m256i nan_q = _mm256_sub_epi32(_mm256_and_si256(_mm256_castps_si256(v), _mm256_set1_epi32(0x007fffff)),
                                           _mm256_set1_epi32(0x00400000));
    return _mm256_blendv_epi8(nan_q, r, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_ORD_Q)));
}

// 4 x 8 int32 (elements 0-7, 8-15, 16-23, 24-31) -> 32 int8 in element order, saturating.
inline __m256i pack_i32_to_i8(__m256i i0, __m256i i1, __m256i i2, __m256i i3) {
    // packs work per 128-bit lane: bytes come out as 4-element groups 0 2 4 6 | 1 3 5 7
    const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
    return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Sums of 16 int16 of pairs of signed bytes.
inline __m256i pair_sums_i8(__m256i q) { return _mm256_maddubs_epi16(_mm256_set1_epi8(1), q); }

// Q8_0 / Q8_1 block body: d = amax / 127, q = round_q8(x / d); writes d and qs, returns the 32 quants.
inline __m256i quantize_block_q8(const float* x, fp16_t* d_out, int8_t* qs, float* d_val) {
    const __m256 x0 = _mm256_loadu_ps(x), x1 = _mm256_loadu_ps(x + 8);
    const __m256 x2 = _mm256_loadu_ps(x + 16), x3 = _mm256_loadu_ps(x + 24);
    __m256 acc = _mm256_setzero_ps();
    acc = absmax_step(x0, acc);
    acc = absmax_step(x1, acc);
    acc = absmax_step(x2, acc);
    acc = absmax_step(x3, acc);
    const float amax = hmax_f32x8(acc);
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    *d_out = fp32_to_fp16(d);
    *d_val = d;
    const __m256 vid = _mm256_set1_ps(id);
    const __m256i q = pack_i32_to_i8(round_q8(x0, vid), round_q8(x1, vid), round_q8(x2, vid), round_q8(x3, vid));
    _mm256_storeu_si256((__m256i*)qs, q);
    return q;
}

}  // namespace

void quantize_row_q8_0(const float* src, void* dst, int64_t n) {
    BlockQ8_0* y = (BlockQ8_0*)dst;
    float d;
    for (int64_t b = 0; b < n / QK8_0; ++b) quantize_block_q8(src + b * QK8_0, &y[b].d, y[b].qs, &d);
}

void quantize_row_q8_1(const float* src, void* dst, int64_t n) {
    BlockQ8_1* y = (BlockQ8_1*)dst;
    for (int64_t b = 0; b < n / QK8_1; ++b) {
        float d;
        const __m256i q = quantize_block_q8(src + b * QK8_1, &y[b].d, y[b].qs, &d);
        const int sum = hsum_i32x8(_mm256_madd_epi16(pair_sums_i8(q), _mm256_set1_epi16(1)));
        y[b].s = fp32_to_fp16((float)sum * d);
    }
}

// Q8_K: the first value of largest magnitude maps to -127: iscale = -127 / max, d = 1 / iscale.
void quantize_row_q8_K(const float* src, void* dst, int64_t n) {
    BlockQ8_K* y = (BlockQ8_K*)dst;
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const float* x = src + b * QK_K;
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
        for (int j = 0; j < QK_K; j += 16) {
            acc0 = absmax_step(_mm256_loadu_ps(x + j), acc0);
            acc1 = absmax_step(_mm256_loadu_ps(x + j + 8), acc1);
        }
        const float amax = hmax_f32x8(_mm256_max_ps(acc0, acc1));
        if (amax == 0.0f) {  // all zeros (or NaN): the reference writes an all-zero block
            memset(&y[b], 0, sizeof(BlockQ8_K));
            continue;
        }
        int first = 0;  // first index with |x| == amax: the reference keeps the first on ties
        const __m256 vamax = _mm256_set1_ps(amax);
        for (int j = 0; j < QK_K; j += 8) {
            const __m256 is_max = _mm256_cmp_ps(abs_ps(_mm256_loadu_ps(x + j)), vamax, _CMP_EQ_OQ);
            const int mask = _mm256_movemask_ps(is_max);
            if (mask) {
                first = j + __builtin_ctz((unsigned)mask);
                break;
            }
        }
        const float iscale = -127.f / x[first];
        const __m256 vis = _mm256_set1_ps(iscale);
        __m256i sums[QK_K / 32];  // per 32 quants: 16 int16 pair sums (groups 2k | 2k+1 by lane)
        for (int j = 0; j < QK_K; j += 32) {
            const __m256i q =
                pack_i32_to_i8(nearest_q8k(_mm256_loadu_ps(x + j), vis), nearest_q8k(_mm256_loadu_ps(x + j + 8), vis),
                               nearest_q8k(_mm256_loadu_ps(x + j + 16), vis),
                               nearest_q8k(_mm256_loadu_ps(x + j + 24), vis));
            _mm256_storeu_si256((__m256i*)(y[b].qs + j), q);
            sums[j / 32] = pair_sums_i8(q);
        }
        // reduce each lane's 8 pair sums to one group sum: after two rounds of hadd the low lanes hold
        // groups 0 2 4 .. 14 and the high lanes 1 3 5 .. 15, which an unpack interleaves
        const __m256i h01 = _mm256_hadd_epi16(sums[0], sums[1]), h23 = _mm256_hadd_epi16(sums[2], sums[3]);
        const __m256i h45 = _mm256_hadd_epi16(sums[4], sums[5]), h67 = _mm256_hadd_epi16(sums[6], sums[7]);
        const __m256i g = _mm256_hadd_epi16(_mm256_hadd_epi16(h01, h23), _mm256_hadd_epi16(h45, h67));
        const __m128i even = _mm256_castsi256_si128(g), odd = _mm256_extracti128_si256(g, 1);
        _mm_storeu_si128((__m128i*)y[b].bsums, _mm_unpacklo_epi16(even, odd));
        _mm_storeu_si128((__m128i*)(y[b].bsums + 8), _mm_unpackhi_epi16(even, odd));
        y[b].d = 1 / iscale;
    }
}

}  // namespace bee::avx2
