// model/hparams: the shape and numeric settings of a model, read from GGUF by its architecture file.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "model/pooling.h"

namespace bee {

struct LayerParams {
    bool swa = false;  // sliding-window attention layer
    RopeParams rope;   // this layer's rope (gemma3: local and global layers differ)
};

struct HParams {
    std::string arch;
    int n_vocab = 0;
    int n_embd = 0;
    int n_layer = 0;
    int n_head = 0;
    int n_head_kv = 0;
    int head_dim = 0;    // key length per head
    int head_dim_v = 0;  // value length per head
    int n_ff = 0;
    int n_ctx_train = 0;
    float norm_eps = 1e-5f;
    float attn_scale = 0.0f;  // scale on q·k (default 1/sqrt(head_dim))
    int n_swa = 0;            // sliding window (0: none): a row sees cells with pos > row_pos - n_swa
    float embd_scale = 1.0f;  // token embeddings multiplied by this (gemma: sqrt(n_embd))
    float final_softcap = 0.0f;
    float attn_softcap = 0.0f;
    Pooling pooling = Pooling::unspecified;  // <arch>.pooling_type: the default of --pooling
    bool rank_softmax = false;  // rank pooling ends with a softmax over the head's outputs (declared by the arch)
    std::vector<LayerParams> layers;
};

}  // namespace bee
