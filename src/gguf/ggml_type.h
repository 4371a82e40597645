// gguf/ggml_type: tensor element type ids as GGUF stores them, with block size and bytes per block.
#pragma once
#include <cstddef>
#include <cstdint>

namespace bee {

// Values are the on-disk ids (ggml_type). Only some have kernels; see quant/quant.h.
enum class GgmlType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,
    TQ2_0 = 35,
    MXFP4 = 39,
    // KV-cache-only TurboQuant types, ids as BeeLlama/buun serialize them (specs/kv-turboquant.md §3.1);
    // 128-value rotation groups.
    TURBO3 = 42,
    TURBO4 = 43,
    TURBO2 = 44,
    TURBO3_TCQ = 45,
    TURBO2_TCQ = 46,
    // Bee-only: the same scalar TurboQuant with a 64-value rotation group, so 64-wide heads need no
    // padding. Not known to any other implementation; never mix with 42-46.
    TURBO3_64 = 142,
    TURBO4_64 = 143,
    TURBO2_64 = 144,
};

struct GgmlTypeInfo {
    const char* name;    // "q4_0", ...; nullptr for ids that are not a known type
    int64_t block_size;  // elements per block
    size_t type_size;    // bytes per block
};

// Info for a raw id; name == nullptr when the id is unknown.
GgmlTypeInfo ggml_type_info(uint32_t id);
inline GgmlTypeInfo ggml_type_info(GgmlType t) { return ggml_type_info((uint32_t)t); }
inline const char* ggml_type_name(GgmlType t) { return ggml_type_info(t).name; }
// Parses a lowercase or uppercase name ("q4_k", "F16"); returns false if unknown.
bool ggml_type_from_name(const char* name, GgmlType* out);
// Bytes for a row of n elements (n must be a multiple of the block size).
inline size_t ggml_row_size(GgmlType t, int64_t n) {
    GgmlTypeInfo i = ggml_type_info(t);
    return (size_t)(n / i.block_size) * i.type_size;
}

}  // namespace bee
