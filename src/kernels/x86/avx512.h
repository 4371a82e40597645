// kernels/x86/avx512: AVX-512 (F, BW, DQ, VL, VNNI) fast paths. Only called when cpu_isa() >= Isa::avx512.
#pragma once
#include <utility>

#include "kernels/gemm.h"
#include "kernels/x86/tile_act.h"
#include "quant/quant.h"

namespace bee::avx512 {

// Blocked matmul kernel for weight type `wtype` stored in `layout`, or nullptr if none.
const GemmKernel* gemm_kernel(GgmlType wtype, WeightLayout layout);

// Activation quantizer into `t` (Q8_0, Q8_1; nullptr for others), byte-identical to the reference.
QuantizeRowFn quantize_activation(GgmlType t);

using x86::with_cols;  // kernels/x86/tile_act.h

}  // namespace bee::avx512
