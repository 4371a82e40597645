// quant/turbo: rotation, centroid tables, group encode/decode and row routines of the TurboQuant types.
#include "quant/turbo.h"

#include <cmath>
#include <cstring>

#include "base/cpu.h"
#include "base/fp16.h"
#include "quant/blocks.h"
#include "quant/tcq.h"

namespace bee {

// turbo_avx2.cpp: rotate() below with the group in AVX2 registers, bit-identical (cpu_isa() >= avx2).
void turbo_rotate_avx2(float* x, int g, const float* first, const float* second);

namespace {

// Sign tables D1, D2 (spec §2, "seed=42" in the sources; data, not generated): bit i of word i/32 set
// means entry i is -1. tests/unit/quant/test_turbo.cpp checks them against the spec's +/- strings.
constexpr uint32_t kSigns1[4] = {0xE46A0359u, 0x42F85949u, 0xA4C63BBBu, 0x49F250A9u};
constexpr uint32_t kSigns2[4] = {0x16ACEE90u, 0x3F628FDCu, 0xB7A5357Au, 0xBEA56562u};

float sign_of(const uint32_t* mask, int i) { return (mask[i / 32] >> (i % 32)) & 1 ? -1.0f : 1.0f; }

// The sign tables as floats (hot: every query, output and written K/V group goes through them).
struct SignFloats {
    float s1[128], s2[128];
    SignFloats() {
        for (int i = 0; i < 128; i++) s1[i] = sign_of(kSigns1, i), s2[i] = sign_of(kSigns2, i);
    }
};
const SignFloats kSignFloats;

// Lloyd-Max centroids for coordinates ~ N(0, 1/128) (spec §4, BeeLlama tables), ascending.
constexpr float kC2[4] = {-0.133462f, -0.039994f, 0.039994f, 0.133462f};
constexpr float kC3[8] = {-0.190685f, -0.117832f, -0.065717f, -0.021460f, 0.021460f, 0.065717f, 0.117832f, 0.190685f};
constexpr float kC4[16] = {-0.241556f, -0.182907f, -0.143047f, -0.111065f, -0.083317f, -0.058069f,
                           -0.034311f, -0.011353f, 0.011353f,  0.034311f,  0.058069f,  0.083317f,
                           0.111065f,  0.143047f,  0.182907f,  0.241556f};

// 64-value groups: rotated coordinates are ~ N(0, 1/64), so the same Lloyd-Max levels scaled by √2.
struct Scaled {
    float c2[4], c3[8], c4[16];
    Scaled() {
        const float s = sqrtf(2.0f);
        for (int i = 0; i < 4; i++) c2[i] = kC2[i] * s;
        for (int i = 0; i < 8; i++) c3[i] = kC3[i] * s;
        for (int i = 0; i < 16; i++) c4[i] = kC4[i] * s;
    }
};
const Scaled kScaled64;

const TurboFormat kFormats[] = {
    {GgmlType::TURBO2, 2, 128, false, kC2},
    {GgmlType::TURBO3, 3, 128, false, kC3},
    {GgmlType::TURBO4, 4, 128, false, kC4},
    {GgmlType::TURBO2_TCQ, 2, 128, true, kTcqCodebook2},
    {GgmlType::TURBO3_TCQ, 3, 128, true, kTcqCodebook3},
    {GgmlType::TURBO2_64, 2, 64, false, kScaled64.c2},
    {GgmlType::TURBO3_64, 3, 64, false, kScaled64.c3},
    {GgmlType::TURBO4_64, 4, 64, false, kScaled64.c4},
};

// In-place Walsh-Hadamard butterfly (natural order, unnormalized).
void fwht(float* x, int g) {
    for (int h = 1; h < g; h *= 2)
        for (int i = 0; i < g; i += 2 * h)
            for (int j = i; j < i + h; j++) {
                const float a = x[j], b = x[j + h];
                x[j] = a + b;
                x[j + h] = a - b;
            }
}

void rotate(float* x, int g, const float* first, const float* second) {
    if (cpu_isa() >= Isa::avx2) return turbo_rotate_avx2(x, g, first, second);
    for (int i = 0; i < g; i++) x[i] *= first[i];
    fwht(x, g);
    const float inv_sqrt_g = 1.0f / sqrtf((float)g);
    for (int i = 0; i < g; i++) x[i] *= second[i] * inv_sqrt_g;
}

// Index of the nearest centroid: the number of midpoints m with y >= m (spec §4: a value on a
// midpoint goes up, 0.0 maps to the first positive centroid).
int nearest_centroid(const float* c, int n, float y) {
    int idx = 0;
    for (int i = 0; i + 1 < n; i++) idx += y >= 0.5f * (c[i] + c[i + 1]);
    return idx;
}

void pack_index(uint8_t* block, int bits, int group, int j, int idx) {
    uint8_t* qs = block + 2;
    if (bits == 4) {
        qs[j / 2] |= (uint8_t)(idx << ((j & 1) * 4));
        return;
    }
    qs[j / 4] |= (uint8_t)((idx & 3) << ((j % 4) * 2));
    if (bits == 3) qs[group / 4 + j / 8] |= (uint8_t)(((idx >> 2) & 1) << (j % 8));
}

}  // namespace

void turbo_rotate(float* x, int g) { rotate(x, g, kSignFloats.s1, kSignFloats.s2); }
void turbo_unrotate(float* x, int g) { rotate(x, g, kSignFloats.s2, kSignFloats.s1); }
float turbo_sign(int which, int i) { return sign_of(which == 1 ? kSigns1 : kSigns2, i); }

const TurboFormat* turbo_format(GgmlType t) {
    for (const TurboFormat& f : kFormats)
        if (f.type == t) return &f;
    return nullptr;
}

void turbo_encode_group(const TurboFormat& f, const float* x, uint8_t* dst, float alpha) {
    const int g = f.group;
    float y[128];
    double sq = 0;
    for (int i = 0; i < g; i++) sq += (double)x[i] * x[i];
    const float n = (float)sqrt(sq);
    const float inv = n > 1e-10f ? 1.0f / n : 0.0f;
    for (int i = 0; i < g; i++) y[i] = x[i] * inv;
    turbo_rotate(y, g);
    const size_t bytes = ggml_type_info(f.type).type_size;
    memset(dst, 0, bytes);
    float r2 = 0;
    if (f.tcq) {
        r2 = tcq_encode(y, f.bits, f.values, dst + 2);
    } else {
        for (int j = 0; j < g; j++) {
            const int idx = nearest_centroid(f.values, 1 << f.bits, y[j]);
            pack_index(dst, f.bits, g, j, idx);
            r2 += f.values[idx] * f.values[idx];
        }
    }
    // Norm correction (spec §2 step 6): the reconstruction keeps the input's exact L2 norm.
    const float r = sqrtf(r2);
    const fp16_t stored = fp32_to_fp16((r > 1e-10f ? n / r : n) * alpha);
    memcpy(dst, &stored, 2);
}

void turbo_decode_group_rotated(const TurboFormat& f, const uint8_t* src, float* y) {
    fp16_t h;
    memcpy(&h, src, 2);
    const float norm = fp16_to_fp32(h);
    for (int j = 0; j < f.group; j++) {
        const int idx = f.tcq ? tcq_state(src + 2, f.bits, j) : turbo_index(src, f.bits, f.group, j);
        y[j] = f.values[idx] * norm;
    }
}

void quantize_row_turbo(GgmlType t, const float* src, void* dst, int64_t n, float alpha) {
    const TurboFormat& f = *turbo_format(t);
    const size_t bytes = ggml_type_info(t).type_size;
    for (int64_t b = 0; b < n / f.group; b++)
        turbo_encode_group(f, src + b * f.group, (uint8_t*)dst + b * bytes, alpha);
}

float turbo_v_alpha(GgmlType t) {
    const TurboFormat* f = turbo_format(t);
    if (!f) return 1.0f;
    const float d = f->tcq         ? (f->bits == 2 ? 0.080f : 0.0218f)
                    : f->bits == 2 ? 0.119f
                    : f->bits == 3 ? 0.034f
                                   : 0.0092f;
    return 1.0f / sqrtf(1.0f - d);
}

void dequantize_row_turbo(GgmlType t, const void* src, float* dst, int64_t n) {
    const TurboFormat& f = *turbo_format(t);
    const size_t bytes = ggml_type_info(t).type_size;
    for (int64_t b = 0; b < n / f.group; b++) {
        turbo_decode_group_rotated(f, (const uint8_t*)src + b * bytes, dst + b * f.group);
        turbo_unrotate(dst + b * f.group, f.group);
    }
}

int kv_padded_dim(GgmlType t, int head_dim) {
    const int64_t bs = ggml_type_info(t).block_size;
    if (bs <= 0) return head_dim;
    return (int)((head_dim + bs - 1) / bs * bs);
}

size_t kv_head_bytes(GgmlType t, int head_dim) { return ggml_row_size(t, kv_padded_dim(t, head_dim)); }

}  // namespace bee
