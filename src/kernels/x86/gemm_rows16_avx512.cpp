// kernels/x86/gemm_rows16_avx512: AVX-512 VNNI tile kernels (kernels/gemm.h) of the 32-element weight types
// Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0, 16 weight rows × up to 8 tokens, on the rows16 layout (kernels/repack.h)
// and on GGUF rows.
// Int32 lane l of every register belongs to weight row l, so nothing is summed across lanes: per block and
// token, 8 vpdpbusd (4 activation bytes broadcast to all rows) give the 16 rows' exact Σ u·a, then one
// convert, one scale multiply and one FMA advance 16 outputs. Per output, in block order:
//   acc = fma(float(Σ u·a + start), dw·da, acc), then for Q4_1/Q5_1 acc = fma(m, s, acc)
// (start = -off·Σa folds the offset of the symmetric types: u = q + 8 for Q4_0, q + 16 for Q5_0, q + 128
// for Q8_0).
// Every output is one lane doing exactly this whatever the tile shape or layout, so tiles of any shape and
// both layouts give bit-identical results (DESIGN invariant 2). The GGUF tile gathers the same 16-row
// vectors from GGUF rows (a 32-bit gather per vector), so it is slower but exact; with repacking on (the
// default) it only serves BEE_REPACK=0.
// note: GCC 12's AVX-512 headers build intrinsics on _mm512_undefined_*(), which -Wuninitialized flags
// (a false positive); the pragmas must come before the header.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "base/fp16.h"
#include "kernels/repack.h"
#include "kernels/x86/avx512.h"
#include "kernels/x86/tile_act.h"
#include "quant/blocks.h"

namespace bee::avx512 {

namespace {

using x86::act_block_row_bytes;
using x86::ActBlock;
using x86::prepare_blocks_q8_0;
using x86::prepare_blocks_q8_1;

constexpr int kRows = 16;  // weight rows per tile: one per int32 lane
constexpr int kCols = 8;   // tokens per tile: 8 accumulators + 8 weight vectors + temporaries fit 32 zmm

// A block of 16 rows: u[k] lane l = the 4 unsigned weight bytes of elements 4k..4k+3 of row l.
struct Block16 {
    __m512i u[8];
    __m512 d, m;  // per row: scale (and Q4_1's min)
};

// Split 4 nibble vectors (low nibbles: elements 0-15, high: 16-31) into the 8 element vectors.
inline void split_nibbles(const __m512i (&x)[4], Block16& b) {
    const __m512i lo = _mm512_set1_epi8(0x0F);
#pragma GCC unroll 4
    for (int v = 0; v < 4; v++) {
        b.u[v] = _mm512_and_si512(x[v], lo);
        b.u[v + 4] = _mm512_and_si512(_mm512_srli_epi16(x[v], 4), lo);
    }
}

// fp16 in the low half of each int32 lane -> 16 floats.
inline __m512 halves_to_ps(__m512i x) { return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(x)); }

// 5-bit types: adds 16 to the bytes of u[k] (elements 4k..4k+3 of each row) whose 5th bit is set in the
// rows' qh (lane l = row l's 32 bits). Bits 4k..4k+3 sit in byte k/2, nibble k%2: a byte shuffle copies
// that byte into the lane's 4 bytes, a test against (1, 2, 4, 8) << 4(k%2) picks one bit per byte.
inline void add_fifth_bits(__m512i qh, Block16& b) {
    // byte 4p of each dword p (0-3) of a 128-bit lane, in all 4 of its bytes
    const __m512i base = _mm512_set_epi32(0x0C0C0C0C, 0x08080808, 0x04040404, 0, 0x0C0C0C0C, 0x08080808, 0x04040404, 0,
                                          0x0C0C0C0C, 0x08080808, 0x04040404, 0, 0x0C0C0C0C, 0x08080808, 0x04040404, 0);
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) {
        const __m512i bytes = _mm512_shuffle_epi8(qh, _mm512_add_epi8(base, _mm512_set1_epi8((char)(k / 2))));
        const __mmask64 m = _mm512_test_epi8_mask(bytes, _mm512_set1_epi32(k % 2 ? (int)0x80402010 : 0x08040201));
        b.u[k] = _mm512_mask_add_epi8(b.u[k], m, b.u[k], _mm512_set1_epi8(16));
    }
}

