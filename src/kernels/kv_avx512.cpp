// kernels/kv_avx512: AVX-512 attention tile kernels (scores of a tile of cells for the query heads of a
// GQA group, and the weighted V accumulation), on f32 heads and fused with the stored-byte loaders of
// f16, bf16, q8_0 and the scalar TurboQuant types (converted in registers, no per-cell buffer). Other
// types are decoded by kv_avx2.cpp's decoders and go through the f32 kernels.
// note: GCC 12's AVX-512 headers build intrinsics on _mm512_undefined_*(), which -Wuninitialized
// flags inside the headers themselves (GCC bug 105593); the warning says nothing about this file.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "base/fp16.h"
#include "kernels/kernels_impl.h"
#include "quant/turbo.h"

namespace bee::avx512_ops {

namespace {

// Lanes [0, rem) of 16 (rem may be outside 0..16).
inline __mmask16 tail16(int rem) {
    return rem >= 16 ? (__mmask16)0xFFFF : rem <= 0 ? (__mmask16)0 : (__mmask16)((1u << rem) - 1);
}

inline float half_at(const uint8_t* p) {  // F16C: one instruction instead of the portable bit trick
    fp16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

// ---- loaders: 16 values of a stored head from element e (a multiple of 16), lanes outside m zero ----
// kBlock values share one scale, computed once per block by scale(h, e0) and passed to load. A
// decoder, the fused tile kernels and the f32 tile kernels all go through one loader per type, so they
// see the same bits (kernels_impl.h).

struct LoadF32 {
    static constexpr int kBlock = 16;
    __m512 scale(const uint8_t*, int) const { return _mm512_setzero_ps(); }
    __m512 load(const uint8_t* h, int e, __mmask16 m, __m512) const {
        return _mm512_maskz_loadu_ps(m, (const float*)h + e);
    }
};

struct LoadF16 {
    static constexpr int kBlock = 16;
    __m512 scale(const uint8_t*, int) const { return _mm512_setzero_ps(); }
    __m512 load(const uint8_t* h, int e, __mmask16 m, __m512) const {
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, h + 2 * e));
    }
};

struct LoadBF16 {  // widened by a 16-bit shift
    static constexpr int kBlock = 16;
    __m512 scale(const uint8_t*, int) const { return _mm512_setzero_ps(); }
    __m512 load(const uint8_t* h, int e, __mmask16 m, __m512) const {
        const __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, h + 2 * e));
        return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    }
};

struct LoadQ8_0 {  // d · q; heads are whole 32-value blocks
    static constexpr int kBlock = 32;
    __m512 scale(const uint8_t* h, int e) const { return _mm512_set1_ps(half_at(h + (size_t)(e / 32) * 34)); }
    __m512 load(const uint8_t* h, int e, __mmask16, __m512 d) const {
        const uint8_t* qs = h + (size_t)(e / 32) * 34 + 2 + e % 32;
        return _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i*)qs))));
    }
};

