// kernels/x86/gemm_legacy_avx512: the prepared activation of the legacy 32-element weight types, shared by
// the GGUF-layout tiles (gemm_legacy_avx512.cpp) and the repacked rows4 tiles (gemm_rows4_avx512.cpp).
#pragma once
#include <cstddef>
#include <cstdint>

namespace bee::avx512 {

// A prepared activation pair: blocks 2p and 2p+1 of a Q8_0 / Q8_1 row (zeros past the row's end).
struct alignas(64) ActPair {
    int8_t q[64];
    float d[16];     // lane l: scale of the block that int32 lane l of q belongs to (lanes 0-7, 8-15)
    union {              // which one depends on the activation type (the other is never read)
        int32_t off[16];  // Q8_0 rows: -off · Σ of the lane's 4 quants (the symmetric types' offset)
        float s[16];      // Q8_1 rows: the block's s in its first lane (0 and 8), 0 elsewhere
    };
};
static_assert(sizeof(ActPair) == 192, "ActPair layout");

size_t act_pair_row_bytes(int64_t n);
// Q8_0 row -> pairs, with the offset `Off` of the weight type folded into `off` (8: Q4_0, 16: Q5_0,
// 128: Q8_0).
template <int Off>
void prepare_pairs_q8_0(const void* src, void* dst, int64_t n);
extern template void prepare_pairs_q8_0<8>(const void*, void*, int64_t);
extern template void prepare_pairs_q8_0<16>(const void*, void*, int64_t);
extern template void prepare_pairs_q8_0<128>(const void*, void*, int64_t);
// Q8_1 row -> pairs.
void prepare_pairs_q8_1(const void* src, void* dst, int64_t n);

}  // namespace bee::avx512
