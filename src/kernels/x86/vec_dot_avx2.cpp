// kernels/x86/vec_dot_avx2: AVX2 dot products of the float weight types and the legacy 32-element quants.
// Per block: exact int32 sum of quant products (maddubs/madd), converted once, scaled and accumulated
// with FMA into float lanes; lanes are summed at the end in a fixed order, so a result depends only on
// the inputs (not on alignment, threads or batch shape).
#include "kernels/x86/avx2_util.h"
#include "quant/blocks.h"

namespace bee::avx2 {

// ---- float weights · float activations --------------------------------------------------------------
// note: four independent accumulators hide the FMA latency; the tail (n % 8) is added in index order.

// 8 weights -> 8 floats, and one weight -> float for the tail (both exact).
static inline __m256 load_f32x8(const float* p) { return _mm256_loadu_ps(p); }
static inline float f32_to_f32(float x) { return x; }

// 8 halves -> 8 floats (exact).
static inline __m256 load_f16x8(const fp16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p)); }

// 8 bfloat16 -> 8 floats (exact: bf16 is the top half of a float).
static inline __m256 load_bf16x8(const bf16_t* p) {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

template <class T, __m256 (*Load8)(const T*), float (*ToF32)(T)>
static void vec_dot_float(int64_t n, const void* w, const void* a, float* out) {
    const T* x = (const T*)w;
    const float* y = (const float*)a;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    __m256 acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        acc0 = _mm256_fmadd_ps(Load8(x + i), _mm256_loadu_ps(y + i), acc0);
        acc1 = _mm256_fmadd_ps(Load8(x + i + 8), _mm256_loadu_ps(y + i + 8), acc1);
        acc2 = _mm256_fmadd_ps(Load8(x + i + 16), _mm256_loadu_ps(y + i + 16), acc2);
        acc3 = _mm256_fmadd_ps(Load8(x + i + 24), _mm256_loadu_ps(y + i + 24), acc3);
    }
    for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(Load8(x + i), _mm256_loadu_ps(y + i), acc0);
    float sum = hsum_f32x8(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
    for (; i < n; ++i) sum += ToF32(x[i]) * y[i];
    *out = sum;
}

void vec_dot_f32_f32(int64_t n, const void* w, const void* a, float* out) {
    vec_dot_float<float, load_f32x8, f32_to_f32>(n, w, a, out);
}

void vec_dot_f16_f32(int64_t n, const void* w, const void* a, float* out) {
    vec_dot_float<fp16_t, load_f16x8, fp16_to_fp32>(n, w, a, out);
}

void vec_dot_bf16_f32(int64_t n, const void* w, const void* a, float* out) {
    vec_dot_float<bf16_t, load_bf16x8, bf16_to_fp32>(n, w, a, out);
}

// ---- legacy quants · Q8_0 / Q8_1 ----------------------------------------------------------------------
// Each kernel is written as a per-block step returning the block's int32 lanes; the loops run two
// blocks per iteration into two accumulators (even / odd blocks) to overlap the FMA latency.

// Q4_0 weights as signed bytes q - 8 in element order.
static inline __m256i q4_0_bytes(const BlockQ4_0& b) {
    return _mm256_sub_epi8(unpack_nibbles_32(b.qs), _mm256_set1_epi8(8));
}

// Q5_0 weights as signed bytes q - 16: a clear 5th bit means nibble - 16, i.e. the nibble with 0xF0 set.
static inline __m256i q5_0_bytes(const BlockQ5_0& b) {
    const __m256i hi = _mm256_andnot_si256(bits_to_bytes_32(b.qh), _mm256_set1_epi8((char)0xF0));
    return _mm256_or_si256(unpack_nibbles_32(b.qs), hi);
}

// Q5_1 weights as unsigned bytes q in [0, 31].
static inline __m256i q5_1_bytes(const BlockQ5_1& b) {
    const __m256i hi = _mm256_and_si256(bits_to_bytes_32(b.qh), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(unpack_nibbles_32(b.qs), hi);
}

static inline __m256i load_q8(const int8_t* qs) { return _mm256_loadu_si256((const __m256i*)qs); }

// acc += (dw * da) * float(int lanes)
static inline __m256 fma_block(__m256 acc, fp16_t dw, fp16_t da, __m256i isum) {
    return _mm256_fmadd_ps(_mm256_set1_ps(h2f(dw) * h2f(da)), _mm256_cvtepi32_ps(isum), acc);
}

static inline __m256i q8_0_bytes(const BlockQ8_0& b) { return load_q8(b.qs); }
static inline __m256i q4_1_bytes(const BlockQ4_1& b) { return unpack_nibbles_32(b.qs); }

// Weight types with a symmetric block (d, 32 signed values) against Q8_0: dot = dw*da*sum(q*qa).
// Two accumulators over even / odd blocks, blocks in order; Bytes unpacks a block to 32 int8.
template <class Block, __m256i (*Bytes)(const Block&)>
static void vec_dot_sym_q8_0(int64_t n, const void* w, const void* a, float* out) {
    const Block* x = (const Block*)w;
    const BlockQ8_0* y = (const BlockQ8_0*)a;
    const int64_t nb = n / QK8_0;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        acc0 = fma_block(acc0, x[b].d, y[b].d, dot_i8_i8(Bytes(x[b]), load_q8(y[b].qs)));
        acc1 = fma_block(acc1, x[b + 1].d, y[b + 1].d, dot_i8_i8(Bytes(x[b + 1]), load_q8(y[b + 1].qs)));
    }
    if (b < nb) acc0 = fma_block(acc0, x[b].d, y[b].d, dot_i8_i8(Bytes(x[b]), load_q8(y[b].qs)));
    *out = hsum_f32x8(_mm256_add_ps(acc0, acc1));
}

void vec_dot_q4_0_q8_0(int64_t n, const void* w, const void* a, float* out) {
    vec_dot_sym_q8_0<BlockQ4_0, q4_0_bytes>(n, w, a, out);
}

void vec_dot_q5_0_q8_0(int64_t n, const void* w, const void* a, float* out) {
    vec_dot_sym_q8_0<BlockQ5_0, q5_0_bytes>(n, w, a, out);
}

// note: the sign trick in dot_i8_i8 needs no -128 in either operand; the Q8_0 quantizer never writes
// one (|q| <= 127), so Q8_0 weights from any ggml-compatible writer are safe.
void vec_dot_q8_0_q8_0(int64_t n, const void* w, const void* a, float* out) {
    vec_dot_sym_q8_0<BlockQ8_0, q8_0_bytes>(n, w, a, out);
}

// The _1 types: w = d*q + m, so dot = dw*da*sum(q*qa) + m * (da*sum(qa)) where da*sum(qa) is Q8_1's s.
// The min terms are summed in two scalar floats (even / odd blocks). Bytes unpacks to 32 uint8.
template <class Block, __m256i (*Bytes)(const Block&)>
static void vec_dot_min_q8_1(int64_t n, const void* w, const void* a, float* out) {
    const Block* x = (const Block*)w;
    const BlockQ8_1* y = (const BlockQ8_1*)a;
    const int64_t nb = n / QK8_1;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    float summ0 = 0, summ1 = 0;
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        acc0 = fma_block(acc0, x[b].d, y[b].d, dot_u8_i8(Bytes(x[b]), load_q8(y[b].qs)));
        acc1 = fma_block(acc1, x[b + 1].d, y[b + 1].d, dot_u8_i8(Bytes(x[b + 1]), load_q8(y[b + 1].qs)));
        summ0 += h2f(x[b].m) * h2f(y[b].s);
        summ1 += h2f(x[b + 1].m) * h2f(y[b + 1].s);
    }
    if (b < nb) {
        acc0 = fma_block(acc0, x[b].d, y[b].d, dot_u8_i8(Bytes(x[b]), load_q8(y[b].qs)));
        summ0 += h2f(x[b].m) * h2f(y[b].s);
    }
    *out = hsum_f32x8(_mm256_add_ps(acc0, acc1)) + (summ0 + summ1);
}

void vec_dot_q4_1_q8_1(int64_t n, const void* w, const void* a, float* out) {
    vec_dot_min_q8_1<BlockQ4_1, q4_1_bytes>(n, w, a, out);
}

void vec_dot_q5_1_q8_1(int64_t n, const void* w, const void* a, float* out) {
    vec_dot_min_q8_1<BlockQ5_1, q5_1_bytes>(n, w, a, out);
}

}  // namespace bee::avx2