// Rotated-domain values of a scalar turbo block (packing of quant/blocks.h): centroid · block norm.
// note: _mm512_permutexvar_ps reads only the low 4 bits of each index, so indices are not masked:
// the centroid tables repeat every 2^bits entries (2-bit: 4 copies), the bits above a 2-bit field
// (the next value's) fall on copies. 3-bit: the low 2 bits pick from the table of centroids 0-3
// or, where the value's high bit (one mask bit) is set, 4-7. 4-bit: the nibble is the index.
template <GgmlType T, int kBits, int kGroup>
struct LoadTurbo {
    static constexpr int kBlock = kGroup;
    static constexpr size_t kBytes = 2 + kGroup * kBits / 8;
    __m512 lo, hi;  // 16-entry tables: 2-bit: c[j & 3]; 3-bit: c[j & 3], c[4 + (j & 3)]; 4-bit: c[j]
    LoadTurbo() {
        const float* c = turbo_format(T)->values;
        alignas(64) float t[2][16];
        for (int j = 0; j < 16; j++) {
            t[0][j] = kBits == 4 ? c[j] : c[j & 3];
            t[1][j] = kBits == 3 ? c[4 + (j & 3)] : t[0][j];
        }
        lo = _mm512_load_ps(t[0]);
        hi = _mm512_load_ps(t[1]);
    }
    __m512 scale(const uint8_t* h, int e) const { return _mm512_set1_ps(half_at(h + (size_t)(e / kGroup) * kBytes)); }
    __m512 load(const uint8_t* h, int e, __mmask16, __m512 norm) const {
        const uint8_t* qs = h + (size_t)(e / kGroup) * kBytes + 2;
        const int c = e % kGroup / 16;  // 16-value chunk of the block
        const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        __m512i idx;
        if (kBits == 4) {  // 8 bytes, element j in nibble j: each byte twice, the odd copy shifted by 4
            const __m128i b = _mm_loadl_epi64((const __m128i*)(qs + 8 * c));
            idx = _mm512_srlv_epi32(_mm512_cvtepu8_epi32(_mm_unpacklo_epi8(b, b)),
                                    _mm512_slli_epi32(_mm512_and_si512(lane, _mm512_set1_epi32(1)), 2));
        } else {
            uint32_t w;
            memcpy(&w, qs + 4 * c, 4);
            idx = _mm512_srlv_epi32(_mm512_set1_epi32((int)w), _mm512_slli_epi32(lane, 1));
        }
        __m512 v = _mm512_permutexvar_ps(idx, lo);
        if (kBits == 3) {
            uint16_t sb;
            memcpy(&sb, qs + kGroup / 4 + 2 * c, 2);
            v = _mm512_mask_permutexvar_ps(v, (__mmask16)sb, idx, hi);
        }
        return _mm512_mul_ps(norm, v);
    }
};

template <class L>
void decode_with(const uint8_t* head, float* out, int n) {
    const L ld;
    for (int e0 = 0; e0 < n; e0 += L::kBlock) {
        const __m512 sc = ld.scale(head, e0);
        for (int e = e0; e < e0 + L::kBlock && e < n; e += 16) {
            const __mmask16 m = tail16(n - e);
            _mm512_mask_storeu_ps(out + e, m, ld.load(head, e, m, sc));
        }
    }
}

// ---- tile kernels -----------------------------------------------------------------------------------

// The lane sums of 16 per-cell accumulators v[0..15], as one vector in cell order. Every cell's 16 lanes
// are added in the same tree (j + j+8, then + 4, + 2, + 1) whatever its place among the 16, so a score
// depends only on its own cell; the transposition costs about 3 shuffles + 1 add per cell instead of a
// full horizontal sum each.
inline __m512 reduce16(const __m512* v) {
    __m512 w[8], x[4], y[2];
    for (int k = 0; k < 8; k++)  // [a.lo + a.hi | b.lo + b.hi]: cells 2k, 2k+1, 8 lanes each
        w[k] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * k], v[2 * k + 1], 0x44),
                             _mm512_shuffle_f32x4(v[2 * k], v[2 * k + 1], 0xEE));
    for (int k = 0; k < 4; k++)  // cells 4k..4k+3, 4 lanes each, one per 128-bit quarter
        x[k] = _mm512_add_ps(_mm512_shuffle_f32x4(w[2 * k], w[2 * k + 1], 0x88),
                             _mm512_shuffle_f32x4(w[2 * k], w[2 * k + 1], 0xDD));
    for (int k = 0; k < 2; k++)  // quarter q: cells 8k+q, 8k+4+q, 2 lanes each
        y[k] = _mm512_add_ps(_mm512_shuffle_ps(x[2 * k], x[2 * k + 1], 0x44),
                             _mm512_shuffle_ps(x[2 * k], x[2 * k + 1], 0xEE));
    // lane 4q + j holds cell 4j + q
    const __m512 z = _mm512_add_ps(_mm512_shuffle_ps(y[0], y[1], 0x88), _mm512_shuffle_ps(y[0], y[1], 0xDD));
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    return _mm512_permutexvar_ps(order, z);
}

