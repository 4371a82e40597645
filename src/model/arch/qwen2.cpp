// model/arch/qwen2: Qwen2 / Qwen2.5 — the llama layout with q/k/v biases and neox rope.
#include "model/arch/arch.h"

namespace bee {

static void qwen2_load(const GgufFile& f, HParams& hp, ModelWeights& w) {
    load_common_hparams(f, hp);
    for (LayerParams& lp : hp.layers) lp.rope.mode = RopeMode::neox;
    bind_common_weights(f, hp, w);
    LayerTensors t;
    t.qkv_bias = true;
    bind_decoder_layers(f, hp, w, t);
}

extern const ArchDef kArchQwen2 = {"qwen2", qwen2_load, decoder_layer_prenorm, &kPrenormBlock};

}  // namespace bee
