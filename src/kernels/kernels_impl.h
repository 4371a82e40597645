// kernels/kernels_impl: private to kernels/: the AVX2 float ops and the per-KV-type attention primitives.
#pragma once
#include <cstdint>

#include "gguf/ggml_type.h"

namespace bee {

// Attention per KV type (one driver in attention.cpp): the only per-type step is decoding one stored
// head (whole blocks, n = head width padded to the block size, quant/turbo.h kv_padded_dim) to n
// floats, once per cell for all the query heads that share it; scores and the V accumulation are
// then plain float dot / axpy (AttnMath) on the active ISA.
// rot_group > 0 (TurboQuant types): decode gives the rotated-domain values (centroid · norm, no inverse
// rotation), so the driver rotates q once before the dots and un-rotates the accumulated output once.
// decode == nullptr with supported: F32 rows are read in place.
using KvDecodeFn = void (*)(const uint8_t* head, float* out, int n);
struct KvOps {
    KvDecodeFn decode = nullptr;
    int rot_group = 0;
    bool supported = false;
};
// Ops for KV type t on the active ISA (supported == false: not a KV type).
KvOps kv_ops_for(GgmlType t);

using F32DotFn = float (*)(const float* a, const float* b, int n);
using F32AxpyFn = void (*)(float* acc, float p, const float* v, int n);  // acc[i] += p * v[i]
struct AttnMath {
    F32DotFn dot;
    F32AxpyFn axpy;
};
AttnMath attn_math_for();

// Per-ISA tables (kv_scalar.cpp, kv_avx2.cpp, kv_avx512.cpp); an ISA table returns decode == nullptr
// for types it has no fast decoder for, and kv_ops_for keeps the next ISA down's.
namespace kv_scalar {
KvOps ops(GgmlType t);
AttnMath attn_math();
}  // namespace kv_scalar

// AVX2+FMA+F16C versions (ops_avx2.cpp, kv_avx2.cpp); only called when cpu_isa() >= Isa::avx2.
namespace avx2_ops {
void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps);
void silu(float* x, int64_t n);
void gelu_tanh(float* x, int64_t n);
void softmax(float* x, int64_t n);
void exp_inplace(float* x, int64_t n);  // x[i] = exp(x[i]), ~1 ulp, flushes below exp(-87) to 0
KvOps kv_ops(GgmlType t);
AttnMath attn_math();
}  // namespace avx2_ops
namespace avx512_ops {
KvOps kv_ops(GgmlType t);
AttnMath attn_math();
}  // namespace avx512_ops

}  // namespace bee
