// quant/quant_k_quantize: deterministic reference quantizers for Q2_K, Q3_K, Q4_K, Q5_K and Q6_K.
//
// Method: the one of ggml's quantize_row_*_K_ref (no importance matrix), reimplemented with the same
// float arithmetic, so the bytes equal llama.cpp's reference quantizer (checked block for block
// against ggml's C code while this was written).
//  1. Each sub-block (16 or 32 values) gets its own float scale (and min for the affine types) from
//     a small search that minimises a weighted error:
//       - affine types Q2_K, Q4_K, Q5_K: fit_affine() — start from the [min, max] grid, then try
//         nstep+1 stretched grids; for each, round to levels and solve the 2x2 weighted least squares
//         for (scale, min) in closed form (min kept <= 0); keep the lowest error.
//       - symmetric Q6_K: fit_symmetric() — 19 trial inverse scales -(nmax + 0.1k)/max, k = -9..9,
//         each followed by the least-squares scale; weights x^2 favour the large values.
//       - symmetric Q3_K: fit_symmetric_refined() — one rounding then up to 5 passes of coordinate
//         descent, moving single quants while that improves the least-squares fit.
//  2. The sub-block scales (and mins) are themselves quantized to 4/6/8 bits against the largest one,
//     which becomes the fp16 super-block scale d (and dmin).
//  3. Every value is re-rounded with the effective scale d * sc (and min dmin * m) it will be
//     dequantized with, so the stored quants are the best ones for the stored scales.
#include <cmath>
#include <cstring>

#include "base/cpu.h"
#include "quant/blocks.h"
#include "quant/quant_internal.h"