// NH query heads (q: NH x dk) against nt cells, 16 cells at a time: per cell one accumulator per head
// (fma over dk in element order, each K chunk loaded once for all heads), then reduce16.
// DK > 0: the head width is a compile-time constant (64, 128, 256), so the loops over it unroll and
// the NH accumulators stay in registers (with a run-time width GCC kept them in memory, one store and
// reload per 16 values); the operations and their order are the same either way.
template <class L, int NH, int DK = 0>
void score_heads(const L& ld, const float* q, int dk_rt, const uint8_t* const* heads, int nt, float* s) {
    const int dk = DK > 0 ? DK : dk_rt;
    for (int c0 = 0; c0 < nt; c0 += 16) {
        const int ng = nt - c0 < 16 ? nt - c0 : 16;
        __m512 part[NH][16];
        for (int c = 0; c < 16; c++) {
            __m512 acc[NH];
            for (int i = 0; i < NH; i++) acc[i] = _mm512_setzero_ps();
            if (c >= ng) {
                for (int i = 0; i < NH; i++) part[i][c] = acc[i];
                continue;
            }
#pragma GCC unroll 16
            for (int e0 = 0; e0 < dk; e0 += L::kBlock) {
                const __m512 sc = ld.scale(heads[c0 + c], e0);
                for (int e = e0; e < e0 + L::kBlock && e < dk; e += 16) {
                    const __mmask16 m = tail16(dk - e);
                    const __m512 k = ld.load(heads[c0 + c], e, m, sc);
                    for (int i = 0; i < NH; i++)
                        acc[i] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + i * dk + e), k, acc[i]);
                }
            }
            for (int i = 0; i < NH; i++) part[i][c] = acc[i];
        }
        // all 16 lanes (cells past nt score 0): a plain store forwards to the softmax step's loads
        for (int i = 0; i < NH; i++) _mm512_storeu_ps(s + i * kAttnTile + c0, reduce16(part[i]));
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

// acc_i[e0 .. e0 + 16 NV) of NH heads held in registers over the tile's cells, first scaled by corr[i];
// each V chunk is loaded once per cell for all heads. kFull: whole vectors, plain loads and stores
// (a masked store forwards to no later load: the driver and the next tile read these accumulators).
template <class L, int NH, int NV, bool kFull>
void accum_chunk(const L& ld, float* acc, int dv, int e0, const float* corr, const float* p,
                 const uint8_t* const* heads, int nt) {
    // note: the unroll pragmas keep a[][] in registers (without them GCC kept the accumulators in memory)
    __mmask16 m[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) m[v] = kFull ? (__mmask16)0xFFFF : tail16(dv - e0 - 16 * v);
    __m512 a[NH][NV];
#pragma GCC unroll 4
    for (int i = 0; i < NH; i++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            const float* ai = acc + (size_t)i * dv + e0 + 16 * v;
            a[i][v] =
                _mm512_mul_ps(kFull ? _mm512_loadu_ps(ai) : _mm512_maskz_loadu_ps(m[v], ai), _mm512_set1_ps(corr[i]));
        }
    for (int c = 0; c < nt; c++) {
        __m512 x[NV];
        // one scale for the chunk when a block covers it (TurboQuant), else one per vector
        __m512 sc = ld.scale(heads[c], e0);
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            if (L::kBlock < 16 * NV && v > 0) sc = ld.scale(heads[c], e0 + 16 * v);
            x[v] = ld.load(heads[c], e0 + 16 * v, m[v], sc);
        }
#pragma GCC unroll 4
        for (int i = 0; i < NH; i++) {
            const __m512 w = _mm512_set1_ps(p[i * kAttnTile + c]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) a[i][v] = _mm512_fmadd_ps(w, x[v], a[i][v]);
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < NH; i++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            float* ai = acc + (size_t)i * dv + e0 + 16 * v;
            if (kFull) _mm512_storeu_ps(ai, a[i][v]);
            else _mm512_mask_storeu_ps(ai, m[v], a[i][v]);
        }
}

