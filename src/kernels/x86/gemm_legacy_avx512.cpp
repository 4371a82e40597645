// kernels/x86/gemm_legacy_avx512: AVX-512 VNNI tile kernels (kernels/gemm.h) of the legacy 32-element
// weight types Q4_0, Q4_1, Q5_0, Q5_1, Q8_0.
// Work unit: a pair of blocks (64 elements) in one 512-bit register. Weights become unsigned bytes u
// (q for the 4/5-bit types, q + 128 for Q8_0) and one vpdpbusd gives 16 exact int32 lanes of Σ u·a,
// lanes 0-7 from the first block, 8-15 from the second. The offset of the symmetric types (w = d·(u - off))
// is the prepared activation's per-lane -off·Σa, used as the vpdpbusd start value, so it costs nothing
// per output. Per output and pair, in this order: acc = fma(float(lanes), dw·da, acc), then for the
// _1 types acc = fma(m, s, acc) (s sits in the first lane of its block, the others hold 0). The 16 lanes
// are summed once at the end (_mm512_reduce_add_ps). Nothing here depends on the tile shape.
// note: GCC 12's AVX-512 headers build intrinsics on _mm512_undefined_*(), which -Wuninitialized flags
// (a false positive); the pragmas must come before the header.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "kernels/x86/avx512.h"
#include "kernels/x86/gemm_legacy_avx512.h"
#include "kernels/x86/gemm_tiles_avx512.h"
#include "quant/blocks.h"

namespace bee::avx512 {

size_t act_pair_row_bytes(int64_t n) { return (size_t)((n / 32 + 1) / 2) * sizeof(ActPair); }

template <int Off>
void prepare_pairs_q8_0(const void* src, void* dst, int64_t n) {
    const BlockQ8_0* x = (const BlockQ8_0*)src;
    ActPair* out = (ActPair*)dst;
    memset(out, 0, act_pair_row_bytes(n));
    for (int64_t b = 0; b < n / 32; b++) {
        ActPair& o = out[b / 2];
        const int h = (int)(b % 2) * 8;  // first lane of this block
        memcpy(o.q + 4 * h, x[b].qs, 32);
        const float d = fp16_to_fp32(x[b].d);
        for (int l = 0; l < 8; l++) {
            const int8_t* q = x[b].qs + 4 * l;
            o.d[h + l] = d;
            o.off[h + l] = -Off * (q[0] + q[1] + q[2] + q[3]);
        }
    }
}
template void prepare_pairs_q8_0<8>(const void*, void*, int64_t);
template void prepare_pairs_q8_0<16>(const void*, void*, int64_t);
template void prepare_pairs_q8_0<128>(const void*, void*, int64_t);

void prepare_pairs_q8_1(const void* src, void* dst, int64_t n) {
    const BlockQ8_1* x = (const BlockQ8_1*)src;
    ActPair* out = (ActPair*)dst;
    memset(out, 0, act_pair_row_bytes(n));
    for (int64_t b = 0; b < n / 32; b++) {
        ActPair& o = out[b / 2];
        const int h = (int)(b % 2) * 8;
        memcpy(o.q + 4 * h, x[b].qs, 32);
        const float d = fp16_to_fp32(x[b].d);
        for (int l = 0; l < 8; l++) o.d[h + l] = d;
        o.s[h] = fp16_to_fp32(x[b].s);
    }
}

namespace {

// Bytes a tile reads ahead of itself in each weight row (software prefetch).
constexpr size_t kAhead = 512;

// An unpacked weight pair: unsigned bytes, the scale per lane, the min per lane (_1 types).
struct WeightPair {
    __m512i u;
    __m512 d, m;
};

// [v0 ×8, v1 ×8] as floats from two halves.
inline __m512 halves_pair(fp16_t v0, fp16_t v1) {
    return _mm512_cvtph_ps(_mm256_set_m128i(_mm_set1_epi16((short)v1), _mm_set1_epi16((short)v0)));
}

// Two blocks of 16 nibble bytes -> 64 bytes in [0, 15] in element order (low nibbles are elements 0-15).
template <bool two>
inline __m512i nibbles_pair(const uint8_t* qs0, const uint8_t* qs1) {
    const __m128i lo = _mm_loadu_si128((const __m128i*)qs0);
    const __m128i hi = two ? _mm_loadu_si128((const __m128i*)qs1) : _mm_setzero_si128();
    const __m256i t = _mm256_set_m128i(hi, lo);
    __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(t), _mm256_srli_epi16(t, 4), 1);
    z = _mm512_and_si512(z, _mm512_set1_epi8(0x0F));
    // 128-bit lanes (lo0, lo1, hi0, hi1) -> (lo0, hi0, lo1, hi1)
    return _mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(3, 1, 2, 0));
}

// Adds 16 to the bytes whose 5th bit is set in qh (32 bits per block, little endian).
template <bool two>
inline __m512i add_fifth_bits(__m512i u, const uint8_t* qh0, const uint8_t* qh1) {
    uint32_t b0 = 0, b1 = 0;
    memcpy(&b0, qh0, 4);
    if (two) memcpy(&b1, qh1, 4);
    const __mmask64 m = (__mmask64)b0 | ((__mmask64)b1 << 32);
    return _mm512_mask_add_epi8(u, m, u, _mm512_set1_epi8(16));
}

struct Q4_0 {
    using Block = BlockQ4_0;
    static constexpr bool kMin = false;
    template <bool two>
    static WeightPair unpack(const Block* x) {
        return {nibbles_pair<two>(x[0].qs, x[1].qs), halves_pair(x[0].d, two ? x[1].d : 0), _mm512_setzero_ps()};
    }
};

