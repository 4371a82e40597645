// model/gdn: one token of a Gated DeltaNet layer after its input projections (../shared/specs/drafters.md
// §8.5): the causal conv over q | k | v, SiLU, L2-normalised q and k, and the delta-rule update of each
// value head. The qwen35 forward and the recurrent state's replay (model/recurrent_state.h) both call
// these, so a replayed token gives the forward's bits.
#pragma once
#include <cstdint>

#include "model/hparams.h"

namespace bee {

// The shape of one layer's recurrent state and of one token's tape row.
struct GdnShape {
    int d_conv = 0, n_k_heads = 0, n_v_heads = 0, d = 0;
    int64_t conv_ch = 0;  // (2 H_k + H_v) d
    float eps = 1e-6f;    // the L2 norm's floor (the model's RMS epsilon, as llama.cpp)
    explicit GdnShape(const HParams& hp);
    GdnShape() = default;
    int64_t conv_floats() const { return (int64_t)(d_conv - 1) * conv_ch; }  // (d_conv - 1, conv_ch)
    int64_t ssm_floats() const { return (int64_t)n_v_heads * d * d; }        // (H_v, d, d)
    int64_t tape_floats() const { return conv_ch + 2 * n_v_heads; }          // raw q|k|v, then g, then beta
};

// Conv of one token over channels [c0, c1): the window conv_state (d_conv - 1, conv_ch) + qkv (conv_ch),
// into out (conv_ch); the state moves on by one token. Channels are independent (any split, same bits).
void gdn_conv(const GdnShape& s, float* conv_state, const float* taps, const float* qkv, float* out, int64_t c0,
              int64_t c1);
// After gdn_conv over every channel of a token: SiLU over the row, then q and k L2-normalised per head.
void gdn_conv_finish(const GdnShape& s, float* out);
// The delta-rule step of value head h for one token: its state (d, d) in ssm (H_v, d, d), its q and k from
// key head h mod H_k of the finished conv row, v of head h; o gets the head's d outputs.
void gdn_head(const GdnShape& s, float* ssm, int h, const float* conv_row, float g, float beta, float* o);
// gdn_head over n consecutive tokens: finished conv rows conv (n, conv_ch); per token its decay g at
// g + t·gb_stride and beta at beta + t·gb_stride; head h's outputs at o + t·o_stride. The same bits as n
// gdn_head calls (kernels.h gdn_steps).
void gdn_head_tokens(const GdnShape& s, float* ssm, int h, int n, const float* conv, const float* g, const float* beta,
                     int64_t gb_stride, float* o, int64_t o_stride);

}  // namespace bee
