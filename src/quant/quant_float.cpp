// quant/quant_float: F32, F16 and BF16 rows: conversion both ways and the reference dot against F32.
#include <cstring>

#include "base/cpu.h"
#include "base/fp16.h"
#include "quant/quant_internal.h"

namespace bee {

void dequantize_row_f32(const void* src, float* dst, int64_t n) { memcpy(dst, src, (size_t)n * 4); }
void quantize_row_f32(const float* src, void* dst, int64_t n) { memcpy(dst, src, (size_t)n * 4); }

void dequantize_row_f16(const void* src, float* dst, int64_t n) {
    if (cpu_isa() >= Isa::avx2) return dequantize_row_f16_avx2(src, dst, n);
    const fp16_t* h = (const fp16_t*)src;
    for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(h[i]);
}

void quantize_row_f16(const float* src, void* dst, int64_t n) {
    if (cpu_isa() >= Isa::avx2) return quantize_row_f16_avx2(src, dst, n);
    fp16_t* h = (fp16_t*)dst;
    for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_fp16(src[i]);
}

void dequantize_row_bf16(const void* src, float* dst, int64_t n) {
    const bf16_t* h = (const bf16_t*)src;
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(h[i]);
}

void quantize_row_bf16(const float* src, void* dst, int64_t n) {
    bf16_t* h = (bf16_t*)dst;
    for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_bf16(src[i]);
}

// The float dots keep the activation in F32 (ggml rounds it to F16 first; we deliberately do not)
// and accumulate in double in index order, so the reference is as exact as one rounding at the end.

void vec_dot_f32_f32(int64_t n, const void* w, const void* a, float* out) {
    const float* x = (const float*)w;
    const float* y = (const float*)a;
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += (double)x[i] * (double)y[i];
    *out = (float)sum;
}

void vec_dot_f16_f32(int64_t n, const void* w, const void* a, float* out) {
    const fp16_t* x = (const fp16_t*)w;
    const float* y = (const float*)a;
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += (double)fp16_to_fp32(x[i]) * (double)y[i];
    *out = (float)sum;
}

void vec_dot_bf16_f32(int64_t n, const void* w, const void* a, float* out) {
    const bf16_t* x = (const bf16_t*)w;
    const float* y = (const float*)a;
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += (double)bf16_to_fp32(x[i]) * (double)y[i];
    *out = (float)sum;
}

}  // namespace bee