namespace bee {

// quant_k_fit_avx2.cpp: fit_affine() of the 8 sub-blocks of a super-block side by side, bit-identical
// (called only when cpu_isa() >= Isa::avx2).
void fit_affine_x8_avx2(const float* x, const float* w, int nmax, float rmin, float rdelta, int nstep, uint8_t* L,
                        float* scales, float* neg_mins);

namespace {

constexpr float kGroupMaxEps = 1e-15f;  // a sub-block below this magnitude is all zeros

int clamp_int(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

// Weighted error of x[i] ~ scale * L[i] + mn: sum w * |diff| (abs_err) or sum w * diff^2.
float affine_error(int n, const float* x, const float* w, const uint8_t* L, float scale, float mn, bool abs_err) {
    float err = 0;
    for (int i = 0; i < n; ++i) {
        const float diff = scale * (float)L[i] + mn - x[i];
        err += w[i] * (abs_err ? fabsf(diff) : diff * diff);
    }
    return err;
}

// Fits x[i] ~ scale * L[i] - neg_min with L[i] in [0, nmax] and neg_min >= 0, minimising the
// weighted error (see the file comment). Returns scale; n <= 32. As in ggml, each trial grid starts
// at the best min found so far; levels are computed NaN/inf-safe (the min can sit near the max).
float fit_affine(int n, int nmax, const float* x, const float* w, uint8_t* L, float* neg_min, float rmin, float rdelta,
                 int nstep, bool abs_err) {
    float lo = x[0], hi = x[0], sum_w = 0, sum_x = 0;
    for (int i = 0; i < n; ++i) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (lo > 0) lo = 0;
    if (!(hi > lo)) {  // constant (or NaN) sub-block: all quants 0, value carried by the min
        memset(L, 0, (size_t)n);
        *neg_min = -lo;
        return 0.f;
    }
    const float iscale0 = (float)nmax / (hi - lo);
    float scale = 1 / iscale0, mn = lo;
    for (int i = 0; i < n; ++i) L[i] = (uint8_t)clamp_int(nearest_int(iscale0 * (x[i] - lo)), 0, nmax);
    float best = affine_error(n, x, w, L, scale, mn, abs_err);
    uint8_t trial[32];
    for (int k = 0; k <= nstep; ++k) {
        const float iscale = (rmin + rdelta * (float)k + (float)nmax) / (hi - mn);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            const float v = iscale * (x[i] - mn);
            const int l = v > 0 ? clamp_int(nearest_int(v < (float)nmax ? v : (float)nmax), 0, nmax) : 0;
            trial[i] = (uint8_t)l;
            sum_l += w[i] * (float)l;
            sum_l2 += w[i] * (float)l * (float)l;
            sum_xl += w[i] * (float)l * x[i];
        }
        const float det = sum_w * sum_l2 - sum_l * sum_l;
        if (!(det > 0)) continue;
        float s = (sum_w * sum_xl - sum_x * sum_l) / det;
        float m = (sum_l2 * sum_x - sum_l * sum_xl) / det;
        if (m > 0) {  // a positive offset is not representable: refit the scale alone
            m = 0;
            s = sum_xl / sum_l2;
        }
        const float err = affine_error(n, x, w, trial, s, m, abs_err);
        if (err < best) {
            memcpy(L, trial, (size_t)n);
            best = err;
            scale = s;
            mn = m;
        }
    }
    *neg_min = -mn;
    return scale;
}

// Fits x[i] ~ scale * (L[i] - nmax) with L[i] - nmax in [-nmax, nmax - 1], weights x^2.
// The value of largest magnitude goes to -nmax, so scale has the opposite sign of that value.
float fit_symmetric(int n, int nmax, const float* x, uint8_t* L) {
    static const int kSteps[19] = {0, -9, -8, -7, -6, -5, -4, -3, -2, -1, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    const float max = signed_absmax(x, n);
    memset(L, 0, (size_t)n);
    if (!(fabsf(max) >= kGroupMaxEps)) return 0.f;
    float scale = 0, best = 0;
    for (int k : kSteps) {
        const float iscale = -((float)nmax + 0.1f * (float)k) / max;
        float sum_lx = 0, sum_l2 = 0;
        int l[32];
        for (int i = 0; i < n; ++i) {
            l[i] = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
            const float w = x[i] * x[i];
            sum_lx += w * x[i] * (float)l[i];
            sum_l2 += w * (float)l[i] * (float)l[i];
        }
        // the error at the least-squares scale sum_lx / sum_l2 falls as sum_lx^2 / sum_l2 grows;
        // the nominal grid (k = 0) is always taken first
        if (k == 0 || (sum_l2 > 0 && sum_lx * sum_lx > best * sum_l2)) {
            for (int i = 0; i < n; ++i) L[i] = (uint8_t)(l[i] + nmax);
            scale = sum_l2 > 0 ? sum_lx / sum_l2 : 0.f;
            best = scale * sum_lx;
        }
    }
    return scale;
}

// As fit_symmetric, with one rounding then coordinate descent on single quants (Q3_K's search).
float fit_symmetric_refined(int n, int nmax, const float* x, uint8_t* L) {
    const float max = signed_absmax(x, n);
    memset(L, 0, (size_t)n);
    if (!(fabsf(max) >= kGroupMaxEps)) return 0.f;
    const float iscale = -(float)nmax / max;
    int l[32];
    float sum_lx = 0, sum_l2 = 0;
    for (int i = 0; i < n; ++i) {
        l[i] = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        const float w = x[i] * x[i];
        sum_lx += w * x[i] * (float)l[i];
        sum_l2 += w * (float)l[i] * (float)l[i];
    }
    for (int pass = 0; pass < 5; ++pass) {
        int changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = x[i] * x[i];
            float slx = sum_lx - w * x[i] * (float)l[i];
            if (!(slx > 0)) continue;  // as ggml: refines only fits with a positive scale (largest value < 0)
            float sl2 = sum_l2 - w * (float)l[i] * (float)l[i];
            const int nl = clamp_int(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
            if (nl == l[i]) continue;
            slx += w * x[i] * (float)nl;
            sl2 += w * (float)nl * (float)nl;
            if (sl2 > 0 && slx * slx * sum_l2 > sum_lx * sum_lx * sl2) {
                l[i] = nl;
                sum_lx = slx;
                sum_l2 = sl2;
                ++changed;
            }
        }
        if (!changed) break;
    }
    for (int i = 0; i < n; ++i) L[i] = (uint8_t)(l[i] + nmax);
    return sum_l2 > 0 ? sum_lx / sum_l2 : 0.f;
}

// Packs 256 2-bit quants into Q2_K/Q3_K order (inverse of unpack_2bit_k).
void pack_2bit_k(const uint8_t* L, uint8_t* qs) {
    for (int h = 0; h < 2; ++h)
        for (int l = 0; l < 32; ++l) {
            const uint8_t* s = L + 128 * h + l;
            qs[32 * h + l] = (uint8_t)(s[0] | (s[32] << 2) | (s[64] << 4) | (s[96] << 6));
        }
}

// Packs the low 4 bits of 256 quants into Q4_K/Q5_K order (inverse of unpack_4bit_k).
void pack_4bit_k(const uint8_t* L, uint8_t* qs) {
    for (int g = 0; g < 4; ++g)
        for (int l = 0; l < 32; ++l)
            qs[32 * g + l] = (uint8_t)((L[64 * g + l] & 0xF) | ((L[64 * g + l + 32] & 0xF) << 4));
}

// Packs 8 six-bit scales and mins into the 12-byte Q4_K/Q5_K layout (inverse of k_scale_min).
void pack_k_scale_min(const uint8_t* ls, const uint8_t* lm, uint8_t* out) {
    for (int j = 0; j < 4; ++j) {
        out[j] = ls[j];
        out[j + 4] = lm[j];
    }
    for (int j = 4; j < 8; ++j) {
        out[j + 4] = (uint8_t)((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
        out[j - 4] |= (uint8_t)((ls[j] >> 4) << 6);
        out[j] |= (uint8_t)((lm[j] >> 4) << 6);
    }
}

// Steps 1-2 for Q4_K/Q5_K: per-32 affine fits, then 6-bit scales and mins with fp16 d and dmin.
// Weights av + |x| (av = rms of the sub-block) balance absolute and relative error.
void fit_k_scale_min(const float* x, int nmax, float rmin, float rdelta, int nstep, uint8_t* L, uint8_t* packed,
                     fp16_t* d, fp16_t* dmin) {
    float scales[8], mins[8], w[QK_K];
    for (int j = 0; j < 8; ++j) {
        const float* xs = x + 32 * j;
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
        const float av = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; ++l) w[32 * j + l] = av + fabsf(xs[l]);
    }
    if (cpu_isa() >= Isa::avx2) {
        fit_affine_x8_avx2(x, w, nmax, rmin, rdelta, nstep, L, scales, mins);
    } else {
        for (int j = 0; j < 8; ++j)
            scales[j] = fit_affine(32, nmax, x + 32 * j, w + 32 * j, L + 32 * j, &mins[j], rmin, rdelta, nstep, false);
    }
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
        max_scale = scales[j] > max_scale ? scales[j] : max_scale;
        max_min = mins[j] > max_min ? mins[j] : max_min;
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    uint8_t ls[8], lm[8];
    for (int j = 0; j < 8; ++j) {
        ls[j] = (uint8_t)clamp_int(nearest_int(inv_scale * scales[j]), 0, 63);
        lm[j] = (uint8_t)clamp_int(nearest_int(inv_min * mins[j]), 0, 63);
    }
    pack_k_scale_min(ls, lm, packed);
    *d = fp32_to_fp16(max_scale / 63.f);
    *dmin = fp32_to_fp16(max_min / 63.f);
}

// Step 3 for Q4_K/Q5_K: re-round every value with its stored scale and min.
void requantize_k_scale_min(const float* x, int nmax, const uint8_t* packed, fp16_t d, fp16_t dmin, uint8_t* L) {
    for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        k_scale_min(j, packed, &sc, &m);
        const float dl = fp16_to_fp32(d) * (float)sc;
        if (dl == 0.0f) continue;
        const float ml = fp16_to_fp32(dmin) * (float)m;
        for (int l = 0; l < 32; ++l)
            L[32 * j + l] = (uint8_t)clamp_int(nearest_int((x[32 * j + l] + ml) / dl), 0, nmax);
    }
}

}  // namespace

void quantize_row_q4_K(const float* src, void* dst, int64_t n) {
    BlockQ4_K* y = (BlockQ4_K*)dst;
    uint8_t L[QK_K];
    for (int64_t b = 0; b < n / QK_K; ++b, src += QK_K) {
        memset(&y[b], 0, sizeof(BlockQ4_K));
        fit_k_scale_min(src, 15, -1.0f, 0.1f, 20, L, y[b].scales, &y[b].d, &y[b].dmin);
        requantize_k_scale_min(src, 15, y[b].scales, y[b].d, y[b].dmin, L);
        pack_4bit_k(L, y[b].qs);
    }
}

void quantize_row_q5_K(const float* src, void* dst, int64_t n) {
    BlockQ5_K* y = (BlockQ5_K*)dst;
    uint8_t L[QK_K];
    for (int64_t b = 0; b < n / QK_K; ++b, src += QK_K) {
        memset(&y[b], 0, sizeof(BlockQ5_K));
        fit_k_scale_min(src, 31, -0.5f, 0.1f, 15, L, y[b].scales, &y[b].d, &y[b].dmin);
        requantize_k_scale_min(src, 31, y[b].scales, y[b].d, y[b].dmin, L);
        pack_4bit_k(L, y[b].qs);
        for (int e = 0; e < QK_K; ++e) y[b].qh[e % 32] |= (uint8_t)((L[e] >> 4) << (e / 32));
    }
}

// Q2_K: per-16 affine fits on |x| weights with absolute error (the 4 levels are too coarse for
// least squares to behave), then 4-bit scales and mins.
void quantize_row_q2_K(const float* src, void* dst, int64_t n) {
    BlockQ2_K* y = (BlockQ2_K*)dst;
    uint8_t L[QK_K];
    float scales[16], mins[16], w[16];
    for (int64_t b = 0; b < n / QK_K; ++b, src += QK_K) {
        memset(&y[b], 0, sizeof(BlockQ2_K));
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < 16; ++j) {
            for (int l = 0; l < 16; ++l) w[l] = fabsf(src[16 * j + l]);
            scales[j] = fit_affine(16, 3, src + 16 * j, w, L + 16 * j, &mins[j], -0.5f, 0.1f, 15, true);
            max_scale = scales[j] > max_scale ? scales[j] : max_scale;
            max_min = mins[j] > max_min ? mins[j] : max_min;
        }
        const float inv_scale = max_scale > 0 ? 15.f / max_scale : 0.f;
        const float inv_min = max_min > 0 ? 15.f / max_min : 0.f;
        for (int j = 0; j < 16; ++j) {
            const int ls = clamp_int(nearest_int(inv_scale * scales[j]), 0, 15);
            const int lm = clamp_int(nearest_int(inv_min * mins[j]), 0, 15);
            y[b].scales[j] = (uint8_t)(ls | (lm << 4));
        }
        y[b].d = fp32_to_fp16(max_scale / 15.f);
        y[b].dmin = fp32_to_fp16(max_min / 15.f);
        for (int j = 0; j < 16; ++j) {
            const float dl = fp16_to_fp32(y[b].d) * (float)(y[b].scales[j] & 0xF);
            if (dl == 0.0f) continue;
            const float ml = fp16_to_fp32(y[b].dmin) * (float)(y[b].scales[j] >> 4);
            for (int l = 0; l < 16; ++l)
                L[16 * j + l] = (uint8_t)clamp_int(nearest_int((src[16 * j + l] + ml) / dl), 0, 3);
        }
        pack_2bit_k(L, y[b].qs);
    }
}

// Q3_K: per-16 symmetric fits with descent, then signed 6-bit scales (stored + 32).
void quantize_row_q3_K(const float* src, void* dst, int64_t n) {
    BlockQ3_K* y = (BlockQ3_K*)dst;
    uint8_t L[QK_K];
    float scales[16];
    for (int64_t b = 0; b < n / QK_K; ++b, src += QK_K) {
        memset(&y[b], 0, sizeof(BlockQ3_K));
        for (int j = 0; j < 16; ++j) scales[j] = fit_symmetric_refined(16, 4, src + 16 * j, L + 16 * j);
        const float max_scale = signed_absmax(scales, 16);
        if (max_scale != 0.0f) {
            const float iscale = -32.f / max_scale;
            for (int j = 0; j < 16; ++j) {
                const int l = clamp_int(nearest_int(iscale * scales[j]), -32, 31) + 32;
                if (j < 8) y[b].scales[j] = (uint8_t)(l & 0xF);
                else y[b].scales[j - 8] |= (uint8_t)((l & 0xF) << 4);
                y[b].scales[8 + j % 4] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
            }
            y[b].d = fp32_to_fp16(1 / iscale);
        }
        for (int j = 0; j < 16; ++j) {
            const float dl = fp16_to_fp32(y[b].d) * (float)(q3k_scale(j, y[b].scales) - 32);
            if (dl == 0.0f) continue;
            for (int l = 0; l < 16; ++l)
                L[16 * j + l] = (uint8_t)(clamp_int(nearest_int(src[16 * j + l] / dl), -4, 3) + 4);
        }
        for (int e = 0; e < QK_K; ++e) {  // bit 2 goes to hmask, the low 2 bits to qs
            if (L[e] > 3) {
                y[b].hmask[e % 32] |= (uint8_t)(1 << (e / 32));
                L[e] -= 4;
            }
        }
        pack_2bit_k(L, y[b].qs);
    }
}

// Q6_K: per-16 symmetric fits, then int8 scales against the largest (which maps to -128).
void quantize_row_q6_K(const float* src, void* dst, int64_t n) {
    BlockQ6_K* y = (BlockQ6_K*)dst;
    uint8_t L[QK_K];
    float scales[16];
    for (int64_t b = 0; b < n / QK_K; ++b, src += QK_K) {
        memset(&y[b], 0, sizeof(BlockQ6_K));
        for (int j = 0; j < 16; ++j) scales[j] = fit_symmetric(16, 32, src + 16 * j, L + 16 * j);
        const float max_scale = signed_absmax(scales, 16);
        if (!(fabsf(max_scale) >= kGroupMaxEps)) continue;  // all-zero block stays zero
        const float iscale = -128.f / max_scale;
        y[b].d = fp32_to_fp16(1 / iscale);
        for (int j = 0; j < 16; ++j) y[b].scales[j] = (int8_t)clamp_int(nearest_int(iscale * scales[j]), -128, 127);
        for (int j = 0; j < 16; ++j) {
            const float dl = fp16_to_fp32(y[b].d) * (float)y[b].scales[j];
            if (dl == 0.0f) continue;
            for (int l = 0; l < 16; ++l)
                L[16 * j + l] = (uint8_t)(clamp_int(nearest_int(src[16 * j + l] / dl), -32, 31) + 32);
        }
        for (int h = 0; h < 2; ++h) {
            for (int l = 0; l < 32; ++l) {
                const uint8_t* s = L + 128 * h + l;
                y[b].ql[64 * h + l] = (uint8_t)((s[0] & 0xF) | ((s[64] & 0xF) << 4));
                y[b].ql[64 * h + l + 32] = (uint8_t)((s[32] & 0xF) | ((s[96] & 0xF) << 4));
                y[b].qh[32 * h + l] =
                    (uint8_t)((s[0] >> 4) | ((s[32] >> 4) << 2) | ((s[64] >> 4) << 4) | ((s[96] >> 4) << 6));
            }
        }
    }
}

}  // namespace bee
