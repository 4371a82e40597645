// kernels/kv_avx2: AVX2+FMA+F16C attention for every KV type: the tile kernels (scores of a tile of cells
// for the query heads of a GQA group, the weighted V accumulation) on f32 heads and fused with the
// stored-byte loaders of f16, bf16, q8_0 and the scalar TurboQuant types (indices turned into centroids
// by one in-register table lookup, _mm256_permutevar8x32_ps); head decoders for the legacy 4/5-bit
// blocks and TCQ (sliding trellis windows, then codebook loads), which go through the f32 kernels.
#include <cstring>

#include "base/fp16.h"
#include "kernels/kernels_impl.h"
#include "kernels/simd_avx2.h"
#include "quant/blocks.h"
#include "quant/tcq.h"
#include "quant/turbo.h"

namespace bee::avx2_ops {

namespace {

// 8 halves at p (unaligned) -> 8 floats; the tail (rem < 8 elements) zero-filled.
inline __m256 load_f16x8(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p)); }
inline __m256 load_f16_tail(const uint8_t* p, int rem) {
    alignas(16) uint16_t h[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    memcpy(h, p, (size_t)rem * 2);
    return _mm256_cvtph_ps(_mm_load_si128((const __m128i*)h));
}

// bf16: widened by a 16-bit shift.
inline __m256 load_bf16x8(const uint8_t* p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)p)), 16));
}

// ---- block types: an unpacker turns a block of B values into B/8 vectors of floats ----------------
// Every block type here has a block size that is a multiple of 8, and n is a whole number of blocks.

inline __m256 bytes_to_ps(__m128i b8) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b8)); }
inline __m256 ubytes_to_ps(__m128i b8) { return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b8)); }
inline float half_at(const uint8_t* p) {  // F16C: one instruction instead of the portable bit trick
    fp16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

// The 32 4-bit values of a legacy block (element j: low nibble of qs[j] for j < 16, else the high
// nibble of qs[j-16]) as 32 bytes, plus an optional 5th bit from qh (bit j), times d plus offset.
template <bool kHasMin, bool kFiveBit>
struct UnpackLegacy {
    static constexpr int kValues = 32;
    static constexpr int kBytes = 2 + (kHasMin ? 2 : 0) + (kFiveBit ? 4 : 0) + 16;
    static void unpack(const uint8_t* p, __m256* out) {
        const float d = half_at(p);
        const float m = kHasMin ? half_at(p + 2) : (kFiveBit ? -16.0f * d : -8.0f * d);
        const uint8_t* qh = p + 2 + (kHasMin ? 2 : 0);
        const uint8_t* qs = qh + (kFiveBit ? 4 : 0);
        const __m128i raw = _mm_loadu_si128((const __m128i*)qs);
        const __m128i lo = _mm_and_si128(raw, _mm_set1_epi8(15));
        const __m128i hi = _mm_and_si128(_mm_srli_epi16(raw, 4), _mm_set1_epi8(15));
        const __m256 vd = _mm256_set1_ps(d), vm = _mm256_set1_ps(m);
        uint32_t h = 0;
        if (kFiveBit) memcpy(&h, qh, 4);
        const __m256i shifts = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        for (int k = 0; k < 4; k++) {
            const __m128i src = k < 2 ? lo : hi;
            __m256i q = _mm256_cvtepu8_epi32(k % 2 == 0 ? src : _mm_srli_si128(src, 8));
            if (kFiveBit) {
                const __m256i bits = _mm256_srlv_epi32(_mm256_set1_epi32((int)(h >> (8 * k))), shifts);
                q = _mm256_or_si256(q, _mm256_slli_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(1)), 4));
            }
            out[k] = _mm256_fmadd_ps(vd, _mm256_cvtepi32_ps(q), vm);
        }
    }
};

