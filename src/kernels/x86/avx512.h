// kernels/x86/avx512: AVX-512 (F, BW, DQ, VL, VNNI) fast paths. Only called when cpu_isa() >= Isa::avx512.
#pragma once
#include "kernels/gemm.h"

namespace bee::avx512 {

// Blocked matmul kernel for weight type `wtype` stored in `layout`, or nullptr if none.
const GemmKernel* gemm_kernel(GgmlType wtype, WeightLayout layout);

}  // namespace bee::avx512
