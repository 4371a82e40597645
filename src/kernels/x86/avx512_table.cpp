// kernels/x86/avx512_table: which AVX-512 kernel serves each type. Compiled without AVX-512 flags: it only
// hands out pointers, which callers use after checking cpu_isa() >= Isa::avx512.
#include "kernels/x86/avx512.h"

namespace bee::avx512 {

// gemm_rows16_avx512.cpp (both layouts)
extern const GemmKernel kGemmQ4_0, kGemmQ4_1, kGemmQ5_0, kGemmQ5_1, kGemmQ8_0;
extern const GemmKernel kGemmRows16Q4_0, kGemmRows16Q4_1, kGemmRows16Q5_0, kGemmRows16Q5_1, kGemmRows16Q8_0;
// gemm_rows16_k_avx512.cpp (both layouts)
extern const GemmKernel kGemmQ2_K, kGemmQ3_K, kGemmQ4_K, kGemmQ5_K, kGemmQ6_K;
extern const GemmKernel kGemmRows16Q2_K, kGemmRows16Q3_K, kGemmRows16Q4_K, kGemmRows16Q5_K, kGemmRows16Q6_K;

// gemm_float_avx512.cpp (GGUF rows)
extern const GemmKernel kGemmF32, kGemmF16, kGemmBF16;

// quantize_avx512.cpp
void quantize_row_q8_0(const float* src, void* dst, int64_t n);
void quantize_row_q8_1(const float* src, void* dst, int64_t n);

QuantizeRowFn quantize_activation(GgmlType t) {
    switch (t) {
        case GgmlType::Q8_0: return quantize_row_q8_0;
        case GgmlType::Q8_1: return quantize_row_q8_1;
        default: return nullptr;
    }
}

const GemmKernel* gemm_kernel(GgmlType wtype, WeightLayout layout) {
    if (layout == WeightLayout::rows16) {
        switch (wtype) {
            case GgmlType::Q4_0: return &kGemmRows16Q4_0;
            case GgmlType::Q4_1: return &kGemmRows16Q4_1;
            case GgmlType::Q5_0: return &kGemmRows16Q5_0;
            case GgmlType::Q5_1: return &kGemmRows16Q5_1;
            case GgmlType::Q8_0: return &kGemmRows16Q8_0;
            case GgmlType::Q2_K: return &kGemmRows16Q2_K;
            case GgmlType::Q3_K: return &kGemmRows16Q3_K;
            case GgmlType::Q4_K: return &kGemmRows16Q4_K;
            case GgmlType::Q5_K: return &kGemmRows16Q5_K;
            case GgmlType::Q6_K: return &kGemmRows16Q6_K;
            default: return nullptr;
        }
    }
    switch (wtype) {
        case GgmlType::F32: return &kGemmF32;
        case GgmlType::F16: return &kGemmF16;
        case GgmlType::BF16: return &kGemmBF16;
        case GgmlType::Q4_0: return &kGemmQ4_0;
        case GgmlType::Q4_1: return &kGemmQ4_1;
        case GgmlType::Q5_0: return &kGemmQ5_0;
        case GgmlType::Q5_1: return &kGemmQ5_1;
        case GgmlType::Q8_0: return &kGemmQ8_0;
        case GgmlType::Q2_K: return &kGemmQ2_K;
        case GgmlType::Q3_K: return &kGemmQ3_K;
        case GgmlType::Q4_K: return &kGemmQ4_K;
        case GgmlType::Q5_K: return &kGemmQ5_K;
        case GgmlType::Q6_K: return &kGemmQ6_K;
        default: return nullptr;
    }
}

}  // namespace bee::avx512
