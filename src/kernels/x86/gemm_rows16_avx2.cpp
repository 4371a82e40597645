// kernels/x86/gemm_rows16_avx2: AVX2 tile kernels (kernels/gemm.h) of the 32-element weight types Q4_0,
// Q4_1, Q5_0, Q5_1 and Q8_0, 8 weight rows × up to 4 tokens, on the rows16 layout (kernels/repack.h) —
// one half of a 16-row group: a 256-bit register holds the first or the last 32 bytes of each 64-byte
// vector — and on GGUF rows (8 rows gathered).
// Int32 lane l belongs to weight row l. Without VNNI, 4 weight bytes × 4 activation bytes per lane are
// vpmaddubsw (u8 × s8 -> s16 pairs) then vpmaddwd with ones (-> s32). The s16 sums must not saturate:
// Q4 weights are <= 15, so the 8 vpmaddubsw of a block add up in s16 (<= 8 · 2 · 15 · 128 = 30720) before
// one vpmaddwd; Q5 weights (<= 31) in two halves of 4; Q8_0 weights are signed, so each product goes
// through |w| · sign(a, w) (<= 2 · 128 · 127 per pair) and its own vpmaddwd. CPUs with AVX-VNNI (Alder
// Lake and later without AVX-512) run the same tiles with vpdpbusd instead (gemm_rows16_avxvnni.cpp).
// The integer block sum is exact, and then every output lane does exactly what the AVX-512 tile does:
//   acc = fma(float(Σ q·a + start), dw·da, acc), then for Q4_1/Q5_1 acc = fma(m, s, acc)
// so both ISAs, both layouts, every tile shape and batch size give the same bits (DESIGN invariant 2).
#include <immintrin.h>

#include <cstring>

#include "base/fp16.h"
#include "kernels/gemm.h"
#include "kernels/repack.h"
#include "kernels/x86/tile_act.h"
#include "quant/blocks.h"

namespace bee::avx2 {

constexpr bool kVnni = false;
#include "kernels/x86/gemm_rows16_avx2_body.h"

}  // namespace bee::avx2