template <class U>
void decode_blocks(const uint8_t* head, float* out, int n) {
    __m256 v[U::kValues / 8];
    for (int b = 0; b < n / U::kValues; b++) {
        U::unpack(head + (size_t)b * U::kBytes, v);
        for (int k = 0; k < U::kValues / 8; k++) _mm256_storeu_ps(out + b * U::kValues + 8 * k, v[k]);
    }
}

// ---- TurboQuant scalar types: 8 indices -> 8 centroids via permutevar8x32 --------------------------
// kBits = 2, 3, 4; kGroup = 64 or 128. Decoded values are centroid · block norm (rotated domain).
template <GgmlType T, int kBits, int kGroup>
struct UnpackTurbo {
    static constexpr int kValues = kGroup;
    static constexpr int kBytes = 2 + kGroup * kBits / 8;
    // Indices of elements 8c..8c+7 of the block as 32-bit lanes.
    static __m256i indices(const uint8_t* blk, int c) {
        const uint8_t* qs = blk + 2;
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        if (kBits == 4) {
            uint32_t w;
            memcpy(&w, qs + 4 * c, 4);
            return _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)w), _mm256_slli_epi32(lane, 2)),
                                    _mm256_set1_epi32(15));
        }
        uint16_t w;
        memcpy(&w, qs + 2 * c, 2);
        __m256i idx =
            _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(w), _mm256_slli_epi32(lane, 1)), _mm256_set1_epi32(3));
        if (kBits == 3) {
            const int sb = qs[kGroup / 4 + c];
            const __m256i hi = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(sb), lane), _mm256_set1_epi32(1));
            idx = _mm256_or_si256(idx, _mm256_slli_epi32(hi, 2));
        }
        return idx;
    }
    // Centroid values of 8 indices: one table register (2/3-bit) or two and a blend on bit 3 (4-bit).
    static __m256 lookup(__m256i idx, __m256 t0, __m256 t1) {
        const __m256 a = _mm256_permutevar8x32_ps(t0, idx);
        if (kBits < 4) return a;
        const __m256 b = _mm256_permutevar8x32_ps(t1, idx);
        return _mm256_blendv_ps(a, b, _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28)));
    }
    static void tables(__m256* t0, __m256* t1) {
        alignas(32) float t[16] = {};
        const TurboFormat& f = *turbo_format(T);
        memcpy(t, f.values, sizeof(float) * (1u << kBits));
        *t0 = _mm256_load_ps(t);
        *t1 = _mm256_load_ps(t + 8);
    }
};

// TCQ (spec §5 decode): state_t is the 6+k bits at stream bit k·t, looked up in the 2^(6+k)-entry
// codebook and scaled by the norm. note: sixteen steps span 16k + 6 <= 54 bits starting on a byte
// boundary, so one 64-bit load serves 16 windows, cut out by constant shifts in general registers;
// the codebook lookups are plain loads (AVX2 gathers were 5-8x slower than the whole f16 attention).
// The load is moved back inside the block (qs and the pad byte) where it would read past it.
template <int kBits>
void decode_tcq(const uint8_t* head, float* out, int n) {
    const float* cb = kBits == 3 ? kTcqCodebook3 : kTcqCodebook2;
    constexpr int kBytes = kBits == 3 ? sizeof(BlockTurbo3Tcq) : sizeof(BlockTurbo2Tcq);
    constexpr int kAvail = kBytes - 2;  // stream bytes and the pad byte
    constexpr uint64_t kMask = (1u << (6 + kBits)) - 1;
    for (int b = 0; b < n / kTcqGroup; b++) {
        const uint8_t* blk = head + (size_t)b * kBytes;
        float* o = out + b * kTcqGroup;
        for (int m = 0; m < kTcqGroup / 16; m++) {
            int byte = kBits * 16 * m / 8, shift = 0;
            if (byte + 8 > kAvail) shift = 8 * (byte + 8 - kAvail), byte = kAvail - 8;
            uint64_t w;
            memcpy(&w, blk + 2 + byte, 8);
            w >>= shift;
#pragma GCC unroll 16
            for (int j = 0; j < 16; j++) o[16 * m + j] = cb[(w >> (kBits * j)) & kMask];  // constant shifts
        }
        const __m256 norm = _mm256_set1_ps(half_at(blk));
        for (int c = 0; c < kTcqGroup; c += 8) _mm256_storeu_ps(o + c, _mm256_mul_ps(norm, _mm256_loadu_ps(o + c)));
    }
}

