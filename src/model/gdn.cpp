// model/gdn: one token of a Gated DeltaNet layer after its projections (see gdn.h).
#include "model/gdn.h"

#include <cmath>

#include "kernels/kernels.h"

namespace bee {

GdnShape::GdnShape(const HParams& hp)
    : d_conv(hp.ssm.d_conv),
      n_k_heads(hp.ssm.n_k_heads),
      n_v_heads(hp.ssm.n_v_heads),
      d(hp.ssm.head_dim),
      conv_ch(hp.ssm.conv_ch()),
      eps(hp.norm_eps) {}

void gdn_conv(const GdnShape& s, float* conv_state, const float* taps, const float* qkv, float* out, int64_t c0,
              int64_t c1) {
    conv1d_step(conv_state + c0, taps + c0, s.d_conv, s.conv_ch, qkv + c0, out + c0, c1 - c0);
}

void gdn_conv_finish(const GdnShape& s, float* out) {
    silu(out, s.conv_ch);
    for (int h = 0; h < 2 * s.n_k_heads; h++) l2_norm(out + (int64_t)h * s.d, out + (int64_t)h * s.d, s.d, s.eps);
}

void gdn_head(const GdnShape& s, float* ssm, int h, const float* conv_row, float g, float beta, float* o) {
    const int hk = h % s.n_k_heads;  // tiled heads: the converter orders V heads for this (drafters.md §8.7)
    const float* q = conv_row + (int64_t)hk * s.d;
    const float* k = conv_row + (int64_t)(s.n_k_heads + hk) * s.d;
    const float* v = conv_row + (int64_t)2 * s.n_k_heads * s.d + (int64_t)h * s.d;
    gdn_step(ssm + (int64_t)h * s.d * s.d, s.d, s.d, q, k, v, g, beta, 1.0f / sqrtf((float)s.d), o);
}

void gdn_head_tokens(const GdnShape& s, float* ssm, int h, int n, const float* conv, const float* g, const float* beta,
                     int64_t gb_stride, float* o, int64_t o_stride) {
    const int hk = h % s.n_k_heads;
    GdnTokens t;
    t.n = n;
    t.q = conv + (int64_t)hk * s.d;
    t.k = conv + (int64_t)(s.n_k_heads + hk) * s.d;
    t.v = conv + (int64_t)2 * s.n_k_heads * s.d + (int64_t)h * s.d;
    t.qk_stride = t.v_stride = s.conv_ch;
    t.g = g;
    t.beta = beta;
    t.gb_stride = gb_stride;
    t.o = o;
    t.o_stride = o_stride;
    gdn_steps(ssm + (int64_t)h * s.d * s.d, s.d, s.d, t, 1.0f / sqrtf((float)s.d));
}

}  // namespace bee
