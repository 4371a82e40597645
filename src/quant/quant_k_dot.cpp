// quant/quant_k_dot: scalar reference dot products of Q2_K..Q6_K weights with Q8_K activations.
#include "quant/blocks.h"
#include "quant/quant_internal.h"

namespace bee {

// Per super-block: exact int32 sums (sub-block scale * sum of quant products, and for the types
// with mins, sum of min * bsum), then one float expression d * isum - dmin * msum with
// d = x.d * y.d; super-blocks are added in order into one float. As in ggml the mins use Q8_K's
// bsums instead of a second pass over the quants. The integer sums are exact (|isum| < 2^28), so
// any kernel with the same float expression and block order is bit-identical to this one.

namespace {

// sum_l a[l] * b[l] over n elements.
template <typename A>
int dot_i32(const A* a, const int8_t* b, int n) {
    int s = 0;
    for (int l = 0; l < n; ++l) s += (int)a[l] * (int)b[l];
    return s;
}

}  // namespace

void vec_dot_q2_K_q8_K(int64_t n, const void* w, const void* a, float* out) {
    const BlockQ2_K* x = (const BlockQ2_K*)w;
    const BlockQ8_K* y = (const BlockQ8_K*)a;
    uint8_t q[QK_K];
    float sum = 0;
    for (int64_t b = 0; b < n / QK_K; ++b) {
        unpack_q2_K(x[b], q);
        int isum = 0, msum = 0;
        for (int s = 0; s < QK_K / 16; ++s) {
            isum += (x[b].scales[s] & 0xF) * dot_i32(q + 16 * s, y[b].qs + 16 * s, 16);
            msum += (x[b].scales[s] >> 4) * y[b].bsums[s];
        }
        const float d = y[b].d * fp16_to_fp32(x[b].d);
        const float dmin = y[b].d * fp16_to_fp32(x[b].dmin);
        sum += d * (float)isum - dmin * (float)msum;
    }
    *out = sum;
}

void vec_dot_q3_K_q8_K(int64_t n, const void* w, const void* a, float* out) {
    const BlockQ3_K* x = (const BlockQ3_K*)w;
    const BlockQ8_K* y = (const BlockQ8_K*)a;
    int8_t q[QK_K];
    float sum = 0;
    for (int64_t b = 0; b < n / QK_K; ++b) {
        unpack_q3_K(x[b], q);
        int isum = 0;
        for (int s = 0; s < QK_K / 16; ++s)
            isum += (q3k_scale(s, x[b].scales) - 32) * dot_i32(q + 16 * s, y[b].qs + 16 * s, 16);
        const float d = y[b].d * fp16_to_fp32(x[b].d);
        sum += d * (float)isum;
    }
    *out = sum;
}

// Q4_K and Q5_K share the scale/min layout; `q` holds the unpacked quants of block b.
static void dot_k_scale_min(const uint8_t* scales, const uint8_t* q, const BlockQ8_K& y, int* isum, int* msum) {
    *isum = 0;
    *msum = 0;
    for (int s = 0; s < QK_K / 32; ++s) {
        uint8_t sc, m;
        k_scale_min(s, scales, &sc, &m);
        *isum += sc * dot_i32(q + 32 * s, y.qs + 32 * s, 32);
        *msum += m * (y.bsums[2 * s] + y.bsums[2 * s + 1]);
    }
}

void vec_dot_q4_K_q8_K(int64_t n, const void* w, const void* a, float* out) {
    const BlockQ4_K* x = (const BlockQ4_K*)w;
    const BlockQ8_K* y = (const BlockQ8_K*)a;
    uint8_t q[QK_K];
    float sum = 0;
    for (int64_t b = 0; b < n / QK_K; ++b) {
        unpack_q4_K(x[b], q);
        int isum, msum;
        dot_k_scale_min(x[b].scales, q, y[b], &isum, &msum);
        const float d = y[b].d * fp16_to_fp32(x[b].d);
        const float dmin = y[b].d * fp16_to_fp32(x[b].dmin);
        sum += d * (float)isum - dmin * (float)msum;
    }
    *out = sum;
}

void vec_dot_q5_K_q8_K(int64_t n, const void* w, const void* a, float* out) {
    const BlockQ5_K* x = (const BlockQ5_K*)w;
    const BlockQ8_K* y = (const BlockQ8_K*)a;
    uint8_t q[QK_K];
    float sum = 0;
    for (int64_t b = 0; b < n / QK_K; ++b) {
        unpack_q5_K(x[b], q);
        int isum, msum;
        dot_k_scale_min(x[b].scales, q, y[b], &isum, &msum);
        const float d = y[b].d * fp16_to_fp32(x[b].d);
        const float dmin = y[b].d * fp16_to_fp32(x[b].dmin);
        sum += d * (float)isum - dmin * (float)msum;
    }
    *out = sum;
}

void vec_dot_q6_K_q8_K(int64_t n, const void* w, const void* a, float* out) {
    const BlockQ6_K* x = (const BlockQ6_K*)w;
    const BlockQ8_K* y = (const BlockQ8_K*)a;
    int8_t q[QK_K];
    float sum = 0;
    for (int64_t b = 0; b < n / QK_K; ++b) {
        unpack_q6_K(x[b], q);
        int isum = 0;
        for (int s = 0; s < QK_K / 16; ++s) isum += x[b].scales[s] * dot_i32(q + 16 * s, y[b].qs + 16 * s, 16);
        const float d = y[b].d * fp16_to_fp32(x[b].d);
        sum += d * (float)isum;
    }
    *out = sum;
}

}  // namespace bee
