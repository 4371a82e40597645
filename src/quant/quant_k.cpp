// quant/quant_k: dequantize Q2_K..Q6_K (ggml-quants.c dequantize_row_*_K), and the Q8_K activation type.
#include <cstring>

#include "quant/blocks.h"
#include "quant/quant_internal.h"

namespace bee {

// note: the float expression of each element is the one ggml evaluates, operand for operand
// (e.g. Q6_K is (d * sc) * q, not d * (sc * q)), and must not be fused into an FMA: the tests
// compare these floats bit for bit with gguf-py's.

void dequantize_row_q2_K(const void* src, float* dst, int64_t n) {
    const BlockQ2_K* x = (const BlockQ2_K*)src;
    uint8_t q[QK_K];
    for (int64_t b = 0; b < n / QK_K; ++b, dst += QK_K) {
        const float d = fp16_to_fp32(x[b].d);
        const float dmin = fp16_to_fp32(x[b].dmin);
        unpack_q2_K(x[b], q);
        for (int s = 0; s < QK_K / 16; ++s) {
            const float dl = d * (float)(x[b].scales[s] & 0xF);
            const float ml = dmin * (float)(x[b].scales[s] >> 4);
            for (int l = 0; l < 16; ++l) dst[16 * s + l] = dl * (float)q[16 * s + l] - ml;
        }
    }
}

void dequantize_row_q3_K(const void* src, float* dst, int64_t n) {
    const BlockQ3_K* x = (const BlockQ3_K*)src;
    int8_t q[QK_K];
    for (int64_t b = 0; b < n / QK_K; ++b, dst += QK_K) {
        const float d = fp16_to_fp32(x[b].d);
        unpack_q3_K(x[b], q);
        for (int s = 0; s < QK_K / 16; ++s) {
            const float dl = d * (float)(q3k_scale(s, x[b].scales) - 32);
            for (int l = 0; l < 16; ++l) dst[16 * s + l] = dl * (float)q[16 * s + l];
        }
    }
}

// Q4_K and Q5_K share the 8 sub-blocks of 32 with a 6-bit scale and min each: y = d*sc*q - dmin*m.
static void dequantize_scale_min_block(float d, float dmin, const uint8_t* scales, const uint8_t* q, float* dst) {
    for (int s = 0; s < QK_K / 32; ++s) {
        uint8_t sc, m;
        k_scale_min(s, scales, &sc, &m);
        const float dl = d * (float)sc;
        const float ml = dmin * (float)m;
        for (int l = 0; l < 32; ++l) dst[32 * s + l] = dl * (float)q[32 * s + l] - ml;
    }
}

void dequantize_row_q4_K(const void* src, float* dst, int64_t n) {
    const BlockQ4_K* x = (const BlockQ4_K*)src;
    uint8_t q[QK_K];
    for (int64_t b = 0; b < n / QK_K; ++b, dst += QK_K) {
        unpack_q4_K(x[b], q);
        dequantize_scale_min_block(fp16_to_fp32(x[b].d), fp16_to_fp32(x[b].dmin), x[b].scales, q, dst);
    }
}

void dequantize_row_q5_K(const void* src, float* dst, int64_t n) {
    const BlockQ5_K* x = (const BlockQ5_K*)src;
    uint8_t q[QK_K];
    for (int64_t b = 0; b < n / QK_K; ++b, dst += QK_K) {
        unpack_q5_K(x[b], q);
        dequantize_scale_min_block(fp16_to_fp32(x[b].d), fp16_to_fp32(x[b].dmin), x[b].scales, q, dst);
    }
}

void dequantize_row_q6_K(const void* src, float* dst, int64_t n) {
    const BlockQ6_K* x = (const BlockQ6_K*)src;
    int8_t q[QK_K];
    for (int64_t b = 0; b < n / QK_K; ++b, dst += QK_K) {
        const float d = fp16_to_fp32(x[b].d);
        unpack_q6_K(x[b], q);
        for (int s = 0; s < QK_K / 16; ++s) {
            const float dl = d * (float)x[b].scales[s];
            for (int l = 0; l < 16; ++l) dst[16 * s + l] = dl * (float)q[16 * s + l];
        }
    }
}

void dequantize_row_q8_K(const void* src, float* dst, int64_t n) {
    const BlockQ8_K* x = (const BlockQ8_K*)src;
    for (int64_t b = 0; b < n / QK_K; ++b, dst += QK_K) {
        for (int j = 0; j < QK_K; ++j) dst[j] = x[b].d * (float)x[b].qs[j];
    }
}

// Q8_K, the activation type of the K-quants (ggml quantize_row_q8_K_ref): the value of largest
// magnitude maps to -127 exactly, q = nearest_int(-127 / max * x) (ties to even) capped at 127,
// d = 1 / iscale kept as a float; bsums hold the sum of each group of 16 quants so the K-quant dots
// can apply the sub-block mins with one multiply per group. An all-zero block is all zeros.
void quantize_row_q8_K(const float* src, void* dst, int64_t n) {
    BlockQ8_K* y = (BlockQ8_K*)dst;
    for (int64_t b = 0; b < n / QK_K; ++b, src += QK_K) {
        const float max = signed_absmax(src, QK_K);
        memset(&y[b], 0, sizeof(BlockQ8_K));
        if (max == 0.0f) continue;
        const float iscale = -127.f / max;
        for (int j = 0; j < QK_K; ++j) {
            const int v = nearest_int(iscale * src[j]);
            y[b].qs[j] = (int8_t)(v > 127 ? 127 : v < -128 ? -128 : v);
        }
        for (int g = 0; g < QK_K / 16; ++g) {
            int sum = 0;
            for (int l = 0; l < 16; ++l) sum += y[b].qs[16 * g + l];
            y[b].bsums[g] = (int16_t)sum;
        }
        y[b].d = 1 / iscale;
    }
}

}  // namespace bee
