// model/arch/qwen3: Qwen3 dense — the llama layout without biases, per-head RMS norm on q and k, neox rope.
#include "model/arch/arch.h"

namespace bee {

static void qwen3_load(const GgufFile& f, HParams& hp, ModelWeights& w) {
    load_common_hparams(f, hp);
    for (LayerParams& lp : hp.layers) lp.rope.mode = RopeMode::neox;
    hp.rank_softmax = true;  // Qwen3 rerankers: yes/no logits of the head, softmaxed (as llama.cpp)
    bind_common_weights(f, hp, w);
    LayerTensors t;
    t.qk_norm = true;
    bind_decoder_layers(f, hp, w, t);
}

extern const ArchDef kArchQwen3 = {"qwen3", qwen3_load, decoder_layer_prenorm, &kPrenormBlock};

}  // namespace bee
