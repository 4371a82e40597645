// kernels/x86/gemm_rows16_k_avx512: AVX-512 VNNI tile kernels (kernels/gemm.h) of the K-quants Q2_K, Q3_K,
// Q4_K, Q5_K and Q6_K against Q8_K activations, 16 weight rows × up to 8 tokens, on the rows16 layout (kernels/repack.h:
// each 256-element super-block transposed into 4-byte words, word i of the 16 rows in one vector) and on
// GGUF rows (the same words gathered, 32 bits per row).
// As in gemm_rows16_avx512.cpp, int32 lane l of every register belongs to weight row l: nothing is summed
// across lanes. Per super-block, token and row, all integer work is exact:
//   S_j = Σ u·a over sub-block j (vpdpbusd, 4 broadcast activation bytes; Q6_K starts at -32·Σa, Q3_K
//         at -4·Σa: their offsets)
//   isum = Σ_j sc_j·S_j (vpmulld with the rows' sub-block scales)
//   Q2_K/Q4_K/Q5_K: imin = Σ_j m_j·(Σa over sub-block j) (vpdpwssd, pairs of int16)
// then, in this order, acc = fma(float(isum), d·da, acc) and for Q2_K/Q4_K/Q5_K acc = fnma(float(imin), dmin·da, acc).
// Every output is one lane doing exactly this whatever the tile shape or layout, so tiles of any shape and
// both layouts give bit-identical results (DESIGN invariant 2).
// note: GCC 12's AVX-512 headers build intrinsics on _mm512_undefined_*(), which -Wuninitialized flags
// (a false positive); the pragmas must come before the header.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "kernels/repack.h"
#include "kernels/x86/avx512.h"
#include "kernels/x86/tile_act.h"
#include "quant/blocks.h"

namespace bee::avx512 {

namespace {

using x86::act_row_bytes;
using x86::ActK;
using x86::prepare_q8_k;

constexpr int kRows = 16;  // weight rows per tile: one per int32 lane
constexpr int kCols = 8;   // tokens per tile

// fp16 in the low half of each int32 lane -> 16 floats.
inline __m512 halves_to_ps(__m512i x) { return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(x)); }

// Shifts every byte left by s (s may be negative: right) inside its int32 lane; callers mask the result.
inline __m512i shift_bits(__m512i x, int s) {
    return s >= 0 ? _mm512_slli_epi32(x, (unsigned)s) : _mm512_srli_epi32(x, (unsigned)-s);
}

// Bytes the rows16 tile reads ahead of itself (software prefetch, as in gemm_rows16_avx512.cpp).
constexpr size_t kAhead = 2048;

// Word i (bytes 4i..4i+3) of super-block b of 16 rows, from the rows16 layout.
template <class W>
struct Rows16Src {
    const uint8_t* q;
    Rows16Src(const uint8_t* w, size_t, int) : q(w) {}
    inline const uint8_t* block(int64_t b) const { return q + (size_t)b * W::kWords * 64; }
    inline void prefetch(int64_t b) const {
        const uint8_t* p = block(b) + kAhead;
        for (int l = 0; l < W::kWords; l++) _mm_prefetch((const char*)p + 64 * l, _MM_HINT_T0);
    }
    inline __m512i word(int64_t b, int i) const { return _mm512_load_si512(block(b) + 64 * i); }
    // The fp16 at byte 4i of the block (its last 2 bytes), in the low half of each lane.
    inline __m512i last_half(int64_t b, int i) const { return word(b, i); }
};

// The same words gathered from nr GGUF rows ws bytes apart (lanes past nr read nothing, are never stored).
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
    inline void prefetch(int64_t) const {}
    inline __m512i word(int64_t b, int i) const {
        return _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), mask, idx, w + (size_t)b * W::kBlockBytes + 4 * i,
                                           1);
    }
    // note: the block ends 2 bytes into word i: read the 4 bytes ending there, so nothing past it is read.
    inline __m512i last_half(int64_t b, int i) const {
        const uint8_t* p = w + (size_t)b * W::kBlockBytes + 4 * i - 2;
        return _mm512_srli_epi32(_mm512_mask_i32gather_epi32(_mm512_setzero_si512(), mask, idx, p, 1), 16);
    }
};

