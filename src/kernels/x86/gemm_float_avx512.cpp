// kernels/x86/gemm_float_avx512: AVX-512 tile kernels (kernels/gemm.h) of F16, BF16 (and F32) weights against
// f32 activations (their vec_dot_type), up to 4 weight rows × 4 tokens on GGUF rows.
// Each weight vector of 16 elements is converted to f32 once per tile and reused for every token, each
// activation vector once for every row. Per output, in element order, 16 at a time:
//   acc = fma(float(w[k..k+15]), a[k..k+15], acc)   (a zero-masked tail where n is not a multiple of 16)
// then y = reduce_add(acc). Every output is this one sequence whatever the tile shape (DESIGN invariant 2).
// Both conversions are exact (fp16 and bf16 are subsets of f32), so the result is an f32 dot product of the
// exact weights and activations, as in the scalar and AVX2 paths (only the summation order differs).
// note: vdpbf16ps (AVX512-BF16) would need the activations rounded to bf16 (8 mantissa bits), an error of
// ~2^-9 per element that the f32 paths do not have, so it is not used: the BF16 tile widens weights instead.
// note: GCC 12's AVX-512 headers build intrinsics on _mm512_undefined_*(), which -Wuninitialized flags
// (a false positive); the pragmas must come before the header.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "kernels/x86/avx512.h"

namespace bee::avx512 {

namespace {

constexpr int kMaxRows = 4;  // weight rows per tile
constexpr int kMaxCols = 4;  // tokens per tile: 16 accumulators + 4 weight + 4 activation vectors

// Bytes of each weight row read ahead of the tile (software prefetch: decode streams R rows at once, more
// than the hardware prefetcher follows well). A prefetch past the row's end is harmless.
constexpr size_t kAhead = 1024;

size_t prepared_row_bytes(int64_t n) { return (size_t)n * sizeof(float); }

// The activations are already f32 (the kernel's act_type): prepared = copied.
void prepare_f32(const void* src, void* dst, int64_t n) { memcpy(dst, src, (size_t)n * sizeof(float)); }

// 16 (or, masked, fewer: the rest 0) weights at element k of a row -> f32.
struct F32 {
    static constexpr size_t kBytes = 4;  // per weight
    static __m512 load(const uint8_t* row, int64_t k, __mmask16 m) { return _mm512_maskz_loadu_ps(m, row + 4 * k); }
};
struct F16 {
    static constexpr size_t kBytes = 2;
    static __m512 load(const uint8_t* row, int64_t k, __mmask16 m) {
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, row + 2 * k));
    }
};
struct BF16 {  // bf16 is the top half of an f32
    static constexpr size_t kBytes = 2;
    static __m512 load(const uint8_t* row, int64_t k, __mmask16 m) {
        const __m512i h = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, row + 2 * k));
        return _mm512_castsi512_ps(_mm512_slli_epi32(h, 16));
    }
};

// Elements [k, k + 16) (those in mask m) of an R × C tile.
template <class W, int R, int C>
inline __attribute__((always_inline)) void tile_step(const uint8_t* w, size_t ws, const uint8_t* a, size_t as,
                                                     int64_t k, __mmask16 m, __m512 (&acc)[R][C]) {
    __m512 wv[R];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        _mm_prefetch((const char*)(w + r * ws + W::kBytes * k + kAhead), _MM_HINT_T0);
        wv[r] = W::load(w + r * ws, k, m);
    }
#pragma GCC unroll 4
    for (int c = 0; c < C; c++) {
        const __m512 av = _mm512_maskz_loadu_ps(m, (const float*)(a + c * as) + k);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) acc[r][c] = _mm512_fmadd_ps(wv[r], av, acc[r][c]);
    }
}

template <class W, int R, int C>
void tile(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, float* y, size_t ldy) {
    __m512 acc[R][C];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) acc[r][c] = _mm512_setzero_ps();
    int64_t k = 0;
    for (; k + 16 <= n; k += 16) tile_step<W, R, C>(w, ws, a, as, k, (__mmask16)0xFFFF, acc);
    if (k < n) tile_step<W, R, C>(w, ws, a, as, k, (__mmask16)((1u << (n - k)) - 1), acc);
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) y[c * ldy + r] = _mm512_reduce_add_ps(acc[r][c]);
}

using FixedTileFn = void (*)(int64_t, const uint8_t*, size_t, const uint8_t*, size_t, float*, size_t);

template <class W>
void tile_any(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, int nr, int nc, float* y,
              size_t ldy) {
    static_assert(kMaxRows == 4 && kMaxCols == 4, "tile table below is 4 x 4");
    static constexpr FixedTileFn table[4][4] = {
        {tile<W, 1, 1>, tile<W, 1, 2>, tile<W, 1, 3>, tile<W, 1, 4>},
        {tile<W, 2, 1>, tile<W, 2, 2>, tile<W, 2, 3>, tile<W, 2, 4>},
        {tile<W, 3, 1>, tile<W, 3, 2>, tile<W, 3, 3>, tile<W, 3, 4>},
        {tile<W, 4, 1>, tile<W, 4, 2>, tile<W, 4, 3>, tile<W, 4, 4>},
    };
    table[nr - 1][nc - 1](n, w, ws, a, as, y, ldy);
}

}  // namespace

// Referenced from avx512_table.cpp.
extern const GemmKernel kGemmF32 = {GgmlType::F32, prepared_row_bytes, prepare_f32, tile_any<F32>,
                                    kMaxRows,      kMaxCols,           nullptr};
extern const GemmKernel kGemmF16 = {GgmlType::F32, prepared_row_bytes, prepare_f32, tile_any<F16>,
                                    kMaxRows,      kMaxCols,           nullptr};
extern const GemmKernel kGemmBF16 = {GgmlType::F32, prepared_row_bytes, prepare_f32, tile_any<BF16>,
                                     kMaxRows,      kMaxCols,           nullptr};

}  // namespace bee::avx512
