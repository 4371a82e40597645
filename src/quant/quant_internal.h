// quant/quant_internal: the per-type reference routines behind the traits table in quant.cpp.
#pragma once
#include <cmath>
#include <cstdint>

namespace bee {

// Signatures match DequantizeRowFn / QuantizeRowFn / VecDotFn in quant.h; n is a multiple of the
// block size (checked by the callers, never here).

// The value of largest magnitude in x[0..n), with its sign; the first one wins ties (as in ggml).
inline float signed_absmax(const float* x, int n) {
    float amax = 0, max = 0;
    for (int i = 0; i < n; ++i) {
        if (amax < fabsf(x[i])) {
            amax = fabsf(x[i]);
            max = x[i];
        }
    }
    return max;
}

// quant_float.cpp
void dequantize_row_f32(const void* src, float* dst, int64_t n);
void quantize_row_f32(const float* src, void* dst, int64_t n);
void dequantize_row_f16(const void* src, float* dst, int64_t n);
void quantize_row_f16(const float* src, void* dst, int64_t n);
void dequantize_row_f16_avx2(const void* src, float* dst, int64_t n);  // quant_float_avx2.cpp (cpu_isa() >= avx2)
void quantize_row_f16_avx2(const float* src, void* dst, int64_t n);
void dequantize_row_bf16(const void* src, float* dst, int64_t n);
void quantize_row_bf16(const float* src, void* dst, int64_t n);
void vec_dot_f32_f32(int64_t n, const void* w, const void* a, float* out);
void vec_dot_f16_f32(int64_t n, const void* w, const void* a, float* out);
void vec_dot_bf16_f32(int64_t n, const void* w, const void* a, float* out);

// quant_legacy.cpp
void dequantize_row_q4_0(const void* src, float* dst, int64_t n);
void quantize_row_q4_0(const float* src, void* dst, int64_t n);
void dequantize_row_q4_1(const void* src, float* dst, int64_t n);
void quantize_row_q4_1(const float* src, void* dst, int64_t n);
void dequantize_row_q5_0(const void* src, float* dst, int64_t n);
void quantize_row_q5_0(const float* src, void* dst, int64_t n);
void dequantize_row_q5_1(const void* src, float* dst, int64_t n);
void quantize_row_q5_1(const float* src, void* dst, int64_t n);
void dequantize_row_q8_0(const void* src, float* dst, int64_t n);
void quantize_row_q8_0(const float* src, void* dst, int64_t n);
void dequantize_row_q8_1(const void* src, float* dst, int64_t n);
void quantize_row_q8_1(const float* src, void* dst, int64_t n);
void vec_dot_q4_0_q8_0(int64_t n, const void* w, const void* a, float* out);
void vec_dot_q4_1_q8_1(int64_t n, const void* w, const void* a, float* out);
void vec_dot_q5_0_q8_0(int64_t n, const void* w, const void* a, float* out);
void vec_dot_q5_1_q8_1(int64_t n, const void* w, const void* a, float* out);
void vec_dot_q8_0_q8_0(int64_t n, const void* w, const void* a, float* out);

// quant_k.cpp (dequantize, Q8_K), quant_k_quantize.cpp (weight quantizers), quant_k_dot.cpp (vec_dot)
void dequantize_row_q2_K(const void* src, float* dst, int64_t n);
void quantize_row_q2_K(const float* src, void* dst, int64_t n);
void dequantize_row_q3_K(const void* src, float* dst, int64_t n);
void quantize_row_q3_K(const float* src, void* dst, int64_t n);
void dequantize_row_q4_K(const void* src, float* dst, int64_t n);
void quantize_row_q4_K(const float* src, void* dst, int64_t n);
void dequantize_row_q5_K(const void* src, float* dst, int64_t n);
void quantize_row_q5_K(const float* src, void* dst, int64_t n);
void dequantize_row_q6_K(const void* src, float* dst, int64_t n);
void quantize_row_q6_K(const float* src, void* dst, int64_t n);
void dequantize_row_q8_K(const void* src, float* dst, int64_t n);
void quantize_row_q8_K(const float* src, void* dst, int64_t n);
void vec_dot_q2_K_q8_K(int64_t n, const void* w, const void* a, float* out);
void vec_dot_q3_K_q8_K(int64_t n, const void* w, const void* a, float* out);
void vec_dot_q4_K_q8_K(int64_t n, const void* w, const void* a, float* out);
void vec_dot_q5_K_q8_K(int64_t n, const void* w, const void* a, float* out);
void vec_dot_q6_K_q8_K(int64_t n, const void* w, const void* a, float* out);

}  // namespace bee