// Sub-block j's S_j·sc_j added to isum[c] for each token: u[0..K) the element vectors (4 elements each),
// e0 the sub-block's first element, j >= 0: start the chain at start16[j] >> kStartShift (Q6_K's offset
// -32·Σa; Q3_K's -4·Σa, exact: start16 is a multiple of 32), j < 0: at 0.
template <int K, int C, int kStartShift = 0>
inline __attribute__((always_inline)) void add_sub_block(const __m512i (&u)[K], __m512i sc, const uint8_t* a, size_t as,
                                                         int64_t b, int j, int e0, __m512i (&isum)[C]) {
#pragma GCC unroll 8
    for (int c = 0; c < C; c++) {
        const ActK* ab = (const ActK*)(a + c * as) + b;
        const int32_t* q4 = (const int32_t*)(ab->q + e0);
        // two independent chains halve the vpdpbusd latency on the critical path
        __m512i s0 = j >= 0 ? _mm512_set1_epi32(ab->start16[j] >> kStartShift) : _mm512_setzero_si512();
        __m512i s1 = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int k = 0; k < K / 2; k++) {
            s0 = _mm512_dpbusd_epi32(s0, u[k], _mm512_set1_epi32(q4[k]));
            s1 = _mm512_dpbusd_epi32(s1, u[k + K / 2], _mm512_set1_epi32(q4[k + K / 2]));
        }
        isum[c] = _mm512_add_epi32(isum[c], _mm512_mullo_epi32(_mm512_add_epi32(s0, s1), sc));
    }
}

// Q2_K: the 16 scale bytes (sc low nibble, m high) at words 0-3, qs (byte 32h + l: elements 128h + l,
// +32, +64, +96 in bits 0-1, 2-3, 4-5, 6-7) at words 4-19, d and dmin at word 20.
struct Q2K {
    static constexpr int kWords = 21;
    static constexpr size_t kBlockBytes = sizeof(BlockQ2_K);

    template <class Src, int C>
    static inline __attribute__((always_inline)) void super(const Src& src, int64_t b, const uint8_t* a, size_t as,
                                                            __m512 (&acc)[C]) {
        __m512i isum[C];
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) isum[c] = _mm512_setzero_si512();
        const __m512i lo4 = _mm512_set1_epi32(0x0f);
#pragma GCC unroll 1
        for (int j = 0; j < 16; j++) {  // sub-block j: elements 128h + 32qr + l0 + (0..15)
            const int h = j / 8, qr = (j % 8) / 2, l0 = 16 * (j % 2);
            const __m512i scj = _mm512_and_si512(_mm512_srli_epi32(src.word(b, j / 4), (unsigned)(8 * (j % 4))), lo4);
            __m512i u[4];
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++)
                u[k] = _mm512_and_si512(_mm512_srli_epi32(src.word(b, (16 + 32 * h + l0) / 4 + k), (unsigned)(2 * qr)),
                                        _mm512_set1_epi8(0x03));
            add_sub_block<4, C>(u, scj, a, as, b, -1, 16 * j, isum);
        }
        // mins as int16 pairs (m_2p, m_2p+1) per lane: the high nibbles of scale bytes 2p, 2p+1
        __m512i mp[8];
#pragma GCC unroll 4
        for (int w = 0; w < 4; w++) {
            const __m512i x = src.word(b, w);
            mp[2 * w] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(x, 4), lo4),
                                        _mm512_and_si512(_mm512_slli_epi32(x, 4), _mm512_set1_epi32(0xf0000)));
            mp[2 * w + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(x, 20), lo4),
                                            _mm512_and_si512(_mm512_srli_epi32(x, 12), _mm512_set1_epi32(0xf0000)));
        }
        const __m512i dm = src.word(b, 20);
        const __m512 d = halves_to_ps(dm), dmin = halves_to_ps(_mm512_srli_epi32(dm, 16));
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) {
            const ActK* ab = (const ActK*)(a + c * as) + b;
            __m512i imin = _mm512_setzero_si512();
#pragma GCC unroll 8
            for (int p = 0; p < 8; p++) imin = _mm512_dpwssd_epi32(imin, mp[p], _mm512_set1_epi32(ab->bs16pair[p]));
            const __m512 da = _mm512_set1_ps(ab->d);
            acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[c]), _mm512_mul_ps(d, da), acc[c]);
            acc[c] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(imin), _mm512_mul_ps(dmin, da), acc[c]);
        }
    }
};

