// model/arch/arch: what one architecture file provides (hparams + tensor binding, one layer's forward)
// and the table from general.architecture to those functions. Names of architectures appear only
// under model/arch/.
#pragma once
#include <string>

#include "gguf/gguf.h"
#include "model/forward.h"
#include "model/hparams.h"
#include "model/weights.h"

namespace bee {

// The decoder layer an architecture's forward_layer computes, declared for forwards that are not the CPU's
// (model/offload.h): x += [post_attn_norm](attn(attn_norm(x))); x += [post_ffn_norm](ffn_act(ffn_norm(x))),
// with the optional tensors (biases, q/k norms) taken from what the arch bound (LayerTensors).
struct DecoderBlock {
    FfnAct act = FfnAct::silu;
    bool post_norms = false;  // Gemma's post_attention_norm / post_ffw_norm
};

// decoder_layer_prenorm's block (llama, qwen2, qwen3).
inline constexpr DecoderBlock kPrenormBlock{FfnAct::silu, false};

struct ArchDef {
    const char* name;  // general.architecture
    // Reads hparams from `<name>.*` keys and binds tensors; throws Error naming file and key/tensor.
    void (*load)(const GgufFile& f, HParams& hp, ModelWeights& w);
    // Runs layer il over the ubatch: ctx.x (n_rows, n_embd) is updated in place.
    void (*forward_layer)(ForwardCtx& ctx, int il);
    // The same layer as a DecoderBlock, or nullptr when only the CPU runs this architecture.
    const DecoderBlock* block;
};

// nullptr if the architecture is not supported.
const ArchDef* find_arch(const std::string& name);
// Comma-separated list of supported names (for error messages).
std::string supported_archs();

}  // namespace bee