// ---- loaders: 8 values of a stored head from element e (a multiple of 8); rem (< 8: a tail) lanes ---
// A decoder, the fused tile kernels and the f32 tile kernels all go through one loader per type, so
// they see the same bits (kernels_impl.h).

struct LoadF32 {
    __m256 load(const uint8_t* h, int e, int rem) const {
        const float* p = (const float*)h + e;
        return rem >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, tail_mask(rem));
    }
};

struct LoadF16 {
    __m256 load(const uint8_t* h, int e, int rem) const {
        return rem >= 8 ? load_f16x8(h + 2 * e) : load_f16_tail(h + 2 * e, rem);
    }
};

struct LoadBF16 {
    __m256 load(const uint8_t* h, int e, int rem) const {
        if (rem >= 8) return load_bf16x8(h + 2 * e);
        alignas(16) uint8_t b[16] = {};
        memcpy(b, h + 2 * e, (size_t)rem * 2);
        return load_bf16x8(b);
    }
};

struct LoadQ8_0 {  // d · q; heads are whole 32-value blocks
    __m256 load(const uint8_t* h, int e, int) const {
        const uint8_t* blk = h + (size_t)(e / 32) * 34;
        return _mm256_mul_ps(_mm256_set1_ps(half_at(blk)),
                             bytes_to_ps(_mm_loadl_epi64((const __m128i*)(blk + 2 + e % 32))));
    }
};

template <GgmlType T, int kBits, int kGroup>
struct LoadTurbo {
    using U = UnpackTurbo<T, kBits, kGroup>;
    __m256 t0, t1;
    LoadTurbo() { U::tables(&t0, &t1); }
    __m256 load(const uint8_t* h, int e, int) const {
        const uint8_t* blk = h + (size_t)(e / kGroup) * U::kBytes;
        return _mm256_mul_ps(_mm256_set1_ps(half_at(blk)), U::lookup(U::indices(blk, e % kGroup / 8), t0, t1));
    }
};

template <class L>
void decode_with(const uint8_t* head, float* out, int n) {
    const L ld;
    for (int e = 0; e < n; e += 8) {
        if (n - e >= 8) _mm256_storeu_ps(out + e, ld.load(head, e, 8));
        else _mm256_maskstore_ps(out + e, tail_mask(n - e), ld.load(head, e, n - e));
    }
}

// ---- tile kernels -----------------------------------------------------------------------------------