template <class L, int NH>
void accum_heads(const L& ld, float* acc, int dv, const float* corr, const float* p, const uint8_t* const* heads,
                 int nt) {
    int e0 = 0;
    for (; e0 + 64 <= dv; e0 += 64) accum_chunk<L, NH, 4, true>(ld, acc, dv, e0, corr, p, heads, nt);
    for (; e0 + 16 <= dv; e0 += 16) accum_chunk<L, NH, 1, true>(ld, acc, dv, e0, corr, p, heads, nt);
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

// ---- online softmax step ----------------------------------------------------------------------------

// exp(x) for x <= 0, -inf or NaN (softmax arguments x - max): n = round(x·log2 e), r = x - n·ln2 (two-part
// ln2), exp(r) by the degree-7 Taylor polynomial of simd_avx2.h's exp8 (|r| <= 0.347), times 2^n by
// vscalefps, which rounds the subnormal results and needs no exponent clamps or blends. x below -104
// gives 0 (exp(-104) is under half the smallest subnormal); NaN stays NaN (vmaxps returns its second
// operand when either is NaN).
inline __m512 exp16_nonpos(__m512 x) {
    x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);  // ln2 high part (exact n·hi)
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860682030941723e-06f), r);   // ln2 low part
    __m512 p = _mm512_set1_ps(1.0f / 5040);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

// One head of softmax_heads on two vectors of 16 cells: the tile's max by one reduction, the exponentials
// of a tile with at most 16 cells in one vector. The sum's order is fixed (lanes added pairwise, then
// _mm512_reduce_add_ps's tree), so a row's result depends only on its own cells.
// note: the heads stay separate chains (max, rescale, exponentials, sum) that the core overlaps; gathering
// the heads' maxima into one vector for a single vector exp of the rescales made one longer chain and
// was slower.
inline float softmax_step(float* s, int nt, float scale, float* m, float* l) {
    static_assert(kAttnTile == 32, "two vectors of 16 per tile");
    const __m512 vs = _mm512_set1_ps(scale), ninf = _mm512_set1_ps(-INFINITY);
    const __m512 x0 = _mm512_mask_mul_ps(ninf, tail16(nt), _mm512_loadu_ps(s), vs);  // lanes past nt: -inf
    const __m512 x1 = _mm512_mask_mul_ps(ninf, tail16(nt - 16), _mm512_loadu_ps(s + 16), vs);
    const float tmax = _mm512_reduce_max_ps(_mm512_max_ps(x0, x1));
    float corr = 1.0f;
    if (tmax > *m) {
        if (*m != -INFINITY) corr = expf(*m - tmax);
        *l *= corr;
        *m = tmax;
    }
    const __m512 vm = _mm512_set1_ps(*m);
    const __m512 p0 = exp16_nonpos(_mm512_sub_ps(x0, vm));  // exp(-inf) = 0: lanes past nt add nothing
    const __m512 p1 = nt > 16 ? exp16_nonpos(_mm512_sub_ps(x1, vm)) : _mm512_setzero_ps();
    _mm512_storeu_ps(s, p0);
    _mm512_storeu_ps(s + 16, p1);
    *l += _mm512_reduce_add_ps(_mm512_add_ps(p0, p1));
    return corr;
}

void softmax_heads(float* s, int nh, int nt, float scale, float* m, float* l, float* corr) {
    for (int i = 0; i < nh; i++) corr[i] = softmax_step(s + i * kAttnTile, nt, scale, m + i, l + i);
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
        case GgmlType::TURBO2: return turbo<GgmlType::TURBO2, 2, 128>();
        case GgmlType::TURBO3: return turbo<GgmlType::TURBO3, 3, 128>();
        case GgmlType::TURBO4: return turbo<GgmlType::TURBO4, 4, 128>();
        case GgmlType::TURBO2_64: return turbo<GgmlType::TURBO2_64, 2, 64>();
        case GgmlType::TURBO3_64: return turbo<GgmlType::TURBO3_64, 3, 64>();
        case GgmlType::TURBO4_64: return turbo<GgmlType::TURBO4_64, 4, 64>();
        default: return {};
    }
}

AttnMath attn_math() { return {score_tile<LoadF32>, accum_tile<LoadF32>, softmax_heads}; }

}  // namespace bee::avx512_ops
