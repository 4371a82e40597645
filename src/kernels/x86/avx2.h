// kernels/x86/avx2: AVX2+FMA+F16C fast paths. Only called when cpu_isa() >= Isa::avx2.
#pragma once
#include "kernels/repack.h"
#include "quant/quant.h"

namespace bee {
struct GemmKernel;
}

namespace bee::avx2 {

// AVX2 dot product for weight type `wtype` (with its vec_dot_type activations), or nullptr if none.
VecDotFn vec_dot(GgmlType wtype);
// AVX2 float -> activation-type conversion (Q8_0, Q8_1, Q8_K), or nullptr if none.
// Must produce exactly the bytes of the reference quantizer (batch invariance across ISA is not
// required, but within one ISA results must not depend on batch shape).
QuantizeRowFn quantize_activation(GgmlType vec_dot_type);
// AVX2 tile kernel for weight type `wtype` stored in `layout` (the 32-element types and the K-quants, whose
// two layouts give the same bits, and the AVX-512 tiles' bits; F32/F16/BF16 on GGUF rows), or nullptr
// (matmul then calls vec_dot per output).
const GemmKernel* gemm_kernel(GgmlType wtype, WeightLayout layout);

}  // namespace bee::avx2
