// model/arch/gemma3: Gemma 3 text — embeddings scaled by sqrt(n_embd), q/k norms, pre- and post-norms
// around attention and FFN, GeGLU (tanh GELU), sliding-window layers (5 of every 6) with their own
// rope base, neox rope, optional final logit soft-cap.
#include <cmath>

#include "base/error.h"
#include "model/arch/arch.h"

namespace bee {

constexpr int kGemma3SwaPattern = 6;  // layers il with il % 6 == 5 are global, the rest local

static void gemma3_load(const GgufFile& f, HParams& hp, ModelWeights& w) {
    load_common_hparams(f, hp);
    const std::string& a = hp.arch;
    hp.embd_scale = std::sqrt((float)hp.n_embd);
    // Gemma 3 27B (62 layers) scales queries by 1/sqrt(n_embd / n_head) (query_pre_attn_scalar);
    // the other sizes by 1/sqrt(head_dim), the default.
    if (hp.n_layer == 62) hp.attn_scale = 1.0f / std::sqrt((float)hp.n_embd / hp.n_head);
    hp.final_softcap = arch_float(f, a, "final_logit_softcapping", 0.0f);
    hp.attn_softcap = arch_float(f, a, "attn_logit_softcapping", 0.0f);
    const float base_swa = arch_float(f, a, "rope.freq_base_swa", 10000.0f);  // finite, or arch_float fails
    if (!(base_swa > 0)) fail("%s: %s.rope.freq_base_swa is %g: it must be > 0", f.path().c_str(), a.c_str(), base_swa);
    for (int il = 0; il < hp.n_layer; il++) {
        LayerParams& lp = hp.layers[il];
        lp.rope.mode = RopeMode::neox;
        lp.swa = hp.n_swa > 0 && il % kGemma3SwaPattern < kGemma3SwaPattern - 1;
        if (lp.swa) {  // local layers: own base, no scaling
            lp.rope.freq_base = base_swa;
            lp.rope.freq_scale = 1.0f;
        }
    }
    bind_common_weights(f, hp, w);
    LayerTensors t;
    t.qk_norm = true;
    t.post_norms = true;
    bind_decoder_layers(f, hp, w, t);
}

// x += post_norm(attn(norm(x))); x += post_norm(ffn(norm(x)))
static void gemma3_forward_layer(ForwardCtx& c, int il) {
    const LayerWeights& L = c.w.layers[il];
    float* xn = c.s.xn.data();
    float* out = c.s.out.data();
    self_attention(c, il, layer_input(c, il));
    residual_norm(c, out, &L.post_attn_norm, &L.ffn_norm, xn);
    ffn_gated(c, il, xn, FfnAct::gelu);
    layer_output(c, il, out, &L.post_ffn_norm);
}

static constexpr DecoderBlock kGemma3Block{FfnAct::gelu, true};  // what gemma3_forward_layer computes

extern const ArchDef kArchGemma3 = {"gemma3", gemma3_load, gemma3_forward_layer, &kGemma3Block};

}  // namespace bee
