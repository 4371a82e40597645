// kernels/ref/ops_ref: scalar references of rms_norm, rope, silu, gelu_tanh and softmax (ggml semantics).
#include <cmath>

#include "kernels/kernels.h"

namespace bee::ref {

// ggml_compute_forward_rms_norm followed by ggml_mul: y = (x * (1 / sqrt(mean(x²) + eps))) * w.
void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps) {
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += (double)x[i] * (double)x[i];
    const float mean = (float)(sum / (double)n);
    const float s = 1.0f / sqrtf(mean + eps);
    for (int64_t i = 0; i < n; i++) y[i] = w ? (x[i] * s) * w[i] : x[i] * s;
}

// ggml rope: pair i turns by theta_i = freq_scale * (pos * base^(-2i/n_rot) / freq_factors[i]), mixed with the
// unscaled angle and scaled in magnitude under YaRN (base/rope_yarn.h); base^(-2i/n_rot) is built by
// repeated float multiplication exactly as ggml does.
void rope(float* x, int n_head, int head_dim, int32_t pos, const RopeParams& p) {
    const int half = p.n_rot / 2;
    const float theta_scale = powf(p.freq_base, -2.0f / (float)p.n_rot);
    for (int h = 0; h < n_head; h++) {
        float* v = x + (int64_t)h * head_dim;  // (head_dim)
        float theta = (float)pos;
        for (int i = 0; i < half; i++) {
            const float ff = p.freq_factors ? p.freq_factors[i] : 1.0f;
            float c, s;
            rope_cos_sin(theta / ff, p.freq_scale, p.yarn, i, &c, &s);
            const int i0 = p.mode == RopeMode::neox ? i : 2 * i;
            const int i1 = p.mode == RopeMode::neox ? i + half : 2 * i + 1;
            const float x0 = v[i0], x1 = v[i1];
            v[i0] = x0 * c - x1 * s;
            v[i1] = x0 * s + x1 * c;
            theta *= theta_scale;
        }
    }
}

void silu(float* x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = x[i] / (1.0f + expf(-x[i]));
}

void gelu_tanh(float* x, int64_t n) {
    const float sqrt_2_over_pi = 0.79788456080286535587989211986876f;
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        x[i] = 0.5f * v * (1.0f + tanhf(sqrt_2_over_pi * v * (1.0f + 0.044715f * v * v)));
    }
}

void softmax(float* x, int64_t n) {
    if (n <= 0) return;
    float mx = x[0];
    for (int64_t i = 1; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    double sum = 0;
    for (int64_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - mx);
        sum += x[i];
    }
    const float inv = (float)(1.0 / sum);
    for (int64_t i = 0; i < n; i++) x[i] *= inv;
}

}  // namespace bee::ref
