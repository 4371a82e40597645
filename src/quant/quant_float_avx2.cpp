// quant/quant_float_avx2: F16 rows with F16C, bit-identical to quant_float.cpp's scalar conversion
// (round to nearest even; a NaN becomes the sign | 0x7E00 as fp32_to_fp16 writes it). They serve every
// f16 KV write and read outside attention (cpu_isa() >= avx2).
#include <immintrin.h>

#include "base/fp16.h"
#include "quant/quant_internal.h"

namespace bee {

void quantize_row_f16_avx2(const float* src, void* dst, int64_t n) {
    fp16_t* h = (fp16_t*)dst;
    const __m128i qnan = _mm_set1_epi16(0x7E00), sign = _mm_set1_epi16((short)0x8000);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(src + i);
        __m128i r = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
        if (_mm256_movemask_ps(nan)) {
            const __m128i m = _mm_packs_epi32(_mm256_castsi256_si128(_mm256_castps_si256(nan)),
                                              _mm256_extracti128_si256(_mm256_castps_si256(nan), 1));
            r = _mm_blendv_epi8(r, _mm_or_si128(_mm_and_si128(r, sign), qnan), m);
        }
        _mm_storeu_si128((__m128i*)(h + i), r);
    }
    for (; i < n; i++) h[i] = fp32_to_fp16(src[i]);
}

void dequantize_row_f16_avx2(const void* src, float* dst, int64_t n) {
    const fp16_t* h = (const fp16_t*)src;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(h + i))));
    for (; i < n; i++) dst[i] = fp16_to_fp32(h[i]);
}

}  // namespace bee
