// kernels/x86/gemm_k_avx512: AVX-512 VNNI tile kernels (kernels/gemm.h) of Q4_K and Q6_K against Q8_K.
// Per 256-element super-block and output, everything up to one int32 vector is exact integer work:
// 64 elements at a time, vpmaddubsw (unsigned quants × signed activations -> int16 pairs, no
// saturation for 4- and 6-bit quants) then vpdpwssd with the sub-block scales as int16, summed over the
// super-block. Then, per output and super-block, in this order: acc = fma(float(lanes), dw·da, acc); for
// Q4_K also accm = fma(float(Σ m·bsum), dmin·da, accm) on 4 lanes. The result is reduce(acc) - reduce(accm),
// whatever the tile shape.
// note: GCC 12's AVX-512 headers build intrinsics on _mm512_undefined_*(), which -Wuninitialized flags
// (a false positive); the pragmas must come before the header.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "kernels/x86/avx512.h"
#include "kernels/x86/gemm_tiles_avx512.h"
#include "quant/blocks.h"

namespace bee::avx512 {

namespace {


// A prepared Q8_K super-block.
struct alignas(64) ActSuper {
    int8_t q[256];
    float d[16];       // the block's scale in every lane
    int16_t bs16[32];  // lanes 0-15: sums of each 16 quants (Q8_K bsums); 16-31: 0
    int16_t bs32[32];  // lanes 0-7: sums of each 32 quants; 8-31: 0
};
static_assert(sizeof(ActSuper) == 448, "ActSuper layout");

size_t prepared_row_bytes(int64_t n) { return (size_t)(n / QK_K) * sizeof(ActSuper); }

void prepare_q8_k(const void* src, void* dst, int64_t n) {
    const BlockQ8_K* x = (const BlockQ8_K*)src;
    ActSuper* out = (ActSuper*)dst;
    memset(out, 0, prepared_row_bytes(n));
    for (int64_t b = 0; b < n / QK_K; b++) {
        memcpy(out[b].q, x[b].qs, 256);
        for (int l = 0; l < 16; l++) {
            out[b].d[l] = x[b].d;
            out[b].bs16[l] = x[b].bsums[l];
        }
        for (int j = 0; j < 8; j++) out[b].bs32[j] = (int16_t)(x[b].bsums[2 * j] + x[b].bsums[2 * j + 1]);
    }
}

// int16 lanes: lane l takes s16[idx(l)], for the scales of 64 elements (32 maddubs pairs).
inline __m512i pick16(__m256i s16, const int16_t (&idx)[32]) {
    return _mm512_permutexvar_epi16(_mm512_loadu_si512(idx), _mm512_zextsi256_si512(s16));
}

struct Q4K {
    using Block = BlockQ4_K;
    struct Unpacked {
        __m512i u[4], sc[4];  // quants of elements 64g..64g+63; the int16 scale of each maddubs pair
        __m128i mins;         // 8 int16 sub-block mins
        __m512 d;
        __m128 dmin;
    };
    static Unpacked unpack(const Block& x) {
        Unpacked w;
        uint32_t v[3];
        memcpy(v, x.scales, 12);
        const uint32_t sc03 = v[0] & 0x3f3f3f3fu, mn03 = v[1] & 0x3f3f3f3fu;
        const uint32_t sc47 = (v[2] & 0x0f0f0f0fu) | ((v[0] >> 2) & 0x30303030u);
        const uint32_t mn47 = ((v[2] >> 4) & 0x0f0f0f0fu) | ((v[1] >> 2) & 0x30303030u);
        const __m256i s16 = _mm256_cvtepu8_epi16(_mm_setr_epi32((int)sc03, (int)sc47, (int)mn03, (int)mn47));
        static constexpr int16_t idx[4][32] = {
            {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
            {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3},
            {4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5},
            {6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7},
        };
        const __m256i m4 = _mm256_set1_epi8(0x0F);
        for (int g = 0; g < 4; g++) {  // 64 elements: sub-block 2g (low nibbles), 2g+1 (high nibbles)
            const __m256i t = _mm256_loadu_si256((const __m256i*)(x.qs + 32 * g));
            w.u[g] = _mm512_inserti64x4(_mm512_zextsi256_si512(_mm256_and_si256(t, m4)),
                                        _mm256_and_si256(_mm256_srli_epi16(t, 4), m4), 1);
            w.sc[g] = pick16(s16, idx[g]);
        }
        w.mins = _mm256_extracti128_si256(s16, 1);
        w.d = _mm512_set1_ps(fp16_to_fp32(x.d));
        w.dmin = _mm_set1_ps(fp16_to_fp32(x.dmin));
        return w;
    }
    static constexpr bool kMins = true;
    static __m512i offset(const Unpacked&, const ActSuper&) { return _mm512_setzero_si512(); }
};

struct Q6K {
    using Block = BlockQ6_K;
    struct Unpacked {
        __m512i u[4], sc[4];
        __m256i s16;  // the 16 sub-block scales as int16
        __m512 d;
        __m128i mins;
        __m128 dmin;
    };
    static Unpacked unpack(const Block& x) {
        Unpacked w;
        static constexpr int16_t idx[4][32] = {
            {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3},
            {4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7},
            {8, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9, 10, 10, 10, 10, 10, 10, 10, 10, 11, 11, 11, 11, 11, 11, 11, 11},
            {12, 12, 12, 12, 12, 12, 12, 12, 13, 13, 13, 13, 13, 13, 13, 13, 14, 14, 14, 14, 14, 14, 14, 14, 15, 15, 15, 15, 15, 15, 15, 15},
        };
        w.s16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i*)x.scales));
        const __m256i m4 = _mm256_set1_epi8(0x0F), m_hi = _mm256_set1_epi8(0x30);
        for (int h = 0; h < 2; h++) {  // 128-element halves
            const __m256i la = _mm256_loadu_si256((const __m256i*)(x.ql + 64 * h));       // l, l+64
            const __m256i lb = _mm256_loadu_si256((const __m256i*)(x.ql + 64 * h + 32));  // l+32, l+96
            const __m256i hb = _mm256_loadu_si256((const __m256i*)(x.qh + 32 * h));
            const __m256i q0 = _mm256_or_si256(_mm256_and_si256(la, m4), _mm256_and_si256(_mm256_slli_epi16(hb, 4), m_hi));
            const __m256i q1 = _mm256_or_si256(_mm256_and_si256(lb, m4), _mm256_and_si256(_mm256_slli_epi16(hb, 2), m_hi));
            const __m256i q2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(la, 4), m4), _mm256_and_si256(hb, m_hi));
            const __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lb, 4), m4),
                                               _mm256_and_si256(_mm256_srli_epi16(hb, 2), m_hi));
            w.u[2 * h] = _mm512_inserti64x4(_mm512_zextsi256_si512(q0), q1, 1);
            w.u[2 * h + 1] = _mm512_inserti64x4(_mm512_zextsi256_si512(q2), q3, 1);
        }
        for (int g = 0; g < 4; g++) w.sc[g] = pick16(w.s16, idx[g]);
        w.d = _mm512_set1_ps(fp16_to_fp32(x.d));
        w.mins = _mm_setzero_si128();
        w.dmin = _mm_setzero_ps();
        return w;
    }
    static constexpr bool kMins = false;
    // The -32 of every quant: -32 · Σ_j sc_j · bsum16_j, in lanes 0-7.
    static __m512i offset(const Unpacked& w, const ActSuper& a) {
        const __m256i o = _mm256_dpwssd_epi32(_mm256_setzero_si256(), w.s16, _mm256_load_si256((const __m256i*)a.bs16));
        return _mm512_zextsi256_si512(_mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(o, 5)));
    }
};

