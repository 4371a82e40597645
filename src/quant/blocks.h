// quant/blocks: on-disk block layouts of the GGUF weight and activation types (ggml-common.h), bit for bit.
#pragma once
#include <cstdint>
#include <cstring>

#include "base/fp16.h"

namespace bee {

// Elements per block.
inline constexpr int QK4_0 = 32;
inline constexpr int QK4_1 = 32;
inline constexpr int QK5_0 = 32;
inline constexpr int QK5_1 = 32;
inline constexpr int QK8_0 = 32;
inline constexpr int QK8_1 = 32;
inline constexpr int QK_K = 256;         // super-block of the K-quants
inline constexpr int K_SCALE_SIZE = 12;  // packed 6-bit scales + mins of Q4_K / Q5_K

// ---- legacy 32-element blocks --------------------------------------------------------------------
// Element j of a block is stored in byte j % 16 of qs: the low nibble for j < 16, the high for j >= 16.

// Q4_0: w = d * (q - 8), q in [0, 15].
struct BlockQ4_0 {
    fp16_t d;               // scale
    uint8_t qs[QK4_0 / 2];  // (16) 4-bit quants, two per byte
};
static_assert(sizeof(BlockQ4_0) == 18, "wrong q4_0 block size");

// Q4_1: w = d * q + m, q in [0, 15].
struct BlockQ4_1 {
    fp16_t d;               // scale
    fp16_t m;               // min (offset)
    uint8_t qs[QK4_1 / 2];  // (16) 4-bit quants
};
static_assert(sizeof(BlockQ4_1) == 20, "wrong q4_1 block size");

// Q5_0: w = d * (q - 16), q in [0, 31]; bit 4 of element j is bit j of qh (little endian).
struct BlockQ5_0 {
    fp16_t d;               // scale
    uint8_t qh[4];          // (32) 5th bits, one per element
    uint8_t qs[QK5_0 / 2];  // (16) low 4 bits
};
static_assert(sizeof(BlockQ5_0) == 22, "wrong q5_0 block size");

// Q5_1: w = d * q + m, q in [0, 31]; qh as in Q5_0.
struct BlockQ5_1 {
    fp16_t d;               // scale
    fp16_t m;               // min (offset)
    uint8_t qh[4];          // (32) 5th bits
    uint8_t qs[QK5_1 / 2];  // (16) low 4 bits
};
static_assert(sizeof(BlockQ5_1) == 24, "wrong q5_1 block size");

// Q8_0: w = d * q, q in [-127, 127]. Weight type and the activation type of Q4_0/Q5_0/Q8_0.
struct BlockQ8_0 {
    fp16_t d;          // scale
    int8_t qs[QK8_0];  // (32) quants
};
static_assert(sizeof(BlockQ8_0) == 34, "wrong q8_0 block size");

// Q8_1: activation type of Q4_1/Q5_1; s = d * sum(qs) lets the min term be one multiply.
struct BlockQ8_1 {
    fp16_t d;          // scale
    fp16_t s;          // d * sum(qs[i])
    int8_t qs[QK8_1];  // (32) quants
};
static_assert(sizeof(BlockQ8_1) == 36, "wrong q8_1 block size");

// ---- K-quants: 256-element super-blocks -------------------------------------------------------------
// The quant arrays interleave sub-blocks: in a 128-element half, byte l of a 32-byte group holds
// elements l, l+32, l+64, l+96 (2-bit types) or l and l+32 (4-bit types); see the dequantizers.

// Q2_K: 16 sub-blocks of 16; w = d * sc * q - dmin * m, q in [0, 3], sc and m 4-bit.
struct BlockQ2_K {
    uint8_t scales[QK_K / 16];  // (16) low nibble: scale sc, high nibble: min m
    uint8_t qs[QK_K / 4];       // (64) 2-bit quants, four per byte
    fp16_t d;                   // super-block scale of the scales
    fp16_t dmin;                // super-block scale of the mins
};
static_assert(sizeof(BlockQ2_K) == 84, "wrong q2_K block size");

// Q3_K: 16 sub-blocks of 16; w = d * (sc - 32) * (q - 4 * !hbit), q low 2 bits in qs, sc 6-bit.
struct BlockQ3_K {
    uint8_t hmask[QK_K / 8];  // (32) high bits: bit b of byte l is element l + 32*b (set: no -4 offset)
    uint8_t qs[QK_K / 4];     // (64) low 2 bits, four per byte
    uint8_t scales[12];       // (16 x 6 bit) low nibbles in bytes 0-7, high 2-bit pairs in bytes 8-11
    fp16_t d;                 // super-block scale
};
static_assert(sizeof(BlockQ3_K) == 110, "wrong q3_K block size");

// Q4_K: 8 sub-blocks of 32; w = d * sc * q - dmin * m, q in [0, 15], sc and m 6-bit.
struct BlockQ4_K {
    fp16_t d;                      // super-block scale of the scales
    fp16_t dmin;                   // super-block scale of the mins
    uint8_t scales[K_SCALE_SIZE];  // (8 scales + 8 mins, 6 bit each) see k_scale_min()
    uint8_t qs[QK_K / 2];          // (128) 4-bit quants: 32-byte group g holds sub-blocks 2g (low), 2g+1 (high)
};
static_assert(sizeof(BlockQ4_K) == 144, "wrong q4_K block size");

// Q5_K: as Q4_K with a 5th bit per element, q in [0, 31].
struct BlockQ5_K {
    fp16_t d;                      // super-block scale of the scales
    fp16_t dmin;                   // super-block scale of the mins
    uint8_t scales[K_SCALE_SIZE];  // (8 scales + 8 mins, 6 bit each)
    uint8_t qh[QK_K / 8];          // (32) 5th bits: bit s of byte l is element l of sub-block s
    uint8_t qs[QK_K / 2];          // (128) low 4 bits, laid out as Q4_K
};
static_assert(sizeof(BlockQ5_K) == 176, "wrong q5_K block size");

// Q6_K: 16 sub-blocks of 16; w = d * sc * (q - 32), q in [0, 63], sc int8.
struct BlockQ6_K {
    uint8_t ql[QK_K / 2];      // (128) low 4 bits
    uint8_t qh[QK_K / 4];      // (64) high 2 bits, four per byte
    int8_t scales[QK_K / 16];  // (16) sub-block scales
    fp16_t d;                  // super-block scale
};
static_assert(sizeof(BlockQ6_K) == 210, "wrong q6_K block size");

// Q8_K: activation type of every K-quant. Note: d is a float, not fp16.
struct BlockQ8_K {
    float d;                   // scale
    int8_t qs[QK_K];           // (256) quants
    int16_t bsums[QK_K / 16];  // (16) sum of qs over each group of 16
};
static_assert(sizeof(BlockQ8_K) == 292, "wrong q8_K block size");

// Scale and min of sub-block j (0..7) from the packed 12-byte Q4_K/Q5_K scales:
// j < 4: 6 low bits of bytes j and j+4; j >= 4: nibbles of byte j+4 plus the top 2 bits of bytes j-4 / j.
inline void k_scale_min(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

// Sub-block scale j (0..15) of Q3_K as stored, 0..63 (subtract 32 for the signed value).
// note: branch-free with every index in [0, 12), so no compiler can hoist an out-of-range load.
inline int q3k_scale(int j, const uint8_t* s) {
    const int low = (s[j % 8] >> (4 * (j / 8))) & 0xF;
    const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    return low | (high << 4);
}

// ---- element-order unpacking (the layouts above, spelled out; used by dequantize and vec_dot) ------

// Q2_K / Q3_K low 2 bits: element e is in qs[32*(e/128) + e%32] at bit 2*((e%128)/32).
inline void unpack_2bit_k(const uint8_t* qs, uint8_t* q) {
    for (int e = 0; e < QK_K; ++e) q[e] = (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
}

// Q4_K / Q5_K low 4 bits: element e is in qs[32*(e/64) + e%32], low nibble when e%64 < 32.
inline void unpack_4bit_k(const uint8_t* qs, uint8_t* q) {
    for (int e = 0; e < QK_K; ++e) q[e] = (qs[32 * (e / 64) + e % 32] >> (4 * ((e % 64) / 32))) & 0xF;
}

// Q2_K quants in [0, 3].
inline void unpack_q2_K(const BlockQ2_K& b, uint8_t* q) { unpack_2bit_k(b.qs, q); }

// Q3_K quants in [-4, 3]: low 2 bits minus 4 where the hmask bit is clear.
inline void unpack_q3_K(const BlockQ3_K& b, int8_t* q) {
    uint8_t low[QK_K];
    unpack_2bit_k(b.qs, low);
    for (int e = 0; e < QK_K; ++e) q[e] = (int8_t)(low[e] - (((b.hmask[e % 32] >> (e / 32)) & 1) ? 0 : 4));
}

// Q4_K quants in [0, 15].
inline void unpack_q4_K(const BlockQ4_K& b, uint8_t* q) { unpack_4bit_k(b.qs, q); }

// Q5_K quants in [0, 31]: the 5th bit of element e is bit e/32 of qh[e%32].
inline void unpack_q5_K(const BlockQ5_K& b, uint8_t* q) {
    unpack_4bit_k(b.qs, q);
    for (int e = 0; e < QK_K; ++e) q[e] = (uint8_t)(q[e] | (((b.qh[e % 32] >> (e / 32)) & 1) << 4));
}

// Q6_K quants in [-32, 31]. In each 128-element half h, element 32k + l (k = 0..3) has its low
// nibble in ql[64h + l + 32*(k%2)] (high nibble when k >= 2) and its top 2 bits in qh[32h + l] at 2k.
inline void unpack_q6_K(const BlockQ6_K& b, int8_t* q) {
    for (int e = 0; e < QK_K; ++e) {
        const int h = e / 128, k = (e % 128) / 32, l = e % 32;
        const int low = (b.ql[64 * h + l + 32 * (k % 2)] >> (4 * (k / 2))) & 0xF;
        const int high = (b.qh[32 * h + l] >> (2 * k)) & 3;
        q[e] = (int8_t)((low | (high << 4)) - 32);
    }
}

// Round to nearest, ties to even, for |x| < 2^22 (ggml's nearest_int). Never undefined: NaN or
// out-of-range input gives some int that callers clamp.
inline int nearest_int(float x) {
    const float v = x + 12582912.f;  // 1.5 * 2^23: the integer lands in the low mantissa bits
    int32_t i;
    memcpy(&i, &v, 4);
    return (i & 0x007fffff) - 0x00400000;
}

// ---- TurboQuant KV blocks (specs/kv-turboquant.md §3.1, the BeeLlama layout) ------------------------
// One block = one rotation group: the values are stored in the rotated domain (y = D2·H·D1·x/|x|, see
// quant/turbo.h) as centroid indices, with one fp16 "corrected" norm: dequantized y_j = c[idx_j] * norm.
// 2-bit field of element j: qs[j/4] bits 2*(j%4)..+1; 3-bit index = that field | (signs[j/8] bit j%8) << 2;
// 4-bit index: qs[j/2], low nibble for even j. Index 0 is always the most negative centroid.
inline constexpr int QK_TURBO = 128;    // rotation group of the serialized types (ids 42-46)
inline constexpr int QK_TURBO_64 = 64;  // Bee-only 64-value group (ids 142-144)

struct BlockTurbo2 {
    fp16_t norm;               // corrected norm |x| / |c[idx]|
    uint8_t qs[QK_TURBO / 4];  // (32) 2-bit indices
};
static_assert(sizeof(BlockTurbo2) == 34, "wrong turbo2 block size");

struct BlockTurbo3 {
    fp16_t norm;                  // corrected norm
    uint8_t qs[QK_TURBO / 4];     // (32) low 2 bits of each 3-bit index
    uint8_t signs[QK_TURBO / 8];  // (16) bit 2 of each index
};
static_assert(sizeof(BlockTurbo3) == 50, "wrong turbo3 block size");

struct BlockTurbo4 {
    fp16_t norm;               // corrected norm
    uint8_t qs[QK_TURBO / 2];  // (64) 4-bit indices, low nibble = even element
};
static_assert(sizeof(BlockTurbo4) == 66, "wrong turbo4 block size");

// TCQ: a bitshift-trellis stream, LSB first: bits 0..5 the initial-state prefix, then k bits per
// element (k = 3 or 2); state_t = the L = 6 + k bits starting at stream bit k*t. See quant/tcq.h.
struct BlockTurbo3Tcq {
    fp16_t norm;     // corrected norm
    uint8_t qs[49];  // 6 + 3*128 = 390 bits, then 2 zero bits
    uint8_t pad;     // 0, keeps the size even
};
static_assert(sizeof(BlockTurbo3Tcq) == 52, "wrong turbo3_tcq block size");

struct BlockTurbo2Tcq {
    fp16_t norm;     // corrected norm
    uint8_t qs[33];  // 6 + 2*128 = 262 bits, then 2 zero bits
    uint8_t pad;     // 0
};
static_assert(sizeof(BlockTurbo2Tcq) == 36, "wrong turbo2_tcq block size");

// Bee-only 64-value groups: the same packing over 64 elements.
struct BlockTurbo2_64 {
    fp16_t norm;
    uint8_t qs[QK_TURBO_64 / 4];  // (16)
};
static_assert(sizeof(BlockTurbo2_64) == 18, "wrong turbo2_64 block size");

struct BlockTurbo3_64 {
    fp16_t norm;
    uint8_t qs[QK_TURBO_64 / 4];     // (16)
    uint8_t signs[QK_TURBO_64 / 8];  // (8)
};
static_assert(sizeof(BlockTurbo3_64) == 26, "wrong turbo3_64 block size");

struct BlockTurbo4_64 {
    fp16_t norm;
    uint8_t qs[QK_TURBO_64 / 2];  // (32)
};
static_assert(sizeof(BlockTurbo4_64) == 34, "wrong turbo4_64 block size");

}  // namespace bee
