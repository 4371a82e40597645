// quant/quant: the traits table (one row per supported type) and quantize_matrix().
#include "quant/quant.h"

#include "base/error.h"
#include "quant/quant_internal.h"
#include "quant/turbo.h"

namespace bee {

namespace {

// TurboQuant KV types (quant/turbo.h): rows in the original domain; no weight dot product.
template <GgmlType T>
void dequantize_row_turbo_t(const void* src, float* dst, int64_t n) {
    dequantize_row_turbo(T, src, dst, n);
}
template <GgmlType T>
void quantize_row_turbo_t(const float* src, void* dst, int64_t n) {
    quantize_row_turbo(T, src, dst, n);
}
#define BEE_TURBO_ROW(T) \
    { GgmlType::T, dequantize_row_turbo_t<GgmlType::T>, quantize_row_turbo_t<GgmlType::T>, GgmlType::F32, nullptr }

// type, dequantize_row, quantize_row, vec_dot_type, vec_dot
const QuantTraits kTraits[] = {
    {GgmlType::F32, dequantize_row_f32, quantize_row_f32, GgmlType::F32, vec_dot_f32_f32},
    {GgmlType::F16, dequantize_row_f16, quantize_row_f16, GgmlType::F32, vec_dot_f16_f32},
    {GgmlType::BF16, dequantize_row_bf16, quantize_row_bf16, GgmlType::F32, vec_dot_bf16_f32},
    {GgmlType::Q4_0, dequantize_row_q4_0, quantize_row_q4_0, GgmlType::Q8_0, vec_dot_q4_0_q8_0},
    {GgmlType::Q4_1, dequantize_row_q4_1, quantize_row_q4_1, GgmlType::Q8_1, vec_dot_q4_1_q8_1},
    {GgmlType::Q5_0, dequantize_row_q5_0, quantize_row_q5_0, GgmlType::Q8_0, vec_dot_q5_0_q8_0},
    {GgmlType::Q5_1, dequantize_row_q5_1, quantize_row_q5_1, GgmlType::Q8_1, vec_dot_q5_1_q8_1},
    {GgmlType::Q8_0, dequantize_row_q8_0, quantize_row_q8_0, GgmlType::Q8_0, vec_dot_q8_0_q8_0},
    {GgmlType::Q8_1, dequantize_row_q8_1, quantize_row_q8_1, GgmlType::Q8_1, nullptr},
    {GgmlType::Q2_K, dequantize_row_q2_K, quantize_row_q2_K, GgmlType::Q8_K, vec_dot_q2_K_q8_K},
    {GgmlType::Q3_K, dequantize_row_q3_K, quantize_row_q3_K, GgmlType::Q8_K, vec_dot_q3_K_q8_K},
    {GgmlType::Q4_K, dequantize_row_q4_K, quantize_row_q4_K, GgmlType::Q8_K, vec_dot_q4_K_q8_K},
    {GgmlType::Q5_K, dequantize_row_q5_K, quantize_row_q5_K, GgmlType::Q8_K, vec_dot_q5_K_q8_K},
    {GgmlType::Q6_K, dequantize_row_q6_K, quantize_row_q6_K, GgmlType::Q8_K, vec_dot_q6_K_q8_K},
    {GgmlType::Q8_K, dequantize_row_q8_K, quantize_row_q8_K, GgmlType::Q8_K, nullptr},
    BEE_TURBO_ROW(TURBO2),
    BEE_TURBO_ROW(TURBO3),
    BEE_TURBO_ROW(TURBO4),
    BEE_TURBO_ROW(TURBO2_TCQ),
    BEE_TURBO_ROW(TURBO3_TCQ),
    BEE_TURBO_ROW(TURBO2_64),
    BEE_TURBO_ROW(TURBO3_64),
    BEE_TURBO_ROW(TURBO4_64),
};
#undef BEE_TURBO_ROW

}  // namespace

const QuantTraits* quant_traits(GgmlType t) {
    for (const QuantTraits& row : kTraits)
        if (row.type == t) return &row;
    return nullptr;
}

void quantize_matrix(GgmlType t, const float* src, void* dst, int64_t n_rows, int64_t n_cols) {
    const QuantTraits* tr = quant_traits(t);
    const GgmlTypeInfo info = ggml_type_info(t);
    if (!tr || !tr->quantize_row)
        fail("quantize_matrix: type %s has no quantizer", info.name ? info.name : "(unknown)");
    if (n_rows < 0 || n_cols < 0 || n_cols % info.block_size != 0)
        fail("quantize_matrix: %lld columns is not a multiple of the %s block size %lld", (long long)n_cols, info.name,
             (long long)info.block_size);
    const size_t row_bytes = ggml_row_size(t, n_cols);
    for (int64_t r = 0; r < n_rows; ++r)
        tr->quantize_row(src + r * n_cols, (uint8_t*)dst + (size_t)r * row_bytes, n_cols);
}

}  // namespace bee