// Weight types: the bytes of the rows16 layout and where their parts sit in a GGUF block (d at 0; m, for
// the _1 types, at 2).
struct Q4_0 {
    static constexpr bool kMin = false, kNibbles = true, kFifth = false;
    static constexpr size_t kQuantBytes = 256, kScaleBytes = 32;  // as rows16_geometry says
    static constexpr size_t kBlockBytes = sizeof(BlockQ4_0), kQsAt = 2, kQhAt = 0;
};
struct Q4_1 {
    static constexpr bool kMin = true, kNibbles = true, kFifth = false;
    static constexpr size_t kQuantBytes = 256, kScaleBytes = 64;
    static constexpr size_t kBlockBytes = sizeof(BlockQ4_1), kQsAt = 4, kQhAt = 0;
};
struct Q5_0 {
    static constexpr bool kMin = false, kNibbles = true, kFifth = true;
    static constexpr size_t kQuantBytes = 320, kScaleBytes = 32;
    static constexpr size_t kBlockBytes = sizeof(BlockQ5_0), kQsAt = 6, kQhAt = 2;
};
struct Q5_1 {
    static constexpr bool kMin = true, kNibbles = true, kFifth = true;
    static constexpr size_t kQuantBytes = 320, kScaleBytes = 64;
    static constexpr size_t kBlockBytes = sizeof(BlockQ5_1), kQsAt = 8, kQhAt = 4;
};
struct Q8_0 {
    static constexpr bool kMin = false, kNibbles = false, kFifth = false;
    static constexpr size_t kQuantBytes = 512, kScaleBytes = 32;
    static constexpr size_t kBlockBytes = sizeof(BlockQ8_0), kQsAt = 2, kQhAt = 0;
};

// Bytes the rows16 tile reads ahead of itself in the quants stream (software prefetch).
constexpr size_t kAhead = 1024;

// Reads blocks of a rows16 group: quants at q, scales at s (kernels/repack.h).
template <class W>
struct Rows16Src {
    const uint8_t *q, *s;
    Rows16Src(const uint8_t* w, size_t ws, int) : q(w), s(w + ws) {}
    inline Block16 load(int64_t b) const {
        const uint8_t* qb = q + (size_t)b * W::kQuantBytes;
// note: one stream per group; the hardware prefetcher alone left a matvec waiting on loads.
#pragma GCC unroll 8
        for (size_t l = 0; l < W::kQuantBytes; l += 64) _mm_prefetch((const char*)qb + l + kAhead, _MM_HINT_T0);
        const uint8_t* sb = s + (size_t)b * W::kScaleBytes;
        Block16 r;
        if constexpr (W::kNibbles) {
            const __m512i x[4] = {_mm512_load_si512(qb), _mm512_load_si512(qb + 64), _mm512_load_si512(qb + 128),
                                  _mm512_load_si512(qb + 192)};
            split_nibbles(x, r);
            if constexpr (W::kFifth) add_fifth_bits(_mm512_load_si512(qb + 256), r);
        } else {
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) r.u[k] = _mm512_load_si512(qb + 64 * k);
        }
        r.d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)sb));
        r.m = W::kMin ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(sb + 32))) : _mm512_setzero_ps();
        return r;
    }
};

// Gathers the same vectors from nr GGUF rows ws bytes apart (lanes past nr read nothing and are never stored).
template <class W>
struct GgufSrc {
    const uint8_t* w;
    __m512i idx;
    __mmask16 mask;
    GgufSrc(const uint8_t* w_, size_t ws, int nr)
        : w(w_),
          idx(_mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                 _mm512_set1_epi32((int)ws))),
          mask((__mmask16)((1u << nr) - 1)) {}
    inline __m512i gather(const uint8_t* p) const {
        return _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), mask, idx, p, 1);
    }
    inline Block16 load(int64_t b) const {
        const uint8_t* blk = w + (size_t)b * W::kBlockBytes;
        Block16 r;
        if constexpr (W::kNibbles) {
            const __m512i x[4] = {gather(blk + W::kQsAt), gather(blk + W::kQsAt + 4), gather(blk + W::kQsAt + 8),
                                  gather(blk + W::kQsAt + 12)};
            split_nibbles(x, r);
            if constexpr (W::kFifth) add_fifth_bits(gather(blk + W::kQhAt), r);
        } else {
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++)  // q + 128 as unsigned
                r.u[k] = _mm512_xor_si512(gather(blk + W::kQsAt + 4 * k), _mm512_set1_epi8((char)0x80));
        }
        const __m512i dm = gather(blk);  // d (and the _1 types' m in the high half)
        r.d = halves_to_ps(dm);
        r.m = W::kMin ? halves_to_ps(_mm512_srli_epi32(dm, 16)) : _mm512_setzero_ps();
        return r;
    }
};

