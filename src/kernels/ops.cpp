// kernels/ops: element-wise ops, norms and rope, dispatched to AVX2 or to the scalar reference.
#include <cmath>

#include "base/cpu.h"
#include "kernels/kernels.h"
#include "kernels/kernels_impl.h"

namespace bee {

namespace {
inline bool use_avx2() { return cpu_isa() >= Isa::avx2; }
constexpr int kMaxRopePairs = 512;
}  // namespace

void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps) {
    if (use_avx2()) return avx2_ops::rms_norm(x, w, y, n, eps);
    ref::rms_norm(x, w, y, n, eps);
}

namespace {

// cos/sin of every pair for (pos, p): the table ref::rope computes per head.
void rope_table(int32_t pos, const RopeParams& p, float* cs) {
    const float theta_scale = powf(p.freq_base, -2.0f / (float)p.n_rot);
    float theta = (float)pos;
    for (int i = 0; i < p.n_rot / 2; i++) {
        const float ff = p.freq_factors ? p.freq_factors[i] : 1.0f;
        rope_cos_sin(theta / ff, p.freq_scale, p.yarn, i, &cs[2 * i], &cs[2 * i + 1]);
        theta *= theta_scale;
    }
}

// The table for (pos, p) from a small per-thread cache: every layer of a decode step ropes q and k of the
// same positions with the same parameters (Gemma 3: two sets), so each table is computed once per row and
// step instead of twice per layer (the sines and cosines were ~1% of a step). Same values as recomputing.
const float* cached_rope_table(int32_t pos, const RopeParams& p) {
    constexpr int kEntries = 16, kPairs = 128;
    struct Entry {
        bool used = false;
        int32_t pos = 0;
        int n_rot = 0;
        float freq_base = 0, freq_scale = 0;
        const float* freq_factors = nullptr;
        RopeYarn yarn;
        float cs[2 * kPairs];
    };
    static thread_local Entry cache[kEntries];
    static thread_local int next = 0;
    if (p.n_rot / 2 > kPairs) return nullptr;
    for (Entry& e : cache)
        if (e.used && e.pos == pos && e.n_rot == p.n_rot && e.freq_base == p.freq_base &&
            e.freq_scale == p.freq_scale && e.freq_factors == p.freq_factors && e.yarn == p.yarn)
            return e.cs;
    Entry& e = cache[next];
    next = (next + 1) % kEntries;
    e.used = true;
    e.pos = pos;
    e.n_rot = p.n_rot;
    e.freq_base = p.freq_base;
    e.freq_scale = p.freq_scale;
    e.freq_factors = p.freq_factors;
    e.yarn = p.yarn;
    rope_table(pos, p, e.cs);
    return e.cs;
}

}  // namespace

// Same arithmetic as ref::rope, with cos/sin computed once per (position, parameters), not once per head.
void rope(float* x, int n_head, int head_dim, int32_t pos, const RopeParams& p) {
    const int half = p.n_rot / 2;
    if (half > kMaxRopePairs) return ref::rope(x, n_head, head_dim, pos, p);
    float own[2 * kMaxRopePairs];
    const float* cs = cached_rope_table(pos, p);
    if (!cs) {
        rope_table(pos, p, own);
        cs = own;
    }
    const bool neox = p.mode == RopeMode::neox;
    const int stride = neox ? 1 : 2;      // distance between consecutive pairs' first elements
    const int partner = neox ? half : 1;  // distance from a pair's first to its second element
    for (int h = 0; h < n_head; h++) {
        float* v = x + (int64_t)h * head_dim;  // (head_dim)
        for (int i = 0; i < half; i++) {
            const float c = cs[2 * i], s = cs[2 * i + 1];
            float* a = v + i * stride;
            const float x0 = a[0], x1 = a[partner];
            a[0] = x0 * c - x1 * s;
            a[partner] = x0 * s + x1 * c;
        }
    }
}

void silu(float* x, int64_t n) {
    if (use_avx2()) return avx2_ops::silu(x, n);
    ref::silu(x, n);
}

void gelu_tanh(float* x, int64_t n) {
    if (use_avx2()) return avx2_ops::gelu_tanh(x, n);
    ref::gelu_tanh(x, n);
}

void mul(float* x, const float* y, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] *= y[i];
}

void silu_mul(float* x, const float* y, int64_t n) {
    if (use_avx2()) return avx2_ops::silu_mul(x, y, n);
    ref::silu(x, n);
    mul(x, y, n);
}

void gelu_tanh_mul(float* x, const float* y, int64_t n) {
    if (use_avx2()) return avx2_ops::gelu_tanh_mul(x, y, n);
    ref::gelu_tanh(x, n);
    mul(x, y, n);
}

void add(float* x, const float* y, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] += y[i];
}

void scale(float* x, float s, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] *= s;
}

void softmax(float* x, int64_t n) {
    if (use_avx2()) return avx2_ops::softmax(x, n);
    ref::softmax(x, n);
}

void softcap(float* x, float cap, int64_t n) {
    const float inv = 1.0f / cap;
    for (int64_t i = 0; i < n; i++) x[i] = cap * tanhf(x[i] * inv);
}

}  // namespace bee
