// kernels/x86/gemm_rows16_avxvnni: the AVX2 tiles of gemm_rows16_avx2.cpp with AVX-VNNI dot products
// (vpdpbusd on 256-bit registers: one instruction per 4 bytes × 8 rows instead of vpmaddubsw + vpmaddwd),
// for CPUs that have AVX-VNNI but not AVX-512 (cpu_avx_vnni()). Same exact integer sums, same float
// operations: the same bits.
#include <immintrin.h>

#include <cstring>

#include "base/fp16.h"
#include "kernels/gemm.h"
#include "kernels/repack.h"
#include "kernels/x86/tile_act.h"
#include "quant/blocks.h"

namespace bee::avxvnni {

constexpr bool kVnni = true;
#include "kernels/x86/gemm_rows16_avx2_body.h"

}  // namespace bee::avxvnni
