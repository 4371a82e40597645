// kernels/x86/avx2_table: which AVX2 kernel serves each type. Compiled without AVX2 flags: it only hands
// out function pointers, which callers use after checking cpu_isa() >= Isa::avx2.
#include "base/cpu.h"
#include "kernels/gemm.h"
#include "kernels/x86/avx2.h"

namespace bee::avxvnni {

// gemm_rows16_avxvnni.cpp, gemm_rows16_k_avxvnni.cpp (both layouts): the same tiles with AVX-VNNI
extern const GemmKernel kGemmQ4_0, kGemmQ4_1, kGemmQ5_0, kGemmQ5_1, kGemmQ8_0;
extern const GemmKernel kGemmRows16Q4_0, kGemmRows16Q4_1, kGemmRows16Q5_0, kGemmRows16Q5_1, kGemmRows16Q8_0;
extern const GemmKernel kGemmQ2_K, kGemmQ3_K, kGemmQ4_K, kGemmQ5_K, kGemmQ6_K;
extern const GemmKernel kGemmRows16Q2_K, kGemmRows16Q3_K, kGemmRows16Q4_K, kGemmRows16Q5_K, kGemmRows16Q6_K;

}  // namespace bee::avxvnni

namespace bee::avx2 {

// vec_dot_avx2.cpp
void vec_dot_f32_f32(int64_t n, const void* w, const void* a, float* out);
void vec_dot_f16_f32(int64_t n, const void* w, const void* a, float* out);
void vec_dot_bf16_f32(int64_t n, const void* w, const void* a, float* out);
void vec_dot_q4_0_q8_0(int64_t n, const void* w, const void* a, float* out);
void vec_dot_q4_1_q8_1(int64_t n, const void* w, const void* a, float* out);
void vec_dot_q5_0_q8_0(int64_t n, const void* w, const void* a, float* out);
void vec_dot_q5_1_q8_1(int64_t n, const void* w, const void* a, float* out);
void vec_dot_q8_0_q8_0(int64_t n, const void* w, const void* a, float* out);
// vec_dot_k_avx2.cpp
void vec_dot_q2_K_q8_K(int64_t n, const void* w, const void* a, float* out);
void vec_dot_q3_K_q8_K(int64_t n, const void* w, const void* a, float* out);
void vec_dot_q4_K_q8_K(int64_t n, const void* w, const void* a, float* out);
void vec_dot_q5_K_q8_K(int64_t n, const void* w, const void* a, float* out);
void vec_dot_q6_K_q8_K(int64_t n, const void* w, const void* a, float* out);
// gemm_rows16_avx2.cpp (both layouts)
extern const GemmKernel kGemmQ4_0, kGemmQ4_1, kGemmQ5_0, kGemmQ5_1, kGemmQ8_0;
extern const GemmKernel kGemmRows16Q4_0, kGemmRows16Q4_1, kGemmRows16Q5_0, kGemmRows16Q5_1, kGemmRows16Q8_0;
// gemm_float_avx2.cpp (GGUF rows)
extern const GemmKernel kGemmF32, kGemmF16, kGemmBF16;
// gemm_rows16_k_avx2.cpp (both layouts)
extern const GemmKernel kGemmQ2_K, kGemmQ3_K, kGemmQ4_K, kGemmQ5_K, kGemmQ6_K;
extern const GemmKernel kGemmRows16Q2_K, kGemmRows16Q3_K, kGemmRows16Q4_K, kGemmRows16Q5_K, kGemmRows16Q6_K;
// quantize_avx2.cpp
void quantize_row_q8_0(const float* src, void* dst, int64_t n);
void quantize_row_q8_1(const float* src, void* dst, int64_t n);
void quantize_row_q8_K(const float* src, void* dst, int64_t n);

VecDotFn vec_dot(GgmlType wtype) {
    switch (wtype) {
        case GgmlType::F32: return vec_dot_f32_f32;
        case GgmlType::F16: return vec_dot_f16_f32;
        case GgmlType::BF16: return vec_dot_bf16_f32;
        case GgmlType::Q4_0: return vec_dot_q4_0_q8_0;
        case GgmlType::Q4_1: return vec_dot_q4_1_q8_1;
        case GgmlType::Q5_0: return vec_dot_q5_0_q8_0;
        case GgmlType::Q5_1: return vec_dot_q5_1_q8_1;
        case GgmlType::Q8_0: return vec_dot_q8_0_q8_0;
        case GgmlType::Q2_K: return vec_dot_q2_K_q8_K;
        case GgmlType::Q3_K: return vec_dot_q3_K_q8_K;
        case GgmlType::Q4_K: return vec_dot_q4_K_q8_K;
        case GgmlType::Q5_K: return vec_dot_q5_K_q8_K;
        case GgmlType::Q6_K: return vec_dot_q6_K_q8_K;
        default: return nullptr;
    }
}

QuantizeRowFn quantize_activation(GgmlType vec_dot_type) {
    switch (vec_dot_type) {
        case GgmlType::Q8_0: return quantize_row_q8_0;
        case GgmlType::Q8_1: return quantize_row_q8_1;
        case GgmlType::Q8_K: return quantize_row_q8_K;
        default: return nullptr;
    }
}

// The quantized tiles of one namespace (avx2 or avxvnni: the same names).
#define BEE_QUANT_TILES(ns)                                                     \
    case GgmlType::Q4_0: return packed ? &ns::kGemmRows16Q4_0 : &ns::kGemmQ4_0; \
    case GgmlType::Q4_1: return packed ? &ns::kGemmRows16Q4_1 : &ns::kGemmQ4_1; \
    case GgmlType::Q5_0: return packed ? &ns::kGemmRows16Q5_0 : &ns::kGemmQ5_0; \
    case GgmlType::Q5_1: return packed ? &ns::kGemmRows16Q5_1 : &ns::kGemmQ5_1; \
    case GgmlType::Q8_0: return packed ? &ns::kGemmRows16Q8_0 : &ns::kGemmQ8_0; \
    case GgmlType::Q2_K: return packed ? &ns::kGemmRows16Q2_K : &ns::kGemmQ2_K; \
    case GgmlType::Q3_K: return packed ? &ns::kGemmRows16Q3_K : &ns::kGemmQ3_K; \
    case GgmlType::Q4_K: return packed ? &ns::kGemmRows16Q4_K : &ns::kGemmQ4_K; \
    case GgmlType::Q5_K: return packed ? &ns::kGemmRows16Q5_K : &ns::kGemmQ5_K; \
    case GgmlType::Q6_K: return packed ? &ns::kGemmRows16Q6_K : &ns::kGemmQ6_K;

const GemmKernel* gemm_kernel(GgmlType wtype, WeightLayout layout) {
    const bool packed = layout == WeightLayout::rows16;
    if (cpu_avx_vnni()) {
        switch (wtype) {
            BEE_QUANT_TILES(avxvnni)
            default: break;
        }
    }
    switch (wtype) {
        case GgmlType::F32: return packed ? nullptr : &kGemmF32;
        case GgmlType::F16: return packed ? nullptr : &kGemmF16;
        case GgmlType::BF16: return packed ? nullptr : &kGemmBF16; BEE_QUANT_TILES(avx2)
        default: return nullptr;
    }
}
#undef BEE_QUANT_TILES

}  // namespace bee::avx2
