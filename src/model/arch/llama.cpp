// model/arch/llama: Llama 1/2/3, TinyLlama, SmolLM2 — pre-norm, rope on adjacent pairs, SwiGLU FFN.
#include "model/arch/arch.h"

namespace bee {

static void llama_load(const GgufFile& f, HParams& hp, ModelWeights& w) {
    load_common_hparams(f, hp);
    for (LayerParams& lp : hp.layers) lp.rope.mode = RopeMode::normal;
    bind_common_weights(f, hp, w);
    bind_decoder_layers(f, hp, w, LayerTensors{});
}

extern const ArchDef kArchLlama = {"llama", llama_load, decoder_layer_prenorm, &kPrenormBlock};

}  // namespace bee
