// kernels/x86/avx2_util: small AVX2 helpers shared by the *_avx2.cpp kernels (include only from those).
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "base/fp16.h"

namespace bee::avx2 {

// Half -> float with F16C (exact, like fp16_to_fp32).
inline float h2f(fp16_t h) { return _cvtsh_ss(h); }

// Sum of the 8 lanes, in the fixed order ((0+4)+(2+6)) + ((1+5)+(3+7)).
inline float hsum_f32x8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// Largest lane (no NaN lanes), in the same fixed pairing as hsum_f32x8.
inline float hmax_f32x8(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

inline int32_t hsum_i32x8(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

// 16 bytes of nibbles -> 32 bytes in [0, 15]: the low nibbles in bytes 0-15, the high in 16-31
// (the element order of the legacy 32-element blocks).
inline __m256i unpack_nibbles_32(const uint8_t* p) {
    const __m128i b = _mm_loadu_si128((const __m128i*)p);
    const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(b), _mm_srli_epi16(b, 4), 1);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

// 32 bits (little endian at p) -> 32 bytes, byte j = 0xFF if bit j is set else 0x00.
inline __m256i bits_to_bytes_32(const uint8_t* p) {
    uint32_t bits;
    memcpy(&bits, p, 4);
    // byte j takes source byte j / 8, then tests bit j % 8 of it
    const __m256i spread =
        _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101,
                                                                             0x0202020202020202, 0x0303030303030303));
    const __m256i bit = _mm256_set1_epi64x((int64_t)0x8040201008040201ull);
    return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
}

// Sums of 4 adjacent products of unsigned u (bytes 0..255, u*y pairs must fit int16) and signed y
// -> 8 int32.
inline __m256i dot_u8_i8(__m256i u, __m256i y) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, y), _mm256_set1_epi16(1));
}

// Sums of 4 adjacent products of signed x and signed y (neither -128) -> 8 int32.
inline __m256i dot_i8_i8(__m256i x, __m256i y) { return dot_u8_i8(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x)); }

}  // namespace bee::avx2
