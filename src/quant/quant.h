// quant/quant: block formats of every weight type, reference (scalar) quantize/dequantize/dot, one traits table.
#pragma once
#include <cstddef>
#include <cstdint>

#include "gguf/ggml_type.h"

namespace bee {

// Dequantizes n values (n a multiple of the block size) from `src` blocks into `dst`.
using DequantizeRowFn = void (*)(const void* src, float* dst, int64_t n);
// Quantizes n floats into blocks of the type (reference rounding, deterministic).
using QuantizeRowFn = void (*)(const float* src, void* dst, int64_t n);
// *out = dot(w, a) over n elements; w is a row of the weight type, a a row of its vec_dot_type.
using VecDotFn = void (*)(int64_t n, const void* w, const void* a, float* out);

struct QuantTraits {
    GgmlType type;
    DequantizeRowFn dequantize_row;  // present for every supported type
    QuantizeRowFn quantize_row;      // reference quantizer; nullptr when the type has none
    GgmlType vec_dot_type;           // activations are converted to this type before vec_dot
    VecDotFn vec_dot;                // scalar reference dot product; nullptr for activation-only types
};

// Traits for a supported type, or nullptr (unknown/unsupported: IQ*, TQ*, ...).
// Supported weight types: F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K.
// Activation types Q8_1 and Q8_K have dequantize_row + quantize_row but no vec_dot.
// KV-only TurboQuant types (quant/turbo.h) too: rows in the original domain, no vec_dot.
// Block layouts (structs, unpacking helpers) are in quant/blocks.h. Contract of the routines:
//  - dequantize_row gives the floats ggml (and gguf-py) compute, bit for bit;
//  - quantize_row writes the bytes of ggml's quantize_row_*_ref (no importance matrix); the
//    activation quantizers (Q8_0, Q8_1 with s = d * sum, Q8_K with bsums) round exactly as ggml;
//  - vec_dot: F32/F16/BF16 weights take F32 activations and sum in double; the quantized types sum
//    exact int32 products per block, combine each block in float and add blocks in order.
const QuantTraits* quant_traits(GgmlType t);

// Convenience: quantize_row of `t` over a whole matrix of n_rows rows of n_cols values; throws Error
// if the type has no quantizer or n_cols is not a multiple of the block size.
void quantize_matrix(GgmlType t, const float* src, void* dst, int64_t n_rows, int64_t n_cols);

}  // namespace bee
