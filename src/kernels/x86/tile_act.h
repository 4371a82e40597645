// kernels/x86/tile_act: the prepared activation layouts every quantized tile kernel reads (AVX-512, AVX2 and
// AVX-VNNI alike, so that all of them reach the same exact integer sums): ActBlock from a Q8_0 / Q8_1 block
// for the 32-element weight types, ActK from a Q8_K super-block for the K-quants; and with_cols, which picks
// a tile compiled for the token count. Plain C++, no intrinsics.
#pragma once
#include <cstdint>
#include <cstring>
#include <utility>

#include "base/fp16.h"
#include "quant/blocks.h"

namespace bee::x86 {

// One prepared activation block (from a Q8_0 or Q8_1 block).
struct ActBlock {
    int32_t q4[8];      // the 32 int8 quants, 4 per int32 (broadcast to every row's lane)
    float d;            // the block's scale
    union {             // which one depends on the activation type (the other is never read)
        int32_t start;  // Q8_0 rows: -off·Σq, the symmetric weight type's offset
        float s;        // Q8_1 rows: the block's s = d·Σq
    };
    int32_t pad[2];
};
static_assert(sizeof(ActBlock) == 48, "ActBlock layout");

inline size_t act_block_row_bytes(int64_t n) { return (size_t)(n / 32) * sizeof(ActBlock); }

template <int Off>
inline void prepare_blocks_q8_0(const void* src, void* dst, int64_t n) {
    const BlockQ8_0* x = (const BlockQ8_0*)src;
    ActBlock* out = (ActBlock*)dst;
    for (int64_t b = 0; b < n / 32; b++) {
        memset(&out[b], 0, sizeof(ActBlock));
        memcpy(out[b].q4, x[b].qs, 32);
        int32_t sum = 0;
        for (int j = 0; j < 32; j++) sum += x[b].qs[j];
        out[b].d = fp16_to_fp32(x[b].d);
        out[b].start = -Off * sum;
    }
}

inline void prepare_blocks_q8_1(const void* src, void* dst, int64_t n) {
    const BlockQ8_1* x = (const BlockQ8_1*)src;
    ActBlock* out = (ActBlock*)dst;
    for (int64_t b = 0; b < n / 32; b++) {
        memset(&out[b], 0, sizeof(ActBlock));
        memcpy(out[b].q4, x[b].qs, 32);
        out[b].d = fp16_to_fp32(x[b].d);
        out[b].s = fp16_to_fp32(x[b].s);
    }
}

// One prepared Q8_K super-block.
struct alignas(64) ActK {
    int8_t q[256];        // quants; 4 at a time are broadcast to every row's lane
    int32_t start16[16];  // -32 · Σq of each 16 quants: Q6_K's offset
    int32_t bs32pair[4];  // (Σq of sub-block 2p, of 2p+1) as an int16 pair: the Q4_K/Q5_K mins' partner
    int32_t bs16pair[8];  // (Σq of quants 32p..32p+15, of 32p+16..32p+31) as an int16 pair: Q2_K's
    float d;
    int32_t pad[3];
};
static_assert(sizeof(ActK) == 384, "ActK layout");

inline size_t act_row_bytes(int64_t n) { return (size_t)(n / QK_K) * sizeof(ActK); }

inline void prepare_q8_k(const void* src, void* dst, int64_t n) {
    const BlockQ8_K* x = (const BlockQ8_K*)src;
    ActK* out = (ActK*)dst;
    for (int64_t b = 0; b < n / QK_K; b++) {
        memset(&out[b], 0, sizeof(ActK));
        memcpy(out[b].q, x[b].qs, 256);
        for (int j = 0; j < 16; j++) out[b].start16[j] = -32 * x[b].bsums[j];
        for (int p = 0; p < 4; p++) {
            const int32_t lo = x[b].bsums[4 * p] + x[b].bsums[4 * p + 1];
            const int32_t hi = x[b].bsums[4 * p + 2] + x[b].bsums[4 * p + 3];
            out[b].bs32pair[p] = (int32_t)((uint32_t)(uint16_t)lo | (uint32_t)(uint16_t)hi << 16);
        }
        for (int p = 0; p < 8; p++)
            out[b].bs16pair[p] =
                (int32_t)((uint32_t)(uint16_t)x[b].bsums[2 * p] | (uint32_t)(uint16_t)x[b].bsums[2 * p + 1] << 16);
        out[b].d = x[b].d;
    }
}

// Calls f.template operator()<C>() with C = nc, for nc in 1..N: the tiles are compiled per token count
// so their accumulators stay in registers; this picks the instance at run time.
template <int N, class F>
inline void with_cols(int nc, F&& f) {
    [&]<int... I>(std::integer_sequence<int, I...>) {
        (void)((nc == I + 1 && (f.template operator()<I + 1>(), true)) || ...);
    }
    (std::make_integer_sequence<int, N>{});
}

}  // namespace bee::x86
