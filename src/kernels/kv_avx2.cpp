// kernels/kv_avx2: AVX2+FMA+F16C KV head decoders per storage type — halves, legacy 32-blocks
// (unpacked in registers), the scalar TurboQuant types (indices turned into centroids by one
// in-register table lookup, _mm256_permutevar8x32_ps), TCQ (trellis states, then a gather) — and the
// float dot / axpy of the attention driver.
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

float dot_f32(const float* q, const float* k, int n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(k + i), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), _mm256_loadu_ps(k + i + 8), a1);
    }
    for (; i < n; i += 8) {
        const __m256i m = tail_mask(n - i);
        a0 = _mm256_fmadd_ps(_mm256_maskload_ps(q + i, m), _mm256_maskload_ps(k + i, m), a0);
    }
    return hsum(_mm256_add_ps(a0, a1));
}

void axpy_f32(float* acc, float p, const float* v, int n) {
    const __m256 vp = _mm256_set1_ps(p);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(vp, _mm256_loadu_ps(v + i), _mm256_loadu_ps(acc + i)));
    }
    if (i < n) {
        const __m256i m = tail_mask(n - i);
        _mm256_maskstore_ps(acc + i, m, _mm256_fmadd_ps(vp, _mm256_maskload_ps(v + i, m), _mm256_maskload_ps(acc + i, m)));
    }
}

// f16: any n (no blocks).
void decode_f16(const uint8_t* head, float* out, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, load_f16x8(head + 2 * i));
    if (i < n) _mm256_maskstore_ps(out + i, tail_mask(n - i), load_f16_tail(head + 2 * i, n - i));
}

// bf16: widened by a 16-bit shift; any n (bf16 has no blocks).
inline __m256 load_bf16x8(const uint8_t* p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)p)), 16));
}

void decode_bf16(const uint8_t* head, float* out, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, load_bf16x8(head + 2 * i));
    for (; i < n; i++) {
        bf16_t h;
        memcpy(&h, head + 2 * i, 2);
        out[i] = bf16_to_fp32(h);
    }
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

// Q8_0: d · q.
struct UnpackQ8_0 {
    static constexpr int kValues = 32, kBytes = 34;
    static void unpack(const uint8_t* p, __m256* out) {
        const __m256 d = _mm256_set1_ps(half_at(p));
        for (int k = 0; k < 4; k++)
            out[k] = _mm256_mul_ps(d, bytes_to_ps(_mm_loadl_epi64((const __m128i*)(p + 2 + 8 * k))));
    }
};

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
        __m256i idx = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(w), _mm256_slli_epi32(lane, 1)),
                                       _mm256_set1_epi32(3));
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

template <class U>
void decode_turbo(const uint8_t* head, float* out, int n) {
    __m256 t0, t1;
    U::tables(&t0, &t1);
    for (int b = 0; b < n / U::kValues; b++) {
        const uint8_t* blk = head + (size_t)b * U::kBytes;
        const __m256 norm = _mm256_set1_ps(half_at(blk));
        float* o = out + b * U::kValues;
        for (int c = 0; c < U::kValues / 8; c++)
            _mm256_storeu_ps(o + 8 * c, _mm256_mul_ps(norm, U::lookup(U::indices(blk, c), t0, t1)));
    }
}

// TCQ (spec §5 decode): state_t is the 6+k bits at stream bit k·t. Eight windows at a time: gather
// the 32-bit words at byte k·t/8 (from a copy of the block padded so the last window stays inside),
// shift by k·t mod 8, mask; then gather codebook[state] and scale by the norm.
template <int kBits>
void decode_tcq(const uint8_t* head, float* out, int n) {
    const float* cb = kBits == 3 ? kTcqCodebook3 : kTcqCodebook2;
    constexpr size_t kBytes = kBits == 3 ? sizeof(BlockTurbo3Tcq) : sizeof(BlockTurbo2Tcq);
    const __m256i bit0 = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(kBits));
    const __m256i mask = _mm256_set1_epi32((1 << (6 + kBits)) - 1), seven = _mm256_set1_epi32(7);
    alignas(32) uint8_t qs[kBytes + 4] = {};
    for (int b = 0; b < n / kTcqGroup; b++) {
        const uint8_t* blk = head + (size_t)b * kBytes;
        memcpy(qs, blk + 2, kBytes - 2);
        const __m256 norm = _mm256_set1_ps(half_at(blk));
        for (int t = 0; t < kTcqGroup; t += 8) {
            const __m256i bp = _mm256_add_epi32(bit0, _mm256_set1_epi32(kBits * t));
            const __m256i w = _mm256_i32gather_epi32((const int*)qs, _mm256_srli_epi32(bp, 3), 1);
            const __m256i st = _mm256_and_si256(_mm256_srlv_epi32(w, _mm256_and_si256(bp, seven)), mask);
            _mm256_storeu_ps(out + b * kTcqGroup + t, _mm256_mul_ps(norm, _mm256_i32gather_ps(cb, st, 4)));
        }
    }
}

template <class U>
KvOps blocks() { return {decode_blocks<U>, 0, true}; }
template <GgmlType T, int kBits, int kGroup>
KvOps turbo() { return {decode_turbo<UnpackTurbo<T, kBits, kGroup>>, kGroup, true}; }

}  // namespace

KvOps kv_ops(GgmlType t) {
    switch (t) {
        case GgmlType::F16: return {decode_f16, 0, true};
        case GgmlType::BF16: return {decode_bf16, 0, true};
        case GgmlType::Q8_0: return blocks<UnpackQ8_0>();
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

AttnMath attn_math() { return {dot_f32, axpy_f32}; }

}  // namespace bee::avx2_ops
