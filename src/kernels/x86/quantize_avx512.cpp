// kernels/x86/quantize_avx512: AVX-512 float -> Q8_0 / Q8_1 activation quantizers, byte-identical to the
// reference quantizers in quant/quant_legacy.cpp for every input, NaN and inf included (as the AVX2 ones
// in quantize_avx2.cpp, with 16 lanes, mask registers, a saturating narrow and F16C scale conversion).
// The activations of every matmul go through one of these; with several rows per step (a server step, a
// verify batch) the AVX2 version's per-block scalar work was ~5% of the step.
// note: no float multiply here feeds a float add or subtract, so -ffp-contract cannot fuse one into an
// FMA; the scales are the reference's scalar expressions; F16C rounds to nearest even like fp32_to_fp16,
// and its one NaN case (0 · inf for Q8_1's s) gives the same default-NaN half.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/x86/avx512.h"
#include "quant/blocks.h"

namespace bee::avx512 {

namespace {

// The reference round_q8(x * id): NaN -> 0, else roundf (half away from zero) clamped to [-128, 127].
// note: clamping before rounding gives the same integer as rounding then clamping.
inline __m512i round_q8(__m512 x, __m512 id) {
    __m512 v = _mm512_mul_ps(x, id);
    v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);
    v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-128.0f)), _mm512_set1_ps(127.0f));
    const __m512 a = _mm512_abs_ps(v);
    const __m512 f = _mm512_roundscale_ps(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __mmask16 up = _mm512_cmp_ps_mask(a, _mm512_add_ps(f, _mm512_set1_ps(0.5f)), _CMP_GE_OQ);
    const __m512 r = _mm512_mask_add_ps(f, up, f, _mm512_set1_ps(1.0f));
    const __m512 sign = _mm512_and_ps(v, _mm512_set1_ps(-0.0f));
    return _mm512_cvtps_epi32(_mm512_or_ps(r, sign));
}

inline uint16_t to_half(float f) { return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT); }

// One block of 32: writes qs, returns d; *sum gets Σ q.
inline float quantize_block(const float* x, int8_t* qs, int* sum) {
    const __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16);
    // max(|v|, acc) keeps acc where |v| is NaN, as the reference's `|x| > amax ? |x| : amax`
    const __m512 acc = _mm512_max_ps(_mm512_abs_ps(x1), _mm512_max_ps(_mm512_abs_ps(x0), _mm512_setzero_ps()));
    const float amax = _mm512_reduce_max_ps(acc);
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const __m512 vid = _mm512_set1_ps(id);
    const __m512i q0 = round_q8(x0, vid), q1 = round_q8(x1, vid);
    _mm_storeu_si128((__m128i*)qs, _mm512_cvtsepi32_epi8(q0));
    _mm_storeu_si128((__m128i*)(qs + 16), _mm512_cvtsepi32_epi8(q1));
    *sum = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
    return d;
}