// Q3_K: hmask (bit j/2 of byte l: element l of sub-block pair j/2, set: no -4) at words 0-7, qs (as Q2_K)
// at 8-23, the 16 6-bit scales (blocks.h q3k_scale, minus 32) at 24-26, d in the low half of word 27.
struct Q3K {
    static constexpr int kWords = 28;
    static constexpr size_t kBlockBytes = sizeof(BlockQ3_K);

    template <class Src, int C>
    static inline __attribute__((always_inline)) void super(const Src& src, int64_t b, const uint8_t* a, size_t as,
                                                            __m512 (&acc)[C]) {
        __m512i isum[C];
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) isum[c] = _mm512_setzero_si512();
// note: unrolled, every shift and word index is a constant: +10-20% tg on a Q3_K 0.5B (its unpacking
// is the heaviest); the other types measured the same either way and stay rolled.
#pragma GCC unroll 16
        for (int j = 0; j < 16; j++) {  // sub-block j: elements 128h + 32qr + l0 + (0..15), u = q + 4 in [0, 7]
            const int h = j / 8, qr = (j % 8) / 2, l0 = 16 * (j % 2);
            const unsigned at = (unsigned)(8 * (j % 4));
            const __m512i low = _mm512_and_si512(_mm512_srli_epi32(src.word(b, 24 + (j % 8) / 4), at + 4 * (j / 8)),
                                                 _mm512_set1_epi32(0xf));
            const __m512i high =
                _mm512_and_si512(_mm512_srli_epi32(src.word(b, 26), at + 2 * (j / 4)), _mm512_set1_epi32(3));
            const __m512i scj =
                _mm512_sub_epi32(_mm512_or_si512(low, _mm512_slli_epi32(high, 4)), _mm512_set1_epi32(32));
            __m512i u[4];
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) {
                const __m512i q2 =
                    _mm512_and_si512(_mm512_srli_epi32(src.word(b, (32 + 32 * h + l0) / 4 + k), (unsigned)(2 * qr)),
                                     _mm512_set1_epi8(0x03));
                const __m512i hb =
                    _mm512_and_si512(shift_bits(src.word(b, l0 / 4 + k), 2 - j / 2), _mm512_set1_epi8(0x04));
                u[k] = _mm512_or_si512(q2, hb);
            }
            add_sub_block<4, C, 3>(u, scj, a, as, b, j, 16 * j, isum);
        }
        const __m512 d = halves_to_ps(src.last_half(b, 27));
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) {
            const ActK* ab = (const ActK*)(a + c * as) + b;
            acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[c]), _mm512_mul_ps(d, _mm512_set1_ps(ab->d)), acc[c]);
        }
    }
};

// Q4_K (kFifth = false) and Q5_K: d, dmin at word 0, the 12 scale bytes at words 1-3, Q5_K's qh (bit j of
// byte l: element l of sub-block j) at words 4-11, then qs (byte 32g + l: element 64g + l low, 64g + 32 + l
// high).
template <bool kFifth>
struct QxK {
    static constexpr int kWords = kFifth ? 44 : 36;
    static constexpr size_t kBlockBytes = kFifth ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
    static constexpr int kQsWord = kFifth ? 12 : 4;

