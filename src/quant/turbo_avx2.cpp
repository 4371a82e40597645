// quant/turbo_avx2: the TurboQuant rotation (quant/turbo.cpp rotate()) with the group held in AVX2
// registers. Bit-identical to the scalar rotation: every butterfly is the same a + b / a - b and the
// final scale the same x · (sign · 1/√g), only several of them at once.
#include <immintrin.h>

#include <cmath>

namespace bee {

namespace {

// Butterflies of span h < 8 inside each vector: lanes whose bit h is clear get a + b, the others a - b
// (b is the partner lane, brought in by `swap`; a + b is computed as v + swapped, which is the same
// float sum).
template <int Mask>
inline __m256 inner_stage(__m256 v, __m256 swapped) {
    return _mm256_blend_ps(_mm256_add_ps(v, swapped), _mm256_sub_ps(swapped, v), Mask);
}

}  // namespace

// x (g = 64 or 128 values) <- second · H · (first · x) / √g, H the natural-order Walsh-Hadamard matrix.
void turbo_rotate_avx2(float* x, int g, const float* first, const float* second) {
    const int nv = g / 8;
    __m256 v[16];
    for (int i = 0; i < nv; i++) {
        v[i] = _mm256_mul_ps(_mm256_loadu_ps(x + 8 * i), _mm256_loadu_ps(first + 8 * i));
        v[i] = inner_stage<0xAA>(v[i], _mm256_permute_ps(v[i], 0xB1));             // h = 1
        v[i] = inner_stage<0xCC>(v[i], _mm256_permute_ps(v[i], 0x4E));             // h = 2
        v[i] = inner_stage<0xF0>(v[i], _mm256_permute2f128_ps(v[i], v[i], 0x01));  // h = 4
    }
    for (int hv = 1; hv < nv; hv *= 2)  // h = 8 hv: whole vectors
        for (int i = 0; i < nv; i += 2 * hv)
            for (int j = i; j < i + hv; j++) {
                const __m256 a = v[j], b = v[j + hv];
                v[j] = _mm256_add_ps(a, b);
                v[j + hv] = _mm256_sub_ps(a, b);
            }
    const __m256 inv_sqrt_g = _mm256_set1_ps(1.0f / sqrtf((float)g));
    for (int i = 0; i < nv; i++)
        _mm256_storeu_ps(x + 8 * i, _mm256_mul_ps(v[i], _mm256_mul_ps(_mm256_loadu_ps(second + 8 * i), inv_sqrt_g)));
}

}  // namespace bee
