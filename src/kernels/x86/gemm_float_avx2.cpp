// kernels/x86/gemm_float_avx2: AVX2 tile kernels (kernels/gemm.h) of F16, BF16 and F32 weights against f32
// activations (their vec_dot_type), up to 4 weight rows × 2 tokens on GGUF rows — the AVX-512 float tiles
// (gemm_float_avx512.cpp) on 8-wide registers, with 16 of them: 8 accumulators, 4 weight vectors, one
// activation vector.
// Per output, in element order, 8 at a time: acc = fma(float(w[k..k+7]), a[k..k+7], acc) (a tail shorter
// than 8 read from a zero-padded copy), then y = the lanes summed in one fixed order. Every output is this
// one sequence whatever the tile shape (DESIGN invariant 2). Both conversions are exact.
#include <immintrin.h>

#include <cstring>

#include "base/fp16.h"
#include "kernels/gemm.h"

namespace bee::avx2 {

namespace {

constexpr int kMaxRows = 4;  // weight rows per tile
constexpr int kMaxCols = 2;  // tokens per tile

// Bytes of each weight row read ahead of the tile (software prefetch, as in the AVX-512 tile).
constexpr size_t kAhead = 1024;

size_t prepared_row_bytes(int64_t n) { return (size_t)n * sizeof(float); }

// The activations are already f32 (the kernel's act_type): prepared = copied.
void prepare_f32(const void* src, void* dst, int64_t n) { memcpy(dst, src, (size_t)n * sizeof(float)); }

// 8 weights at `p` (the row's element k) -> f32.
struct F32 {
    static constexpr size_t kBytes = 4;  // per weight
    static __m256 load(const uint8_t* p) { return _mm256_loadu_ps((const float*)p); }
};
struct F16 {
    static constexpr size_t kBytes = 2;
    static __m256 load(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p)); }
};
struct BF16 {  // bf16 is the top half of an f32
    static constexpr size_t kBytes = 2;
    static __m256 load(const uint8_t* p) {
        const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)p));
        return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
    }
};

// The 8 lanes summed: (l0+l4, l1+l5, l2+l6, l3+l7), then pairs, then the last two.
inline float reduce8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

// Elements [k, k + 8) of an R × C tile: weights of row r at w + r·ws (pointing at element k), activations
// of token c at a + c·as.
template <class W, int R, int C, bool kPrefetch = true>
inline __attribute__((always_inline)) void tile_step(const uint8_t* w, size_t ws, const float* a, size_t as_f,
                                                     __m256 (&acc)[R][C]) {
    __m256 wv[R];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        if constexpr (kPrefetch) _mm_prefetch((const char*)(w + r * ws + kAhead), _MM_HINT_T0);
        wv[r] = W::load(w + r * ws);
    }
#pragma GCC unroll 2
    for (int c = 0; c < C; c++) {
        const __m256 av = _mm256_loadu_ps(a + c * as_f);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) acc[r][c] = _mm256_fmadd_ps(wv[r], av, acc[r][c]);
    }
}

template <class W, int R, int C>
void tile(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, float* y, size_t ldy) {
    __m256 acc[R][C];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 2
        for (int c = 0; c < C; c++) acc[r][c] = _mm256_setzero_ps();
    const size_t as_f = as / sizeof(float);
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) tile_step<W, R, C>(w + W::kBytes * k, ws, (const float*)a + k, as_f, acc);
    if (k < n) {  // the tail, zero-padded to 8: zero weights add exact zeros
        alignas(32) uint8_t wt[R][8 * 4] = {};
        alignas(32) float at[C][8] = {};
        for (int r = 0; r < R; r++) memcpy(wt[r], w + r * ws + W::kBytes * k, W::kBytes * (size_t)(n - k));
        for (int c = 0; c < C; c++) memcpy(at[c], (const float*)(a + c * as) + k, sizeof(float) * (size_t)(n - k));
        tile_step<W, R, C, false>(wt[0], sizeof wt[0], at[0], 8, acc);
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 2
        for (int c = 0; c < C; c++) y[c * ldy + r] = reduce8(acc[r][c]);
}

using FixedTileFn = void (*)(int64_t, const uint8_t*, size_t, const uint8_t*, size_t, float*, size_t);

template <class W>
void tile_any(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, int nr, int nc, float* y,
              size_t ldy) {
    static_assert(kMaxRows == 4 && kMaxCols == 2, "tile table below is 4 x 2");
    static constexpr FixedTileFn table[4][2] = {
        {tile<W, 1, 1>, tile<W, 1, 2>},
        {tile<W, 2, 1>, tile<W, 2, 2>},
        {tile<W, 3, 1>, tile<W, 3, 2>},
        {tile<W, 4, 1>, tile<W, 4, 2>},
    };
    table[nr - 1][nc - 1](n, w, ws, a, as, y, ldy);
}

}  // namespace

// Referenced from avx2_table.cpp.
extern const GemmKernel kGemmF32 = {GgmlType::F32, prepared_row_bytes, prepare_f32, tile_any<F32>,
                                    kMaxRows,      kMaxCols,           nullptr};
extern const GemmKernel kGemmF16 = {GgmlType::F32, prepared_row_bytes, prepare_f32, tile_any<F16>,
                                    kMaxRows,      kMaxCols,           nullptr};
extern const GemmKernel kGemmBF16 = {GgmlType::F32, prepared_row_bytes, prepare_f32, tile_any<BF16>,
                                     kMaxRows,      kMaxCols,           nullptr};

}  // namespace bee::avx2