    template <class Src, int C>
    static inline __attribute__((always_inline)) void super(const Src& src, int64_t b, const uint8_t* a, size_t as,
                                                            __m512 (&acc)[C]) {
        const __m512i dm = src.word(b, 0);
        const __m512i v0 = src.word(b, 1), v1 = src.word(b, 2), v2 = src.word(b, 3);
        const __m512i m6 = _mm512_set1_epi32(0x3f3f3f3f), m4 = _mm512_set1_epi32(0x0f0f0f0f),
                      hi2 = _mm512_set1_epi32(0x30303030);
        // the 6-bit scales and mins, byte j%4 of each lane (as the scalar k_scale_min decodes them)
        const __m512i sc[2] = {_mm512_and_si512(v0, m6),
                               _mm512_or_si512(_mm512_and_si512(v2, m4),
                                               _mm512_and_si512(_mm512_srli_epi32(v0, 2), hi2))};
        const __m512i mn[2] = {_mm512_and_si512(v1, m6),
                               _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(v2, 4), m4),
                                               _mm512_and_si512(_mm512_srli_epi32(v1, 2), hi2))};
        __m512i isum[C];
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) isum[c] = _mm512_setzero_si512();
        const __m512i lo4 = _mm512_set1_epi8(0x0F), byte = _mm512_set1_epi32(0xff);
#pragma GCC unroll 1
        for (int j = 0; j < 8; j++) {
            const __m512i scj = _mm512_and_si512(_mm512_srli_epi32(sc[j / 4], 8 * (j % 4)), byte);
            __m512i u[8];
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) {
                const __m512i x = src.word(b, kQsWord + 8 * (j / 2) + k);
                u[k] = _mm512_and_si512(j % 2 ? _mm512_srli_epi16(x, 4) : x, lo4);
                if constexpr (kFifth)
                    u[k] = _mm512_or_si512(u[k], _mm512_and_si512(shift_bits(src.word(b, 4 + k), 4 - j),
                                                                  _mm512_set1_epi8(0x10)));
            }
            add_sub_block<8, C>(u, scj, a, as, b, -1, 32 * j, isum);
        }
        // mins as int16 pairs (m_2p, m_2p+1) per lane
        __m512i mp[4];
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            mp[2 * h] = _mm512_or_si512(_mm512_and_si512(mn[h], byte),
                                        _mm512_slli_epi32(_mm512_and_si512(mn[h], _mm512_set1_epi32(0xff00)), 8));
            mp[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(mn[h], 16), byte),
                                            _mm512_and_si512(_mm512_srli_epi32(mn[h], 8), _mm512_set1_epi32(0xff0000)));
        }
        const __m512 d = halves_to_ps(dm), dmin = halves_to_ps(_mm512_srli_epi32(dm, 16));
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) {
            const ActK* ab = (const ActK*)(a + c * as) + b;
            __m512i imin = _mm512_setzero_si512();
#pragma GCC unroll 4
            for (int p = 0; p < 4; p++) imin = _mm512_dpwssd_epi32(imin, mp[p], _mm512_set1_epi32(ab->bs32pair[p]));
            const __m512 da = _mm512_set1_ps(ab->d);
            acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[c]), _mm512_mul_ps(d, da), acc[c]);
            acc[c] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(imin), _mm512_mul_ps(dmin, da), acc[c]);
        }
    }
};
using Q4K = QxK<false>;
using Q5K = QxK<true>;

// Q6_K: ql at words 0-31, qh at 32-47, the 16 int8 scales at 48-51, d in the low half of word 52.
struct Q6K {
    static constexpr int kWords = 53;
    static constexpr size_t kBlockBytes = sizeof(BlockQ6_K);

    template <class Src, int C>
    static inline __attribute__((always_inline)) void super(const Src& src, int64_t b, const uint8_t* a, size_t as,
                                                            __m512 (&acc)[C]) {
        __m512i isum[C];
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) isum[c] = _mm512_setzero_si512();
#pragma GCC unroll 1
        for (int j = 0; j < 16; j++) {  // sub-block j: elements 128h + 32qr + l0 + (0..15) (blocks.h unpack_q6_K)
            const int h = j / 8, qr = (j % 8) / 2, l0 = 16 * (j % 2);
            const __m512i scw = src.word(b, 48 + j / 4);
            const __m512i scj = _mm512_srai_epi32(_mm512_slli_epi32(scw, (unsigned)(24 - 8 * (j % 4))), 24);
            __m512i u[4];
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) {
                const __m512i ql = src.word(b, (64 * h + 32 * (qr % 2) + l0) / 4 + k);
                const __m512i qh = src.word(b, (128 + 32 * h + l0) / 4 + k);
                u[k] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(ql, (unsigned)(4 * (qr / 2))),
                                                        _mm512_set1_epi8(0x0F)),
                                       _mm512_and_si512(shift_bits(qh, 4 - 2 * qr), _mm512_set1_epi8(0x30)));
            }
            add_sub_block<4, C>(u, scj, a, as, b, j, 16 * j, isum);
        }
        const __m512 d = halves_to_ps(src.last_half(b, 52));
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) {
            const ActK* ab = (const ActK*)(a + c * as) + b;
            acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[c]), _mm512_mul_ps(d, _mm512_set1_ps(ab->d)), acc[c]);
        }
    }
};

