// kernels/x86/gemm_rows4_avx512: AVX-512 VNNI tile kernels (kernels/gemm.h) of Q4_0, Q4_1, Q5_0 and Q8_0 weights
// repacked into WeightLayout::rows4 (kernels/repack.h) at load.
// The arithmetic is gemm_legacy_avx512.cpp's, operation for operation (same int32 lanes from vpdpbusd,
// then per output and pair acc = fma(float(lanes), dw·da, acc), for Q4_1 acc = fma(m, s, acc), one
// reduction at the end), so a repacked matrix gives bit-identical results to the GGUF copy. What
// changes is the unpacking of a block pair: here one 32-byte broadcast load, one masked shift and one
// and (Q8_0: one load), and one fp16 conversion of the 4 rows' scales followed by a permute per row,
// instead of two 16-byte loads, three lane shuffles and fp16 broadcasts per row.
// note: GCC 12's AVX-512 headers build intrinsics on _mm512_undefined_*(), which -Wuninitialized flags
// (a false positive); the pragmas must come before the header.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "kernels/repack.h"
#include "kernels/x86/avx512.h"
#include "kernels/x86/gemm_legacy_avx512.h"
#include "kernels/x86/gemm_tiles_avx512.h"

namespace bee::avx512 {

namespace {

static_assert(kMaxRows == 4, "a rows4 tile covers (part of) one group of 4 rows");

// Permute indices: lanes [2r ×8, 2r+1 ×8] pick row r's scales of blocks 2p, 2p+1 from the 8 converted
// d (entries 0-7); +8 picks the m of Q4_1 (entries 8-15).
alignas(64) constexpr int32_t kScaleIdx[8][16] = {
    {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1},
    {2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3},
    {4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5},
    {6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7},
    {8, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9},
    {10, 10, 10, 10, 10, 10, 10, 10, 11, 11, 11, 11, 11, 11, 11, 11},
    {12, 12, 12, 12, 12, 12, 12, 12, 13, 13, 13, 13, 13, 13, 13, 13},
    {14, 14, 14, 14, 14, 14, 14, 14, 15, 15, 15, 15, 15, 15, 15, 15},
};

// Bytes the tile reads ahead of itself in the quants stream (software prefetch).
constexpr size_t kAhead = 1024;

// Two nibble blocks stored as byte j = lo: element j of block 2p, hi: element j of block 2p+1
// -> 64 bytes in [0, 15], block 2p in the low 256 bits.
inline __m512i nibble_pair(const uint8_t* q) {
    const __m512i t = _mm512_broadcast_i64x4(_mm256_load_si256((const __m256i*)q));
    return _mm512_and_si512(_mm512_mask_srli_epi16(t, 0xFFFF0000u, t, 4), _mm512_set1_epi8(0x0F));
}

struct Q4_0 {
    static constexpr GgmlType kType = GgmlType::Q4_0;
    static constexpr bool kMin = false;
    static constexpr size_t kQuantBytes = 32, kScaleBytes = 16;  // as rows4_geometry says
    static __m512i quants(const uint8_t* q, const uint8_t*, int) { return nibble_pair(q); }
    static __m512 scales(const uint8_t* s) {  // 8 d
        return _mm512_cvtph_ps(_mm256_zextsi128_si256(_mm_load_si128((const __m128i*)s)));
    }
};

struct Q4_1 {
    static constexpr GgmlType kType = GgmlType::Q4_1;
    static constexpr bool kMin = true;
    static constexpr size_t kQuantBytes = 32, kScaleBytes = 32;
    static __m512i quants(const uint8_t* q, const uint8_t*, int) { return nibble_pair(q); }
    static __m512 scales(const uint8_t* s) {  // 8 d, 8 m
        return _mm512_cvtph_ps(_mm256_load_si256((const __m256i*)s));
    }
};

struct Q5_0 {
    static constexpr GgmlType kType = GgmlType::Q5_0;
    static constexpr bool kMin = false;
    static constexpr size_t kQuantBytes = 32, kScaleBytes = 48;  // 8 d, then 64 bits of 5th bits per row
    // Row r's nibbles plus 16 where its 5th-bit mask (in the pair's scales) is set.
    static __m512i quants(const uint8_t* q, const uint8_t* s, int r) {
        const __m512i u = nibble_pair(q);
        uint64_t bits;
        memcpy(&bits, s + 16 + 8 * r, 8);
        return _mm512_mask_add_epi8(u, (__mmask64)bits, u, _mm512_set1_epi8(16));
    }
    static __m512 scales(const uint8_t* s) { return Q4_0::scales(s); }
};

struct Q8_0 {
    static constexpr GgmlType kType = GgmlType::Q8_0;
    static constexpr bool kMin = false;
    static constexpr size_t kQuantBytes = 64, kScaleBytes = 16;
    static __m512i quants(const uint8_t* q, const uint8_t*, int) { return _mm512_load_si512(q); }  // q + 128
    static __m512 scales(const uint8_t* s) { return Q4_0::scales(s); }
};

// The R × C tile: w = the group's quants, w + ws = its scales (see locate); prepared activation rows
// 64-byte aligned. note: R and C are compile-time so the accumulators live in registers.
template <class W, int R, int C>
void tile(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, float* y, size_t ldy) {
    const int64_t n_pairs = (n / 32 + 1) / 2;
    const uint8_t* sc = w + ws;
    __m512 acc[R][C];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 4
        for (int c = 0; c < C; c++) acc[r][c] = _mm512_setzero_ps();
    for (int64_t p = 0; p < n_pairs; p++) {
        // note: the group's quants are one stream (and the next group follows); fetching kAhead bytes
        // ahead keeps enough lines in flight for a matvec, which the hardware prefetcher alone did not.
        #pragma GCC unroll 4
        for (size_t l = 0; l < 4 * W::kQuantBytes; l += 64)
            _mm_prefetch((const char*)w + (size_t)p * 4 * W::kQuantBytes + l + kAhead, _MM_HINT_T0);
        const __m512 f = W::scales(sc + p * W::kScaleBytes);
        __m512i u[R];
        __m512 d[R], m[R];
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            u[r] = W::quants(w + (size_t)(p * 4 + r) * W::kQuantBytes, sc + p * W::kScaleBytes, r);
            d[r] = _mm512_permutexvar_ps(_mm512_load_si512(kScaleIdx[r]), f);
            m[r] = W::kMin ? _mm512_permutexvar_ps(_mm512_load_si512(kScaleIdx[4 + r]), f) : _mm512_setzero_ps();
        }
        #pragma GCC unroll 4
        for (int c = 0; c < C; c++) {
            const ActPair* ap = (const ActPair*)(a + c * as) + p;
            const __m512i q = _mm512_load_si512(ap->q);
            const __m512 da = _mm512_load_ps(ap->d);
            const __m512i start = W::kMin ? _mm512_setzero_si512() : _mm512_load_si512(ap->off);
            #pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                const __m512i isum = _mm512_dpbusd_epi32(start, u[r], q);
                acc[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(d[r], da), acc[r][c]);
                if constexpr (W::kMin) acc[r][c] = _mm512_fmadd_ps(m[r], _mm512_load_ps(ap->s), acc[r][c]);
            }
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 4
        for (int c = 0; c < C; c++) y[c * ldy + r] = _mm512_reduce_add_ps(acc[r][c]);
}

template <class W>
struct Tiles {
    template <int R, int C>
    static void run(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, float* y, size_t ldy) {
        tile<W, R, C>(n, w, ws, a, as, y, ldy);
    }
};

// Rows [o, o + 4) are group o / 4: its quants, and the distance from them to its scales as w_stride.
template <class W>
void locate(const uint8_t* base, int64_t n_out, int64_t n_in, int64_t o, const uint8_t** w, size_t* ws) {
    const Rows4Geometry g = rows4_geometry(W::kType, n_out, n_in);
    const size_t group = (size_t)(o / 4);
    *w = base + group * g.group_quants();
    *ws = g.scales_offset() + group * g.group_scales() - group * g.group_quants();
}

}  // namespace

// Referenced from avx512_table.cpp.
extern const GemmKernel kGemmRows4Q4_0 = {GgmlType::Q8_0, act_pair_row_bytes, prepare_pairs_q8_0<8>,
                                          tile_any<Tiles<Q4_0>>, kMaxRows, kMaxCols, locate<Q4_0>};
extern const GemmKernel kGemmRows4Q4_1 = {GgmlType::Q8_1, act_pair_row_bytes, prepare_pairs_q8_1,
                                          tile_any<Tiles<Q4_1>>, kMaxRows, kMaxCols, locate<Q4_1>};
extern const GemmKernel kGemmRows4Q5_0 = {GgmlType::Q8_0, act_pair_row_bytes, prepare_pairs_q8_0<16>,
                                          tile_any<Tiles<Q5_0>>, kMaxRows, kMaxCols, locate<Q5_0>};
extern const GemmKernel kGemmRows4Q8_0 = {GgmlType::Q8_0, act_pair_row_bytes, prepare_pairs_q8_0<128>,
                                          tile_any<Tiles<Q8_0>>, kMaxRows, kMaxCols, locate<Q8_0>};

}  // namespace bee::avx512