// The 16 × C tile over blocks of Src; prepared activation rows `as` bytes apart.
template <class W, class Src, int C>
void tile(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, int nr, float* y, size_t ldy) {
    const Src src(w, ws, nr);
    __m512 acc[C];
#pragma GCC unroll 8
    for (int c = 0; c < C; c++) acc[c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < n / 32; b++) {
        const Block16 wb = src.load(b);
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) {
            const ActBlock* ab = (const ActBlock*)(a + c * as) + b;
            // two independent chains (elements 0-15, 16-31) halve the vpdpbusd latency on the critical path
            __m512i s0 = W::kMin ? _mm512_setzero_si512() : _mm512_set1_epi32(ab->start);
            __m512i s1 = _mm512_setzero_si512();
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) {
                s0 = _mm512_dpbusd_epi32(s0, wb.u[k], _mm512_set1_epi32(ab->q4[k]));
                s1 = _mm512_dpbusd_epi32(s1, wb.u[k + 4], _mm512_set1_epi32(ab->q4[k + 4]));
            }
            const __m512 f = _mm512_cvtepi32_ps(_mm512_add_epi32(s0, s1));
            acc[c] = _mm512_fmadd_ps(f, _mm512_mul_ps(wb.d, _mm512_set1_ps(ab->d)), acc[c]);
            if constexpr (W::kMin) acc[c] = _mm512_fmadd_ps(wb.m, _mm512_set1_ps(ab->s), acc[c]);
        }
    }
    const __mmask16 mask = (__mmask16)((1u << nr) - 1);
#pragma GCC unroll 8
    for (int c = 0; c < C; c++) _mm512_mask_storeu_ps(y + c * ldy, mask, acc[c]);
}

template <class W, class Src>
void tile_any16(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, int nr, int nc, float* y,
                size_t ldy) {
    with_cols<kCols>(nc, [&]<int C>() { tile<W, Src, C>(n, w, ws, a, as, nr, y, ldy); });
}

// Rows [o, o + 16) are group o / 16: its quants, and the distance from them to its scales as w_stride.
template <GgmlType T>
void locate(const uint8_t* base, int64_t n_out, int64_t n_in, int64_t o, const uint8_t** w, size_t* ws) {
    const Rows16Geometry g = rows16_geometry(T, n_out, n_in);
    const int64_t group = o / kRows;
    *w = base + g.quants_at(group, 0);
    *ws = g.scales_at(group, 0) - g.quants_at(group, 0);
}

}  // namespace

// Referenced from avx512_table.cpp: per type the rows16 kernel and the GGUF-layout kernel.
extern const GemmKernel kGemmRows16Q4_0 =
    {GgmlType::Q8_0, act_block_row_bytes,   prepare_blocks_q8_0<8>, tile_any16<Q4_0, Rows16Src<Q4_0>>, kRows,
     kCols,          locate<GgmlType::Q4_0>};
extern const GemmKernel kGemmQ4_0 =
    {GgmlType::Q8_0, act_block_row_bytes, prepare_blocks_q8_0<8>, tile_any16<Q4_0, GgufSrc<Q4_0>>, kRows, kCols,
     nullptr};
extern const GemmKernel kGemmRows16Q4_1 =
    {GgmlType::Q8_1, act_block_row_bytes,   prepare_blocks_q8_1, tile_any16<Q4_1, Rows16Src<Q4_1>>, kRows,
     kCols,          locate<GgmlType::Q4_1>};
extern const GemmKernel kGemmQ4_1 =
    {GgmlType::Q8_1, act_block_row_bytes, prepare_blocks_q8_1, tile_any16<Q4_1, GgufSrc<Q4_1>>, kRows, kCols, nullptr};
extern const GemmKernel kGemmRows16Q5_0 =
    {GgmlType::Q8_0, act_block_row_bytes,   prepare_blocks_q8_0<16>, tile_any16<Q5_0, Rows16Src<Q5_0>>, kRows,
     kCols,          locate<GgmlType::Q5_0>};
extern const GemmKernel kGemmQ5_0 =
    {GgmlType::Q8_0, act_block_row_bytes, prepare_blocks_q8_0<16>, tile_any16<Q5_0, GgufSrc<Q5_0>>, kRows, kCols,
     nullptr};
extern const GemmKernel kGemmRows16Q5_1 =
    {GgmlType::Q8_1, act_block_row_bytes,   prepare_blocks_q8_1, tile_any16<Q5_1, Rows16Src<Q5_1>>, kRows,
     kCols,          locate<GgmlType::Q5_1>};
extern const GemmKernel kGemmQ5_1 =
    {GgmlType::Q8_1, act_block_row_bytes, prepare_blocks_q8_1, tile_any16<Q5_1, GgufSrc<Q5_1>>, kRows, kCols, nullptr};
extern const GemmKernel kGemmRows16Q8_0 =
    {GgmlType::Q8_0, act_block_row_bytes,   prepare_blocks_q8_0<128>, tile_any16<Q8_0, Rows16Src<Q8_0>>, kRows,
     kCols,          locate<GgmlType::Q8_0>};
extern const GemmKernel kGemmQ8_0 =
    {GgmlType::Q8_0, act_block_row_bytes, prepare_blocks_q8_0<128>, tile_any16<Q8_0, GgufSrc<Q8_0>>, kRows, kCols,
     nullptr};

}  // namespace bee::avx512
