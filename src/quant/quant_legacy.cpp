// quant/quant_legacy: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1 — dequantize, reference quantize, scalar dot.
// Layouts and rounding follow ggml-quants.c (quantize_row_*_ref, dequantize_row_*) so the bytes we
// write and the floats we read are the ones llama.cpp writes and reads.
#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/quant_internal.h"

namespace bee {

namespace {

// Truncates v toward zero into [0, hi] as ggml's `MIN(hi, (int8_t)v)` does for the values a valid
// block produces; NaN and negatives give 0 instead of undefined behaviour.
int trunc_clamp(float v, int hi) {
    if (!(v >= 0.0f)) return 0;
    if (v >= (float)hi) return hi;
    return (int)v;
}

// roundf (half away from zero) into int8 range, as ggml's Q8_0/Q8_1 reference quantizers round.
int8_t round_q8(float v) {
    if (!(v == v)) return 0;
    const float r = roundf(v);
    return (int8_t)(r > 127.0f ? 127 : r < -128.0f ? -128 : (int)r);
}

uint32_t load_u32_le(const uint8_t* p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

void store_u32_le(uint8_t* p, uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = (uint8_t)(v >> (8 * i));
}

// Min and max of x[0..n).
void min_max(const float* x, int n, float* mn, float* mx) {
    float lo = x[0], hi = x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
    }
    *mn = lo;
    *mx = hi;
}

// Packs 32 quants q[0..31] (each < 32) into 16 low-nibble bytes plus a 32-bit 5th-bit mask.
void pack_q5(const uint8_t* q, uint8_t* qs, uint8_t* qh) {
    uint32_t h = 0;
    for (int j = 0; j < 16; ++j) {
        qs[j] = (uint8_t)((q[j] & 0xF) | ((q[j + 16] & 0xF) << 4));
        h |= (uint32_t)(q[j] >> 4) << j;
        h |= (uint32_t)(q[j + 16] >> 4) << (j + 16);
    }
    store_u32_le(qh, h);
}

// The 5-bit quants of a Q5 block, element order.
void unpack_q5(const uint8_t* qs, const uint8_t* qh, uint8_t* q) {
    const uint32_t h = load_u32_le(qh);
    for (int j = 0; j < 16; ++j) {
        q[j] = (uint8_t)((qs[j] & 0xF) | (((h >> j) & 1) << 4));
        q[j + 16] = (uint8_t)((qs[j] >> 4) | (((h >> (j + 16)) & 1) << 4));
    }
}

}  // namespace

// ---- dequantize ----------------------------------------------------------------------------------
// note: each element is one float multiply (and one add for the _1 types) of the int quant; the
// product must not be fused into an FMA or the floats would differ from ggml's and gguf-py's.

void dequantize_row_q4_0(const void* src, float* dst, int64_t n) {
    const BlockQ4_0* x = (const BlockQ4_0*)src;
    for (int64_t b = 0; b < n / QK4_0; ++b, dst += QK4_0) {
        const float d = fp16_to_fp32(x[b].d);
        for (int j = 0; j < 16; ++j) {
            dst[j] = (float)((x[b].qs[j] & 0xF) - 8) * d;
            dst[j + 16] = (float)((x[b].qs[j] >> 4) - 8) * d;
        }
    }
}

void dequantize_row_q4_1(const void* src, float* dst, int64_t n) {
    const BlockQ4_1* x = (const BlockQ4_1*)src;
    for (int64_t b = 0; b < n / QK4_1; ++b, dst += QK4_1) {
        const float d = fp16_to_fp32(x[b].d);
        const float m = fp16_to_fp32(x[b].m);
        for (int j = 0; j < 16; ++j) {
            dst[j] = (float)(x[b].qs[j] & 0xF) * d + m;
            dst[j + 16] = (float)(x[b].qs[j] >> 4) * d + m;
        }
    }
}

void dequantize_row_q5_0(const void* src, float* dst, int64_t n) {
    const BlockQ5_0* x = (const BlockQ5_0*)src;
    uint8_t q[QK5_0];
    for (int64_t b = 0; b < n / QK5_0; ++b, dst += QK5_0) {
        const float d = fp16_to_fp32(x[b].d);
        unpack_q5(x[b].qs, x[b].qh, q);
        for (int j = 0; j < QK5_0; ++j) dst[j] = (float)(q[j] - 16) * d;
    }
}

void dequantize_row_q5_1(const void* src, float* dst, int64_t n) {
    const BlockQ5_1* x = (const BlockQ5_1*)src;
    uint8_t q[QK5_1];
    for (int64_t b = 0; b < n / QK5_1; ++b, dst += QK5_1) {
        const float d = fp16_to_fp32(x[b].d);
        const float m = fp16_to_fp32(x[b].m);
        unpack_q5(x[b].qs, x[b].qh, q);
        for (int j = 0; j < QK5_1; ++j) dst[j] = (float)q[j] * d + m;
    }
}

void dequantize_row_q8_0(const void* src, float* dst, int64_t n) {
    const BlockQ8_0* x = (const BlockQ8_0*)src;
    for (int64_t b = 0; b < n / QK8_0; ++b, dst += QK8_0) {
        const float d = fp16_to_fp32(x[b].d);
        for (int j = 0; j < QK8_0; ++j) dst[j] = (float)x[b].qs[j] * d;
    }
}

void dequantize_row_q8_1(const void* src, float* dst, int64_t n) {
    const BlockQ8_1* x = (const BlockQ8_1*)src;
    for (int64_t b = 0; b < n / QK8_1; ++b, dst += QK8_1) {
        const float d = fp16_to_fp32(x[b].d);
        for (int j = 0; j < QK8_1; ++j) dst[j] = (float)x[b].qs[j] * d;
    }
}

// ---- reference quantizers --------------------------------------------------------------------------
// Symmetric types: d = (signed absmax) / -2^(bits-1), so the extreme value maps to quant 0 exactly and
// the rest round by truncating q + 0.5. Affine types: d = (max - min) / (2^bits - 1), m = min.

void quantize_row_q4_0(const float* src, void* dst, int64_t n) {
    BlockQ4_0* y = (BlockQ4_0*)dst;
    for (int64_t b = 0; b < n / QK4_0; ++b, src += QK4_0) {
        const float d = signed_absmax(src, QK4_0) / -8;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = fp32_to_fp16(d);
        for (int j = 0; j < 16; ++j) {
            const int q0 = trunc_clamp(src[j] * id + 8.5f, 15);
            const int q1 = trunc_clamp(src[j + 16] * id + 8.5f, 15);
            y[b].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

void quantize_row_q4_1(const float* src, void* dst, int64_t n) {
    BlockQ4_1* y = (BlockQ4_1*)dst;
    for (int64_t b = 0; b < n / QK4_1; ++b, src += QK4_1) {
        float mn, mx;
        min_max(src, QK4_1, &mn, &mx);
        const float d = (mx - mn) / 15;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = fp32_to_fp16(d);
        y[b].m = fp32_to_fp16(mn);
        for (int j = 0; j < 16; ++j) {
            const int q0 = trunc_clamp((src[j] - mn) * id + 0.5f, 15);
            const int q1 = trunc_clamp((src[j + 16] - mn) * id + 0.5f, 15);
            y[b].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

void quantize_row_q5_0(const float* src, void* dst, int64_t n) {
    BlockQ5_0* y = (BlockQ5_0*)dst;
    uint8_t q[QK5_0];
    for (int64_t b = 0; b < n / QK5_0; ++b, src += QK5_0) {
        const float d = signed_absmax(src, QK5_0) / -16;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = fp32_to_fp16(d);
        for (int j = 0; j < QK5_0; ++j) q[j] = (uint8_t)trunc_clamp(src[j] * id + 16.5f, 31);
        pack_q5(q, y[b].qs, y[b].qh);
    }
}

void quantize_row_q5_1(const float* src, void* dst, int64_t n) {
    BlockQ5_1* y = (BlockQ5_1*)dst;
    uint8_t q[QK5_1];
    for (int64_t b = 0; b < n / QK5_1; ++b, src += QK5_1) {
        float mn, mx;
        min_max(src, QK5_1, &mn, &mx);
        const float d = (mx - mn) / 31;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = fp32_to_fp16(d);
        y[b].m = fp32_to_fp16(mn);
        for (int j = 0; j < QK5_1; ++j) q[j] = (uint8_t)trunc_clamp((src[j] - mn) * id + 0.5f, 31);
        pack_q5(q, y[b].qs, y[b].qh);
    }
}

// Q8_0 and Q8_1 are also the activation types: d = absmax / 127, q = roundf(x / d), which is what
// ggml's reference (and so its generic vec_dot path) does.
// One block of 32: d = absmax / 127, qs = roundf(x / d); returns d and, in *sum, the sum of qs.
static float quantize_block_q8(const float* src, int8_t* qs, int* sum) {
    float amax = 0;
    for (int j = 0; j < QK8_0; ++j) amax = fabsf(src[j]) > amax ? fabsf(src[j]) : amax;
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    *sum = 0;
    for (int j = 0; j < QK8_0; ++j) {
        qs[j] = round_q8(src[j] * id);
        *sum += qs[j];
    }
    return d;
}

void quantize_row_q8_0(const float* src, void* dst, int64_t n) {
    BlockQ8_0* y = (BlockQ8_0*)dst;
    int sum;
    for (int64_t b = 0; b < n / QK8_0; ++b, src += QK8_0) y[b].d = fp32_to_fp16(quantize_block_q8(src, y[b].qs, &sum));
}

void quantize_row_q8_1(const float* src, void* dst, int64_t n) {
    static_assert(QK8_1 == QK8_0, "Q8_0 and Q8_1 share the block quantizer");
    BlockQ8_1* y = (BlockQ8_1*)dst;
    for (int64_t b = 0; b < n / QK8_1; ++b, src += QK8_1) {
        int sum;
        const float d = quantize_block_q8(src, y[b].qs, &sum);
        y[b].d = fp32_to_fp16(d);
        y[b].s = fp32_to_fp16((float)sum * d);
    }
}

// ---- scalar dot products ---------------------------------------------------------------------------
// Per block: an exact int32 sum of quant products, then one float expression
// (dw * da) * isum [+ mw * sa]; blocks are added in order into one float. Any kernel that computes
// the same integer sum and the same float expression in the same order is bit-identical.

void vec_dot_q4_0_q8_0(int64_t n, const void* w, const void* a, float* out) {
    const BlockQ4_0* x = (const BlockQ4_0*)w;
    const BlockQ8_0* y = (const BlockQ8_0*)a;
    float sum = 0;
    for (int64_t b = 0; b < n / QK8_0; ++b) {
        int isum = 0;
        for (int j = 0; j < 16; ++j) {
            isum += ((x[b].qs[j] & 0xF) - 8) * y[b].qs[j];
            isum += ((x[b].qs[j] >> 4) - 8) * y[b].qs[j + 16];
        }
        sum += (fp16_to_fp32(x[b].d) * fp16_to_fp32(y[b].d)) * (float)isum;
    }
    *out = sum;
}

void vec_dot_q4_1_q8_1(int64_t n, const void* w, const void* a, float* out) {
    const BlockQ4_1* x = (const BlockQ4_1*)w;
    const BlockQ8_1* y = (const BlockQ8_1*)a;
    float sum = 0;
    for (int64_t b = 0; b < n / QK8_1; ++b) {
        int isum = 0;
        for (int j = 0; j < 16; ++j) {
            isum += (x[b].qs[j] & 0xF) * y[b].qs[j];
            isum += (x[b].qs[j] >> 4) * y[b].qs[j + 16];
        }
        sum +=
            (fp16_to_fp32(x[b].d) * fp16_to_fp32(y[b].d)) * (float)isum + fp16_to_fp32(x[b].m) * fp16_to_fp32(y[b].s);
    }
    *out = sum;
}

void vec_dot_q5_0_q8_0(int64_t n, const void* w, const void* a, float* out) {
    const BlockQ5_0* x = (const BlockQ5_0*)w;
    const BlockQ8_0* y = (const BlockQ8_0*)a;
    uint8_t q[QK5_0];
    float sum = 0;
    for (int64_t b = 0; b < n / QK8_0; ++b) {
        unpack_q5(x[b].qs, x[b].qh, q);
        int isum = 0;
        for (int j = 0; j < QK5_0; ++j) isum += (q[j] - 16) * y[b].qs[j];
        sum += (fp16_to_fp32(x[b].d) * fp16_to_fp32(y[b].d)) * (float)isum;
    }
    *out = sum;
}

void vec_dot_q5_1_q8_1(int64_t n, const void* w, const void* a, float* out) {
    const BlockQ5_1* x = (const BlockQ5_1*)w;
    const BlockQ8_1* y = (const BlockQ8_1*)a;
    uint8_t q[QK5_1];
    float sum = 0;
    for (int64_t b = 0; b < n / QK8_1; ++b) {
        unpack_q5(x[b].qs, x[b].qh, q);
        int isum = 0;
        for (int j = 0; j < QK5_1; ++j) isum += q[j] * y[b].qs[j];
        sum +=
            (fp16_to_fp32(x[b].d) * fp16_to_fp32(y[b].d)) * (float)isum + fp16_to_fp32(x[b].m) * fp16_to_fp32(y[b].s);
    }
    *out = sum;
}

void vec_dot_q8_0_q8_0(int64_t n, const void* w, const void* a, float* out) {
    const BlockQ8_0* x = (const BlockQ8_0*)w;
    const BlockQ8_0* y = (const BlockQ8_0*)a;
    float sum = 0;
    for (int64_t b = 0; b < n / QK8_0; ++b) {
        int isum = 0;
        for (int j = 0; j < QK8_0; ++j) isum += x[b].qs[j] * y[b].qs[j];
        sum += (fp16_to_fp32(x[b].d) * fp16_to_fp32(y[b].d)) * (float)isum;
    }
    *out = sum;
}

}  // namespace bee
