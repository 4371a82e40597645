// kernels/kv_avx512: AVX-512 pieces of attention where 16 lanes help: the float dot / axpy, f16 heads,
// and the scalar TurboQuant types, whose whole centroid table (up to 16 values) fits one register, so
// any index width is one _mm512_permutexvar_ps. Other types use kv_avx2.cpp's decoders.
// note: GCC 12's AVX-512 headers build intrinsics on _mm512_undefined_*(), which -Wuninitialized
// flags inside the headers themselves (GCC bug 105593); the warning says nothing about this file.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "base/fp16.h"
#include "kernels/kernels_impl.h"
#include "quant/turbo.h"

namespace bee::avx512_ops {

namespace {

inline __mmask16 tail16(int rem) { return (__mmask16)((1u << rem) - 1); }

float dot_f32(const float* a, const float* b, int n) {
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), a0);
        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), a1);
    }
    for (; i < n; i += 16) {
        const __mmask16 m = tail16(n - i < 16 ? n - i : 16);
        a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), a0);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}

void axpy_f32(float* acc, float p, const float* v, int n) {
    const __m512 vp = _mm512_set1_ps(p);
    int i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(acc + i, _mm512_fmadd_ps(vp, _mm512_loadu_ps(v + i), _mm512_loadu_ps(acc + i)));
    if (i < n) {
        const __mmask16 m = tail16(n - i);
        _mm512_mask_storeu_ps(acc + i, m, _mm512_fmadd_ps(vp, _mm512_maskz_loadu_ps(m, v + i), _mm512_maskz_loadu_ps(m, acc + i)));
    }
}

void decode_f16(const uint8_t* head, float* out, int n) {
    for (int i = 0; i < n; i += 16) {
        const __mmask16 m = tail16(n - i < 16 ? n - i : 16);
        _mm512_mask_storeu_ps(out + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, head + 2 * i)));
    }
}

inline float half_at(const uint8_t* p) {  // F16C: one instruction instead of the portable bit trick
    fp16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

// Indices of elements 16c..16c+15 of a scalar turbo block (packing of quant/blocks.h).
template <int kBits, int kGroup>
inline __m512i turbo_indices(const uint8_t* blk, int c) {
    const uint8_t* qs = blk + 2;
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    if (kBits == 4) {
        uint32_t w[2];
        memcpy(w, qs + 8 * c, 8);
        const __m512i words = _mm512_inserti64x4(_mm512_set1_epi32((int)w[0]), _mm256_set1_epi32((int)w[1]), 1);
        const __m512i sh = _mm512_slli_epi32(_mm512_and_si512(lane, _mm512_set1_epi32(7)), 2);
        return _mm512_and_si512(_mm512_srlv_epi32(words, sh), _mm512_set1_epi32(15));
    }
    uint32_t w;
    memcpy(&w, qs + 4 * c, 4);
    __m512i idx = _mm512_and_si512(_mm512_srlv_epi32(_mm512_set1_epi32((int)w), _mm512_slli_epi32(lane, 1)),
                                   _mm512_set1_epi32(3));
    if (kBits == 3) {
        uint16_t sb;
        memcpy(&sb, qs + kGroup / 4 + 2 * c, 2);
        const __m512i hi = _mm512_and_si512(_mm512_srlv_epi32(_mm512_set1_epi32(sb), lane), _mm512_set1_epi32(1));
        idx = _mm512_or_si512(idx, _mm512_slli_epi32(hi, 2));
    }
    return idx;
}

template <GgmlType T>
__m512 turbo_table() {
    alignas(64) float t[16] = {};
    const TurboFormat& f = *turbo_format(T);
    memcpy(t, f.values, sizeof(float) * (1u << f.bits));
    return _mm512_load_ps(t);
}

// Rotated-domain values: centroid · block norm.
template <GgmlType T, int kBits, int kGroup>
void decode_turbo(const uint8_t* head, float* out, int n) {
    constexpr size_t kBytes = 2 + kGroup * kBits / 8;
    const __m512 tbl = turbo_table<T>();
    for (int b = 0; b < n / kGroup; b++) {
        const uint8_t* blk = head + (size_t)b * kBytes;
        const __m512 norm = _mm512_set1_ps(half_at(blk));
        for (int c = 0; c < kGroup / 16; c++)
            _mm512_storeu_ps(out + b * kGroup + 16 * c,
                             _mm512_mul_ps(norm, _mm512_permutexvar_ps(turbo_indices<kBits, kGroup>(blk, c), tbl)));
    }
}

template <GgmlType T, int kBits, int kGroup>
KvOps turbo() { return {decode_turbo<T, kBits, kGroup>, kGroup, true}; }

}  // namespace

KvOps kv_ops(GgmlType t) {
    switch (t) {
        case GgmlType::F16: return {decode_f16, 0, true};
        case GgmlType::TURBO2: return turbo<GgmlType::TURBO2, 2, 128>();
        case GgmlType::TURBO3: return turbo<GgmlType::TURBO3, 3, 128>();
        case GgmlType::TURBO4: return turbo<GgmlType::TURBO4, 4, 128>();
        case GgmlType::TURBO2_64: return turbo<GgmlType::TURBO2_64, 2, 64>();
        case GgmlType::TURBO3_64: return turbo<GgmlType::TURBO3_64, 3, 64>();
        case GgmlType::TURBO4_64: return turbo<GgmlType::TURBO4_64, 4, 64>();
        default: return {};
    }
}

AttnMath attn_math() { return {dot_f32, axpy_f32}; }

}  // namespace bee::avx512_ops
