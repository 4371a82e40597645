// kernels/kernels_impl: private to kernels/: the AVX2 float ops and the per-KV-type attention primitives.
#pragma once
#include <cstdint>

#include "gguf/ggml_type.h"

namespace bee {

// Attention primitives for one K or V storage type; the attention driver is written once against these.
// dot:   returns q · k_row over n elements (k_row in the storage type).
// axpy:  acc[i] += p * v_row[i] over n elements.
using KvDotFn = float (*)(const float* q, const uint8_t* k_row, int n);
using KvAxpyFn = void (*)(float* acc, float p, const uint8_t* v_row, int n);
struct KvOps {
    KvDotFn dot = nullptr;
    KvAxpyFn axpy = nullptr;
};
// Ops for KV type t on the active ISA; dot/axpy are nullptr when the type is not supported.
KvOps kv_ops_for(GgmlType t);

// AVX2+FMA+F16C versions (ops_avx2.cpp, kv_avx2.cpp); only called when cpu_isa() >= Isa::avx2.
namespace avx2_ops {
void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps);
void silu(float* x, int64_t n);
void gelu_tanh(float* x, int64_t n);
void softmax(float* x, int64_t n);
void exp_inplace(float* x, int64_t n);  // x[i] = exp(x[i]), ~1 ulp, flushes below exp(-87) to 0
float kv_dot_f32(const float* q, const uint8_t* k_row, int n);
float kv_dot_f16(const float* q, const uint8_t* k_row, int n);
void kv_axpy_f32(float* acc, float p, const uint8_t* v_row, int n);
void kv_axpy_f16(float* acc, float p, const uint8_t* v_row, int n);
}  // namespace avx2_ops

}  // namespace bee