// Super-block b of an R × C tile.
template <class W, int R, int C>
inline __attribute__((always_inline)) void tile_super(const uint8_t* w, size_t ws, const uint8_t* a, size_t as,
                                                      int64_t b, __m512 (&acc)[R][C], __m128 (&accm)[R][C]) {
    using Block = typename W::Block;
    typename W::Unpacked wp[R];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) wp[r] = W::unpack(((const Block*)(w + r * ws))[b]);
    #pragma GCC unroll 4
    for (int c = 0; c < C; c++) {
        const ActSuper& ap = ((const ActSuper*)(a + c * as))[b];
        const __m512 da = _mm512_load_ps(ap.d);
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m512i isum = W::offset(wp[r], ap);
            #pragma GCC unroll 4
            for (int g = 0; g < 4; g++) {
                const __m512i p = _mm512_maddubs_epi16(wp[r].u[g], _mm512_load_si512(ap.q + 64 * g));
                isum = _mm512_dpwssd_epi32(isum, p, wp[r].sc[g]);
            }
            acc[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(wp[r].d, da), acc[r][c]);
            if constexpr (W::kMins) {
                const __m128i mi = _mm_dpwssd_epi32(_mm_setzero_si128(), wp[r].mins, _mm_load_si128((const __m128i*)ap.bs32));
                accm[r][c] = _mm_fmadd_ps(_mm_cvtepi32_ps(mi), _mm_mul_ps(wp[r].dmin, _mm512_castps512_ps128(da)),
                                          accm[r][c]);
            }
        }
    }
}

// The R × C tile; prepared rows must be 64-byte aligned.
template <class W, int R, int C>
void tile(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, float* y, size_t ldy) {
    __m512 acc[R][C];
    __m128 accm[R][C];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 4
        for (int c = 0; c < C; c++) {
            acc[r][c] = _mm512_setzero_ps();
            accm[r][c] = _mm_setzero_ps();
        }
    for (int64_t b = 0; b < n / QK_K; b++) tile_super<W, R, C>(w, ws, a, as, b, acc, accm);
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 4
        for (int c = 0; c < C; c++) {
            __m128 m = _mm_add_ps(accm[r][c], _mm_movehl_ps(accm[r][c], accm[r][c]));
            m = _mm_add_ss(m, _mm_movehdup_ps(m));
            y[c * ldy + r] = _mm512_reduce_add_ps(acc[r][c]) - _mm_cvtss_f32(m);
        }
}

// The fixed-shape tiles of weight type W, for tile_any (gemm_tiles_avx512.h).
template <class W>
struct Tiles {
    template <int R, int C>
    static void run(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, float* y, size_t ldy) {
        tile<W, R, C>(n, w, ws, a, as, y, ldy);
    }
};

}  // namespace

// Referenced from avx512_table.cpp.
extern const GemmKernel kGemmQ4_K = {GgmlType::Q8_K, prepared_row_bytes, prepare_q8_k, tile_any<Tiles<Q4K>>, kMaxRows,
                                     kMaxCols, nullptr};
extern const GemmKernel kGemmQ6_K = {GgmlType::Q8_K, prepared_row_bytes, prepare_q8_k, tile_any<Tiles<Q6K>>, kMaxRows,
                                     kMaxCols, nullptr};

}  // namespace bee::avx512