struct Q5_0 {
    using Block = BlockQ5_0;
    static constexpr bool kMin = false;
    template <bool two>
    static WeightPair unpack(const Block* x) {
        const __m512i u = add_fifth_bits<two>(nibbles_pair<two>(x[0].qs, x[1].qs), x[0].qh, x[1].qh);
        return {u, halves_pair(x[0].d, two ? x[1].d : 0), _mm512_setzero_ps()};
    }
};

struct Q8_0 {
    using Block = BlockQ8_0;
    static constexpr bool kMin = false;
    template <bool two>
    static WeightPair unpack(const Block* x) {
        const __m256i lo = _mm256_loadu_si256((const __m256i*)x[0].qs);
        const __m256i hi = two ? _mm256_loadu_si256((const __m256i*)x[1].qs) : _mm256_setzero_si256();
        const __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
        const __m512i u = _mm512_xor_si512(q, _mm512_set1_epi8((char)0x80));  // q + 128 as unsigned
        return {u, halves_pair(x[0].d, two ? x[1].d : 0), _mm512_setzero_ps()};
    }
};

struct Q4_1 {
    using Block = BlockQ4_1;
    static constexpr bool kMin = true;
    template <bool two>
    static WeightPair unpack(const Block* x) {
        return {nibbles_pair<two>(x[0].qs, x[1].qs), halves_pair(x[0].d, two ? x[1].d : 0),
                halves_pair(x[0].m, two ? x[1].m : 0)};
    }
};

struct Q5_1 {
    using Block = BlockQ5_1;
    static constexpr bool kMin = true;
    template <bool two>
    static WeightPair unpack(const Block* x) {
        const __m512i u = add_fifth_bits<two>(nibbles_pair<two>(x[0].qs, x[1].qs), x[0].qh, x[1].qh);
        return {u, halves_pair(x[0].d, two ? x[1].d : 0), halves_pair(x[0].m, two ? x[1].m : 0)};
    }
};

// One pair p of an R × C tile (two: both blocks exist; false only for the last block of an odd count).
template <class W, int R, int C, bool two>
inline __attribute__((always_inline)) void tile_pair(const uint8_t* w, size_t ws, const uint8_t* a, size_t as,
                                                     int64_t p, __m512 (&acc)[R][C]) {
    using Block = typename W::Block;
    WeightPair wp[R];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        // note: each weight row is its own stream; reading kAhead bytes ahead keeps enough lines in
        // flight for a matvec, which the hardware prefetcher alone did not.
        _mm_prefetch((const char*)((const Block*)(w + r * ws) + 2 * p) + kAhead, _MM_HINT_T0);
        wp[r] = W::template unpack<two>((const Block*)(w + r * ws) + 2 * p);
    }
    #pragma GCC unroll 4
    for (int c = 0; c < C; c++) {
        const ActPair* ap = (const ActPair*)(a + c * as) + p;
        const __m512i q = _mm512_load_si512(ap->q);
        const __m512 da = _mm512_load_ps(ap->d);
        const __m512i start = W::kMin ? _mm512_setzero_si512() : _mm512_load_si512(ap->off);
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const __m512i isum = _mm512_dpbusd_epi32(start, wp[r].u, q);
            acc[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(wp[r].d, da), acc[r][c]);
            if constexpr (W::kMin) acc[r][c] = _mm512_fmadd_ps(wp[r].m, _mm512_load_ps(ap->s), acc[r][c]);
        }
    }
}

// The R × C tile; prepared activation rows must be 64-byte aligned. note: R and C are compile-time so
// the accumulators live in registers.
template <class W, int R, int C>
void tile(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, float* y, size_t ldy) {
    const int64_t nb = n / 32;
    __m512 acc[R][C];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 4
        for (int c = 0; c < C; c++) acc[r][c] = _mm512_setzero_ps();
    for (int64_t p = 0; p < nb / 2; p++) tile_pair<W, R, C, true>(w, ws, a, as, p, acc);
    if (nb % 2) tile_pair<W, R, C, false>(w, ws, a, as, nb / 2, acc);
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 4
        for (int c = 0; c < C; c++) y[c * ldy + r] = _mm512_reduce_add_ps(acc[r][c]);
}

// The fixed-shape tiles of weight type W, for tile_any (gemm_tiles_avx512.h).
template <class W>
struct Tiles {
    template <int R, int C>
    static void run(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, float* y, size_t ldy) {
        tile<W, R, C>(n, w, ws, a, as, y, ldy);
    }
};

}  // namespace

// Referenced from avx512_table.cpp.
extern const GemmKernel kGemmQ4_0 = {GgmlType::Q8_0, act_pair_row_bytes, prepare_pairs_q8_0<8>, tile_any<Tiles<Q4_0>>,
                                     kMaxRows, kMaxCols, nullptr};
extern const GemmKernel kGemmQ5_0 = {GgmlType::Q8_0, act_pair_row_bytes, prepare_pairs_q8_0<16>, tile_any<Tiles<Q5_0>>,
                                     kMaxRows, kMaxCols, nullptr};
extern const GemmKernel kGemmQ8_0 = {GgmlType::Q8_0, act_pair_row_bytes, prepare_pairs_q8_0<128>, tile_any<Tiles<Q8_0>>,
                                     kMaxRows, kMaxCols, nullptr};
extern const GemmKernel kGemmQ4_1 = {GgmlType::Q8_1, act_pair_row_bytes, prepare_pairs_q8_1, tile_any<Tiles<Q4_1>>,
                                     kMaxRows, kMaxCols, nullptr};
extern const GemmKernel kGemmQ5_1 = {GgmlType::Q8_1, act_pair_row_bytes, prepare_pairs_q8_1, tile_any<Tiles<Q5_1>>,
                                     kMaxRows, kMaxCols, nullptr};

}  // namespace bee::avx512
