// quant/tcq_avx512: the forward (Viterbi) pass of the TCQ encoder (quant/tcq.cpp) with 16 trellis states
// per AVX-512 vector; the same transposed cost layout and the same float operations in the same order
// as tcq_avx2.cpp, so the bytes are those of the scalar encoder.
// note: GCC 12's AVX-512 headers build intrinsics on _mm512_undefined_*(), which -Wuninitialized flags
// (a false positive; those operands are never read).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstdint>

#include "quant/tcq.h"

namespace bee {

// Costs live transposed (slot j * 64 + tail holds state (tail << k) | j, see tcq_avx2.cpp). With 16
// slots per vector, the predecessor tails (((16q + m) << k) | j) & 63 of a vector do not depend on q
// (16 << k is a multiple of 64), so one gather per j and step serves all four vectors.
int tcq_viterbi_avx512(const float* y, int k, const float* cb, uint8_t (*bt)[64]) {
    const int n_pred = 1 << k, n_states = 1 << (6 + k);
    alignas(64) float cb_t[512], cost[512], best[64];
    for (int s = 0; s < n_states; s++) cb_t[(s & (n_pred - 1)) * 64 + (s >> k)] = cb[s];
    for (int s = 0; s < n_states; s++) cost[s] = 0.0f;  // free initial state
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m512i pred_tail[8];
    for (int j = 0; j < n_pred; j++)
        pred_tail[j] =
            _mm512_and_si512(_mm512_or_si512(_mm512_sll_epi32(iota, _mm_cvtsi32_si128(k)), _mm512_set1_epi32(j)),
                             _mm512_set1_epi32(63));
    for (int t = 0; t < kTcqGroup; t++) {
        for (int q = 0; q < 4; q++) {
            __m512 b = _mm512_load_ps(cost + 16 * q);
            __m512i bj = _mm512_setzero_si512();
            for (int j = 1; j < n_pred; j++) {
                const __m512 c = _mm512_load_ps(cost + j * 64 + 16 * q);
                const __mmask16 lt = _mm512_cmp_ps_mask(c, b, _CMP_LT_OQ);  // scalar: c[j] < c[bj]
                b = _mm512_mask_blend_ps(lt, b, c);
                bj = _mm512_mask_blend_epi32(lt, bj, _mm512_set1_epi32(j));
            }
            _mm512_store_ps(best + 16 * q, b);
            _mm_storeu_si128((__m128i*)(bt[t] + 16 * q), _mm512_cvtepi32_epi8(bj));
        }
        const __m512 yt = _mm512_set1_ps(y[t]);
        for (int j = 0; j < n_pred; j++) {
            const __m512 prev = _mm512_i32gather_ps(pred_tail[j], best, 4);
            for (int q = 0; q < 4; q++) {
                const __m512 d = _mm512_sub_ps(yt, _mm512_load_ps(cb_t + j * 64 + 16 * q));
                _mm512_store_ps(cost + j * 64 + 16 * q, _mm512_add_ps(prev, _mm512_mul_ps(d, d)));
            }
        }
    }
    // Final state: the scalar argmin over states in natural order (strict <, lowest state wins ties).
    int s = 0;
    float cs = cost[0];
    for (int i = 1; i < n_states; i++) {
        const float c = cost[(i & (n_pred - 1)) * 64 + (i >> k)];
        if (c < cs) s = i, cs = c;
    }
    return s;
}

}  // namespace bee
