// base/rope_yarn: YaRN rope scaling (arXiv:2309.00071) as ggml computes it — the cos/sin of one rotary
// pair — shared by the CPU kernels, their scalar reference and the Vulkan path's host-side table.
#pragma once
#include <algorithm>
#include <cmath>

namespace bee {

struct RopeYarn {
    float ext_factor = 0.0f;   // 0: no YaRN (plain or linear scaling); 1: full YaRN mix
    float attn_factor = 1.0f;  // cos/sin magnitude before YaRN's own 1 + 0.1 ln(1 / freq_scale)
    float corr_lo = 0.0f;      // pairs below corr_lo keep the interpolated (scaled) angle,
    float corr_hi = 0.0f;      // pairs above corr_hi the extrapolated (unscaled) one; a ramp between
    bool operator==(const RopeYarn&) const = default;
};

// cos/sin of rotary pair i whose unscaled angle is theta_extrap, under linear scale freq_scale. Without
// YaRN (ext_factor 0, attn_factor 1) this is cos/sin(freq_scale * theta_extrap), bit for bit.
inline void rope_cos_sin(float theta_extrap, float freq_scale, const RopeYarn& y, int i, float* c, float* s) {
    float theta = freq_scale * theta_extrap;
    float mscale = y.attn_factor;
    if (y.ext_factor != 0.0f) {
        const float t = ((float)i - y.corr_lo) / std::max(0.001f, y.corr_hi - y.corr_lo);
        const float ramp_mix = (1.0f - std::min(1.0f, std::max(0.0f, t))) * y.ext_factor;
        theta = theta * (1.0f - ramp_mix) + theta_extrap * ramp_mix;
        mscale *= 1.0f + 0.1f * logf(1.0f / freq_scale);
    }
    *c = cosf(theta) * mscale;
    *s = sinf(theta) * mscale;
}

// The YaRN settings of a model: n_rot rotated dims, trained on n_ctx_orig positions with base freq_base
// and scaled by `factor` (> 1); beta_fast / beta_slow bound the ramp (in rotations over n_ctx_orig);
// log_mul: the file's yarn_log_multiplier (0: none); attn_factor >= 0 replaces the computed magnitude.
inline RopeYarn rope_yarn_params(int n_rot, int n_ctx_orig, float freq_base, float factor, float ext_factor,
                                 float beta_fast, float beta_slow, float log_mul, float attn_factor) {
    RopeYarn y;
    if (ext_factor == 0.0f && attn_factor < 0) return y;  // no YaRN: the default, plain rope's bits
    y.ext_factor = ext_factor;
    auto corr_dim = [&](float n_rotations) {
        return (float)n_rot * logf((float)n_ctx_orig / (n_rotations * 2.0f * (float)M_PI)) / (2.0f * logf(freq_base));
    };
    y.corr_lo = std::max(0.0f, floorf(corr_dim(beta_fast)));
    y.corr_hi = std::min((float)(n_rot - 1), ceilf(corr_dim(beta_slow)));
    if (attn_factor >= 0) {
        y.attn_factor = attn_factor;
    } else if (ext_factor != 0.0f) {
        // The magnitude is 1 + 0.1 ln(factor) in all (rope_cos_sin multiplies that in), divided and
        // multiplied by the ratio of two such terms when the file has a log multiplier.
        auto mscale = [&](float m) { return factor <= 1.0f ? 1.0f : 0.1f * m * logf(factor) + 1.0f; };
        y.attn_factor = log_mul != 0.0f ? mscale(1.0f) / mscale(log_mul) : mscale(1.0f);
        y.attn_factor *= 1.0f / (1.0f + 0.1f * logf(factor));
    }
    return y;
}

}  // namespace bee