// The 16 × C tile over super-blocks of Src; prepared activation rows `as` bytes apart.
template <class W, class Src, int C>
void tile(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, int nr, float* y, size_t ldy) {
    const Src src(w, ws, nr);
    __m512 acc[C];
#pragma GCC unroll 8
    for (int c = 0; c < C; c++) acc[c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        src.prefetch(b);
        W::template super<Src, C>(src, b, a, as, acc);
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

// Rows [o, o + 16) are group o / 16: its first super-block.
template <GgmlType T>
void locate(const uint8_t* base, int64_t n_out, int64_t n_in, int64_t o, const uint8_t** w, size_t* ws) {
    const Rows16Geometry g = rows16_geometry(T, n_out, n_in);
    *w = base + g.quants_at(o / kRows, 0);
    *ws = g.quant_bytes;
}

}  // namespace

// Referenced from avx512_table.cpp: per type the rows16 kernel and the GGUF-layout kernel.
extern const GemmKernel kGemmRows16Q2_K =
    {GgmlType::Q8_K, act_row_bytes, prepare_q8_k,          tile_any16<Q2K, Rows16Src<Q2K>>,
     kRows,          kCols,         locate<GgmlType::Q2_K>};
extern const GemmKernel kGemmQ2_K = {GgmlType::Q8_K, act_row_bytes, prepare_q8_k, tile_any16<Q2K, GgufSrc<Q2K>>,
                                     kRows,          kCols,         nullptr};
extern const GemmKernel kGemmRows16Q3_K =
    {GgmlType::Q8_K, act_row_bytes, prepare_q8_k,          tile_any16<Q3K, Rows16Src<Q3K>>,
     kRows,          kCols,         locate<GgmlType::Q3_K>};
extern const GemmKernel kGemmQ3_K = {GgmlType::Q8_K, act_row_bytes, prepare_q8_k, tile_any16<Q3K, GgufSrc<Q3K>>,
                                     kRows,          kCols,         nullptr};
extern const GemmKernel kGemmRows16Q4_K =
    {GgmlType::Q8_K, act_row_bytes, prepare_q8_k,          tile_any16<Q4K, Rows16Src<Q4K>>,
     kRows,          kCols,         locate<GgmlType::Q4_K>};
extern const GemmKernel kGemmQ4_K = {GgmlType::Q8_K, act_row_bytes, prepare_q8_k, tile_any16<Q4K, GgufSrc<Q4K>>,
                                     kRows,          kCols,         nullptr};
extern const GemmKernel kGemmRows16Q5_K =
    {GgmlType::Q8_K, act_row_bytes, prepare_q8_k,          tile_any16<Q5K, Rows16Src<Q5K>>,
     kRows,          kCols,         locate<GgmlType::Q5_K>};
extern const GemmKernel kGemmQ5_K = {GgmlType::Q8_K, act_row_bytes, prepare_q8_k, tile_any16<Q5K, GgufSrc<Q5K>>,
                                     kRows,          kCols,         nullptr};
extern const GemmKernel kGemmRows16Q6_K =
    {GgmlType::Q8_K, act_row_bytes, prepare_q8_k,          tile_any16<Q6K, Rows16Src<Q6K>>,
     kRows,          kCols,         locate<GgmlType::Q6_K>};
extern const GemmKernel kGemmQ6_K = {GgmlType::Q8_K, act_row_bytes, prepare_q8_k, tile_any16<Q6K, GgufSrc<Q6K>>,
                                     kRows,          kCols,         nullptr};

}  // namespace bee::avx512
