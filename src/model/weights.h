// model/weights: a view of one tensor inside the mapped GGUF, and the weights of every layer.
#pragma once
#include <cstdint>
#include <vector>

#include "gguf/ggml_type.h"
#include "kernels/repack.h"

namespace bee {

// A tensor in the file: ne0 is the row length (inputs), ne1 the number of rows (outputs).
struct Weight {
    GgmlType type = GgmlType::F32;
    const void* data = nullptr;
    int64_t ne0 = 0, ne1 = 1;
    WeightLayout layout = WeightLayout::gguf;  // data repacked at load for the active ISA's matmul (kernels/repack.h)
    explicit operator bool() const { return data != nullptr; }
};

// Every tensor an architecture may bind; each arch fills what it uses. Shapes as (rows, cols).
struct LayerWeights {
    Weight attn_norm;         // (n_embd)
    Weight wq, wk, wv, wo;    // (n_head*hd, n_embd), (n_head_kv*hd, n_embd) x2, (n_embd, n_head*hd)
    Weight bq, bk, bv, bo;    // optional biases
    Weight q_norm, k_norm;    // (hd) per-head RMS norm (qwen3, gemma3)
    Weight post_attn_norm;    // (n_embd) gemma
    Weight ffn_norm;          // (n_embd)
    Weight ffn_gate, ffn_up;  // (n_ff, n_embd)
    Weight ffn_down;          // (n_embd, n_ff)
    Weight post_ffn_norm;     // (n_embd) gemma
    // Gated DeltaNet layers (qwen35, HParams::ssm): conv_ch = (2 H_k + H_v) d, d_inner = H_v d.
    Weight wqkv;                       // (conv_ch, n_embd) attn_qkv: q | k | v, before the conv
    Weight wgate;                      // (d_inner, n_embd) attn_gate: z, the output gate
    Weight ssm_beta, ssm_alpha;        // (H_v, n_embd)
    Weight ssm_dt;                     // (H_v) ssm_dt.bias
    Weight ssm_a;                      // (H_v) -exp(A_log)
    Weight ssm_norm;                   // (d) the gated RMSNorm's weight (stored without +1)
    Weight ssm_out;                    // (n_embd, d_inner)
    const float* conv_taps = nullptr;  // (d_conv, conv_ch) ssm_conv1d as f32, tap-major (ModelWeights::owned_f32)
};

// One MTP (NextN) block stored after the trunk (qwen35; ../shared/specs/drafters.md §4.1, §8.3), run by
// model/nextn.h. Optional parts left empty fall back to the trunk's output_norm, token_embd and output.
struct NextnWeights {
    Weight eh_proj;       // (n_embd, 2 n_embd): [enorm(embedding) ; hnorm(h)] -> n_embd
    Weight enorm, hnorm;  // (n_embd)
    Weight head_norm;     // (n_embd) nextn.shared_head_norm, optional
    Weight embed;         // (n_vocab, n_embd) nextn.embed_tokens, optional
    Weight head;          // (n_vocab, n_embd) nextn.shared_head_head, optional
    LayerWeights block;   // a full-attention decoder layer of the architecture
    explicit operator bool() const { return (bool)eh_proj; }
};

struct ModelWeights {
    Weight tok_embd;     // (n_vocab, n_embd)
    Weight output_norm;  // (n_embd)
    Weight output;       // (n_vocab, n_embd); == tok_embd when tied
    Weight rope_freqs;   // optional (n_rot/2)
    // Optional classification head (rerankers, model/pooling): cls (n_cls, n_embd) + cls_b (n_cls), then
    // cls_out (n_cls_out, n_cls, or n_embd without cls) + cls_out_b (n_cls_out).
    Weight cls, cls_b, cls_out, cls_out_b;
    std::vector<LayerWeights> layers;
    NextnWeights nextn;                         // empty unless the model has an MTP block (HParams::n_nextn)
    std::vector<AlignedBytes> repacked;         // owns the data of every weight whose layout is not gguf
    std::vector<std::vector<float>> owned_f32;  // float copies made at load (conv_taps)
};

}  // namespace bee