// Four blocks of 32 at once (128 values): the same bytes as four quantize_block calls, with the per-block
// horizontal reductions, divisions and scale conversions done for the four together (one transposing
// reduction instead of four; these were most of the quantizer's time). Writes qs[b] and returns d[b] and
// sum[b] for b = 0..3.
// note: the absolute maxima hold no NaN (max(|v|, acc) keeps acc), so the reduction order cannot change
// them; the sums are integers. d = amax / 127 and id = 1 / d are the scalar code's IEEE operations.
inline void quantize_4_blocks(const float* x, int8_t* const qs[4], float d[4], int sum[4]) {
    __m512 v[8], m[4];
    for (int i = 0; i < 8; i++) v[i] = _mm512_loadu_ps(x + 16 * i);
    for (int b = 0; b < 4; b++)
        m[b] = _mm512_max_ps(_mm512_abs_ps(v[2 * b + 1]), _mm512_max_ps(_mm512_abs_ps(v[2 * b]), _mm512_setzero_ps()));
    // 4 vectors of 16 -> one vector whose 128-bit lane b holds 4 partial maxima of block b
    const __m512 m01 = _mm512_max_ps(_mm512_shuffle_f32x4(m[0], m[1], 0x44), _mm512_shuffle_f32x4(m[0], m[1], 0xEE));
    const __m512 m23 = _mm512_max_ps(_mm512_shuffle_f32x4(m[2], m[3], 0x44), _mm512_shuffle_f32x4(m[2], m[3], 0xEE));
    __m512 u = _mm512_max_ps(_mm512_shuffle_f32x4(m01, m23, 0x88), _mm512_shuffle_f32x4(m01, m23, 0xDD));
    u = _mm512_max_ps(u, _mm512_permute_ps(u, 0x4E));
    u = _mm512_max_ps(u, _mm512_permute_ps(u, 0xB1));  // lane b: block b's amax in all 4 places
    const __m128 amax = _mm512_castps512_ps128(
        _mm512_permutexvar_ps(_mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 8, 4, 0), u));
    const __m128 vd = _mm_div_ps(amax, _mm_set1_ps(127.0f));
    const __m128 vid = _mm_maskz_div_ps(_mm_cmp_ps_mask(vd, _mm_setzero_ps(), _CMP_NEQ_UQ), _mm_set1_ps(1.0f), vd);
    _mm_storeu_ps(d, vd);
    alignas(16) float id[4];
    _mm_store_ps(id, vid);
    __m512i s[4];
    for (int b = 0; b < 4; b++) {
        const __m512 bid = _mm512_set1_ps(id[b]);
        const __m512i q0 = round_q8(v[2 * b], bid), q1 = round_q8(v[2 * b + 1], bid);
        _mm_storeu_si128((__m128i*)qs[b], _mm512_cvtsepi32_epi8(q0));
        _mm_storeu_si128((__m128i*)(qs[b] + 16), _mm512_cvtsepi32_epi8(q1));
        s[b] = _mm512_add_epi32(q0, q1);
    }
    const __m512i s01 =
        _mm512_add_epi32(_mm512_shuffle_i32x4(s[0], s[1], 0x44), _mm512_shuffle_i32x4(s[0], s[1], 0xEE));
    const __m512i s23 =
        _mm512_add_epi32(_mm512_shuffle_i32x4(s[2], s[3], 0x44), _mm512_shuffle_i32x4(s[2], s[3], 0xEE));
    __m512i t = _mm512_add_epi32(_mm512_shuffle_i32x4(s01, s23, 0x88), _mm512_shuffle_i32x4(s01, s23, 0xDD));
    t = _mm512_add_epi32(t, _mm512_shuffle_epi32(t, (_MM_PERM_ENUM)0x4E));
    t = _mm512_add_epi32(t, _mm512_shuffle_epi32(t, (_MM_PERM_ENUM)0xB1));
    _mm_storeu_si128((__m128i*)sum,
                     _mm512_castsi512_si128(
                         _mm512_permutexvar_epi32(_mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 8, 4, 0),
                                                  t)));
}

// A row of 32-value blocks: four at a time, then one at a time; set(block, d, sum) writes the scales.
template <class Block, class SetScales>
void quantize_row(const float* src, Block* y, int64_t n, SetScales set) {
    const int64_t nb = n / 32;
    int64_t b = 0;
    for (; b + 4 <= nb; b += 4) {
        int8_t* const qs[4] = {y[b].qs, y[b + 1].qs, y[b + 2].qs, y[b + 3].qs};
        float d[4];
        int sum[4];
        quantize_4_blocks(src + b * 32, qs, d, sum);
        for (int k = 0; k < 4; k++) set(y[b + k], d[k], sum[k]);
    }
    for (; b < nb; ++b) {
        int sum;
        const float d = quantize_block(src + b * 32, y[b].qs, &sum);
        set(y[b], d, sum);
    }
}

}  // namespace

// Referenced from avx512_table.cpp.
void quantize_row_q8_0(const float* src, void* dst, int64_t n) {
    static_assert(QK8_0 == 32, "blocks of 32");
    quantize_row(src, (BlockQ8_0*)dst, n, [](BlockQ8_0& y, float d, int) { y.d = to_half(d); });
}

void quantize_row_q8_1(const float* src, void* dst, int64_t n) {
    static_assert(QK8_1 == 32, "blocks of 32");
    quantize_row(src, (BlockQ8_1*)dst, n, [](BlockQ8_1& y, float d, int sum) {
        y.d = to_half(d);
        y.s = to_half((float)sum * d);
    });
}

}  // namespace bee::avx512
