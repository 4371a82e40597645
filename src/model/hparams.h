// model/hparams: the shape and numeric settings of a model, read from GGUF by its architecture file.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "model/pooling.h"

namespace bee {

struct LayerParams {
    bool swa = false;          // sliding-window attention layer
    RopeParams rope;           // this layer's rope (gemma3: local and global layers differ)
    int kv_layer = -1;         // index of this layer's K/V in the KV cache (-1: the layer has no attention)
    int recurrent_layer = -1;  // index of this layer's recurrent state (-1: not a Gated DeltaNet layer)
};

// Gated DeltaNet layers (qwen35; ../shared/specs/drafters.md §8.5). All 0 for attention-only models.
struct SsmParams {
    int d_conv = 0;     // K, the causal conv's width (ssm.conv_kernel)
    int n_k_heads = 0;  // H_k (ssm.group_count)
    int n_v_heads = 0;  // H_v (ssm.time_step_rank); value head j reads key head j mod H_k
    int head_dim = 0;   // d, the width of key and value heads (ssm.state_size)
    int64_t conv_ch() const { return (int64_t)(2 * n_k_heads + n_v_heads) * head_dim; }  // q | k | v
    int64_t d_inner() const { return (int64_t)n_v_heads * head_dim; }
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
    bool rank_softmax = false;      // rank pooling ends with a softmax over the head's outputs (declared by the arch)
    bool attn_output_gate = false;  // attn_q is twice as wide: per head [query | gate] (qwen35)
    SsmParams ssm;
    int n_nextn = 0;  // MTP (NextN) blocks stored after the n_layer trunk layers (<arch>.nextn_predict_layers)
    std::vector<LayerParams> layers;

    // Layers with K/V (the KV cache's layers) and layers with recurrent state.
    int n_kv_layers() const {
        int n = 0;
        for (const LayerParams& l : layers) n += l.kv_layer >= 0;
        return n;
    }
    int n_recurrent_layers() const {
        int n = 0;
        for (const LayerParams& l : layers) n += l.recurrent_layer >= 0;
        return n;
    }
};

}  // namespace bee
