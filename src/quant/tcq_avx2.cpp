// quant/tcq_avx2: the forward (Viterbi) pass of the TCQ encoder (quant/tcq.cpp) with 8 trellis states per
// AVX2 vector. Bit-identical to the scalar pass: every state's cost is the same float expression
// best + (y - cb)·(y - cb) (no FMA: the build uses -ffp-contract=off), and the predecessor choice keeps
// the scalar strict-< scan over j in ascending order, so ties still go to the lowest j.
#include <immintrin.h>

#include <cstdint>

#include "quant/tcq.h"

namespace bee {

// Costs live "transposed": slot j * 64 + tail holds state (tail << k) | j. The 2^k predecessors of a
// tail are then 2^k whole vectors apart and their minimum is vertical. For a new state
// ns = ((8q + m) << k) | j (slot j * 64 + 8q + m), the predecessor tail is ns & 63 =
// (((8q + m) << k) | j) & 63, which repeats with period 8 >> k in q: one gather per (j, q mod period).
int tcq_viterbi_avx2(const float* y, int k, const float* cb, uint8_t (*bt)[64]) {
    const int n_pred = 1 << k, n_states = 1 << (6 + k), period = 8 >> k;
    alignas(32) float cb_t[512], cost[512], best[64];
    for (int s = 0; s < n_states; s++) cb_t[(s & (n_pred - 1)) * 64 + (s >> k)] = cb[s];
    for (int s = 0; s < n_states; s++) cost[s] = 0.0f;  // free initial state
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    // Byte 0 of each 32-bit lane, both 128-bit halves, then the two halves' 4 bytes side by side.
    const __m256i take_low_bytes = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,  //
                                                    0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m256i join_halves = _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0);
    __m256i pred_tail[8][2];  // [j][q % period]: the predecessor tails of slots j*64 + 8q .. +7
    for (int j = 0; j < n_pred; j++)
        for (int r = 0; r < period; r++) {
            const __m256i tail = _mm256_add_epi32(_mm256_set1_epi32(8 * r), iota);
            pred_tail[j][r] =
                _mm256_and_si256(_mm256_or_si256(_mm256_sll_epi32(tail, _mm_cvtsi32_si128(k)), _mm256_set1_epi32(j)),
                                 _mm256_set1_epi32(63));
        }
    for (int t = 0; t < kTcqGroup; t++) {
        for (int q = 0; q < 8; q++) {
            __m256 b = _mm256_load_ps(cost + 8 * q);
            __m256i bj = _mm256_setzero_si256();
            for (int j = 1; j < n_pred; j++) {
                const __m256 c = _mm256_load_ps(cost + j * 64 + 8 * q);
                const __m256 lt = _mm256_cmp_ps(c, b, _CMP_LT_OQ);  // scalar: c[j] < c[bj]
                b = _mm256_blendv_ps(b, c, lt);
                bj = _mm256_blendv_epi8(bj, _mm256_set1_epi32(j), _mm256_castps_si256(lt));
            }
            _mm256_store_ps(best + 8 * q, b);
            const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(bj, take_low_bytes), join_halves);
            _mm_storel_epi64((__m128i*)(bt[t] + 8 * q), _mm256_castsi256_si128(bytes));
        }
        const __m256 yt = _mm256_set1_ps(y[t]);
        for (int j = 0; j < n_pred; j++) {
            __m256 prev[2];
            for (int r = 0; r < period; r++) prev[r] = _mm256_i32gather_ps(best, pred_tail[j][r], 4);
            for (int q = 0; q < 8; q++) {
                const __m256 d = _mm256_sub_ps(yt, _mm256_load_ps(cb_t + j * 64 + 8 * q));
                _mm256_store_ps(cost + j * 64 + 8 * q, _mm256_add_ps(prev[q % period], _mm256_mul_ps(d, d)));
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
