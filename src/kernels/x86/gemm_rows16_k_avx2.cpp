// kernels/x86/gemm_rows16_k_avx2: AVX2 tile kernels (kernels/gemm.h) of the K-quants Q2_K, Q3_K, Q4_K, Q5_K
// and Q6_K against Q8_K activations, 8 weight rows × up to 4 tokens, on the rows16 layout (kernels/repack.h:
// each 256-element super-block transposed into 4-byte words, word i of 16 rows in one 64-byte vector: an 8-row
// tile reads its half) and on GGUF rows (the same words gathered, 32 bits per row).
// The AVX-512 tiles (gemm_rows16_k_avx512.cpp) on 256-bit registers: the same exact integer work per
// super-block, token and row — S_j = Σ u·a per sub-block (vpmaddubsw, then vpmaddwd with ones; at most G
// products summed in s16, below saturation), isum = Σ_j sc_j·S_j, imin = Σ_j m_j·(Σa over sub-block j)
// (vpmaddwd on int16 pairs) — then, in the same order, acc = fma(float(isum), d·da, acc) and for
// Q2_K/Q4_K/Q5_K acc = fnma(float(imin), dmin·da, acc). So every tile shape, both layouts and both ISAs
// give the same bits (DESIGN invariant 2).
#include <immintrin.h>

#include <cstring>

#include "kernels/gemm.h"
#include "kernels/repack.h"
#include "kernels/x86/tile_act.h"
#include "quant/blocks.h"

namespace bee::avx2 {

constexpr bool kVnni = false;
#include "kernels/x86/gemm_rows16_k_avx2_body.h"

}  // namespace bee::avx2