// The lane sums of 8 per-cell accumulators v[0..7], as one vector in cell order. Every cell's lanes are
// added in the same tree (j + j+4, then + 2, + 1) whatever its place among the 8, so a score depends
// only on its own cell.
inline __m256 reduce8(const __m256* v) {
    __m256 w[4], x[2];
    for (int k = 0; k < 4; k++)  // [a.lo + a.hi | b.lo + b.hi]: cells 2k, 2k+1, 4 lanes each
        w[k] = _mm256_add_ps(_mm256_permute2f128_ps(v[2 * k], v[2 * k + 1], 0x20),
                             _mm256_permute2f128_ps(v[2 * k], v[2 * k + 1], 0x31));
    for (int k = 0; k < 2; k++)  // half h: cells 4k+h, 4k+2+h, 2 lanes each
        x[k] = _mm256_add_ps(_mm256_shuffle_ps(w[2 * k], w[2 * k + 1], 0x44),
                             _mm256_shuffle_ps(w[2 * k], w[2 * k + 1], 0xEE));
    // lane 4h + j holds cell 2j + h
    const __m256 z = _mm256_add_ps(_mm256_shuffle_ps(x[0], x[1], 0x88), _mm256_shuffle_ps(x[0], x[1], 0xDD));
    return _mm256_permutevar8x32_ps(z, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// NH query heads (q: NH x dk) against nt cells, 8 cells at a time: per cell one accumulator per head
// (fma over dk in element order, each K chunk loaded once for all heads), then reduce8.
// DK > 0: the head width is a compile-time constant (64, 128, 256), so the loop over it unrolls and the
// NH accumulators stay in registers, as kv_avx512.cpp explains; same operations in the same order.
template <class L, int NH, int DK = 0>
void score_heads(const L& ld, const float* q, int dk_rt, const uint8_t* const* heads, int nt, float* s) {
    const int dk = DK > 0 ? DK : dk_rt;
    for (int c0 = 0; c0 < nt; c0 += 8) {
        const int ng = nt - c0 < 8 ? nt - c0 : 8;
        __m256 part[NH][8];
        for (int c = 0; c < 8; c++) {
            __m256 acc[NH];
            for (int i = 0; i < NH; i++) acc[i] = _mm256_setzero_ps();
            if (c >= ng) {
                for (int i = 0; i < NH; i++) part[i][c] = acc[i];
                continue;
            }
#pragma GCC unroll 32
            for (int e = 0; e < dk; e += 8) {
                const int rem = dk - e;
                const __m256 k = ld.load(heads[c0 + c], e, rem);
                for (int i = 0; i < NH; i++) {
                    const float* qi = q + i * dk + e;
                    const __m256 qv = rem >= 8 ? _mm256_loadu_ps(qi) : _mm256_maskload_ps(qi, tail_mask(rem));
                    acc[i] = _mm256_fmadd_ps(qv, k, acc[i]);
                }
            }
            for (int i = 0; i < NH; i++) part[i][c] = acc[i];
        }
        for (int i = 0; i < NH; i++) {
            float* si = s + i * kAttnTile + c0;
            const __m256 r = reduce8(part[i]);
            if (ng == 8) _mm256_storeu_ps(si, r);
            else _mm256_maskstore_ps(si, tail_mask(ng), r);
        }
    }
}

template <class L>
void score_tile(const float* q, int nh, int dk, const uint8_t* const* heads, int nt, float* s) {
    const L ld;
    for (int i0 = 0; i0 < nh; i0 += 4)  // at most 4 heads per pass: accumulators stay in registers
        with_tile_shape(nh - i0, dk, [&]<int NH, int DK>() {
            score_heads<L, NH, DK>(ld, q + (size_t)i0 * dk, dk, heads, nt, s + i0 * kAttnTile);
        });
}

// acc_i[e0 .. e0 + 8 NV) of NH heads held in registers over the tile's cells, first scaled by corr[i]
// (rem: valid values from e0); each V chunk is loaded once per cell for all heads.
// kFull: whole vectors, plain loads and stores (vmaskmovps stores are slow and forward to no load).
template <class L, int NH, int NV, bool kFull>
void accum_chunk(const L& ld, float* acc, int dv, int e0, const float* corr, const float* p,
                 const uint8_t* const* heads, int nt) {
    // note: the unroll pragmas keep a[][] in registers (without them GCC kept them in memory)
    const int rem = dv - e0;
    const __m256i m = tail_mask(rem < 8 ? rem : 8);
    __m256 a[NH][NV];
#pragma GCC unroll 4
    for (int i = 0; i < NH; i++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            float* ai = acc + (size_t)i * dv + e0 + 8 * v;
            a[i][v] = _mm256_mul_ps(kFull ? _mm256_loadu_ps(ai) : _mm256_maskload_ps(ai, m), _mm256_set1_ps(corr[i]));
        }
    for (int c = 0; c < nt; c++) {
        __m256 x[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) x[v] = ld.load(heads[c], e0 + 8 * v, rem - 8 * v);
#pragma GCC unroll 4
        for (int i = 0; i < NH; i++) {
            const __m256 w = _mm256_set1_ps(p[i * kAttnTile + c]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) a[i][v] = _mm256_fmadd_ps(w, x[v], a[i][v]);
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < NH; i++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            float* ai = acc + (size_t)i * dv + e0 + 8 * v;
            if (kFull) _mm256_storeu_ps(ai, a[i][v]);
            else _mm256_maskstore_ps(ai, m, a[i][v]);
        }
}

template <class L, int NH>
void accum_heads(const L& ld, float* acc, int dv, const float* corr, const float* p, const uint8_t* const* heads,
                 int nt) {
    int e0 = 0;
    for (; e0 + 16 <= dv; e0 += 16) accum_chunk<L, NH, 2, true>(ld, acc, dv, e0, corr, p, heads, nt);
    for (; e0 + 8 <= dv; e0 += 8) accum_chunk<L, NH, 1, true>(ld, acc, dv, e0, corr, p, heads, nt);
    if (e0 < dv) accum_chunk<L, NH, 1, false>(ld, acc, dv, e0, corr, p, heads, nt);
}

template <class L>
void accum_tile(float* acc, int nh, int dv, const float* corr, const float* p, const uint8_t* const* heads, int nt) {
    const L ld;
    for (int i0 = 0; i0 < nh; i0 += 4)  // the V width is a loop bound here (accum_heads), not a shape
        with_tile_shape(nh - i0, 0, [&]<int NH, int>() {
            accum_heads<L, NH>(ld, acc + (size_t)i0 * dv, dv, corr + i0, p + i0 * kAttnTile, heads, nt);
        });
}

template <class U>
KvOps blocks() {
    return {decode_blocks<U>, 0, true};
}
template <class L>
KvOps fused(int rot_group) {
    return {decode_with<L>, rot_group, true, score_tile<L>, accum_tile<L>};
}
template <GgmlType T, int kBits, int kGroup>
KvOps turbo() {
    return fused<LoadTurbo<T, kBits, kGroup>>(kGroup);
}

}  // namespace

KvOps kv_ops(GgmlType t) {
    switch (t) {
        case GgmlType::F16: return fused<LoadF16>(0);
        case GgmlType::BF16: return fused<LoadBF16>(0);
        case GgmlType::Q8_0: return fused<LoadQ8_0>(0);
        case GgmlType::Q4_0: return blocks<UnpackLegacy<false, false>>();
        case GgmlType::Q4_1: return blocks<UnpackLegacy<true, false>>();
        case GgmlType::Q5_0: return blocks<UnpackLegacy<false, true>>();
        case GgmlType::Q5_1: return blocks<UnpackLegacy<true, true>>();
        case GgmlType::TURBO2: return turbo<GgmlType::TURBO2, 2, 128>();
        case GgmlType::TURBO3: return turbo<GgmlType::TURBO3, 3, 128>();
        case GgmlType::TURBO4: return turbo<GgmlType::TURBO4, 4, 128>();
        case GgmlType::TURBO2_64: return turbo<GgmlType::TURBO2_64, 2, 64>();
        case GgmlType::TURBO3_64: return turbo<GgmlType::TURBO3_64, 3, 64>();
        case GgmlType::TURBO4_64: return turbo<GgmlType::TURBO4_64, 4, 64>();
        case GgmlType::TURBO2_TCQ: return {decode_tcq<2>, kTcqGroup, true};
        case GgmlType::TURBO3_TCQ: return {decode_tcq<3>, kTcqGroup, true};
        default: return {};
    }
}

AttnMath attn_math() { return {score_tile<LoadF32>, accum_tile<LoadF32>, softmax_heads}; }

}  // namespace bee::avx2_ops
