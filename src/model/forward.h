// model/forward: the state one ubatch's forward pass runs on, and the building blocks architecture
// files are made of (norms, linear layers, self-attention with the KV cache, gated FFNs).
#pragma once
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "base/thread_pool.h"
#include "gguf/gguf.h"
#include "kv/kv_cache.h"
#include "model/hparams.h"
#include "model/lora.h"
#include "model/weights.h"

namespace bee {

// Scratch buffers sized for n_ubatch rows at construction (no allocation per step).
struct ForwardScratch {
    std::vector<float> xn;    // (n_rows, n_embd) normed input
    std::vector<float> q;     // (n_rows, n_head * head_dim)
    std::vector<float> k;     // (n_rows, n_head_kv * head_dim)
    std::vector<float> v;     // (n_rows, n_head_kv * head_dim_v)
    std::vector<float> att;   // (n_rows, n_head * head_dim_v)
    std::vector<float> out;   // (n_rows, n_embd) block output
    std::vector<float> ff_a;  // (n_rows, n_ff)
    std::vector<float> ff_b;  // (n_rows, n_ff)
    // qwen35 (empty for other models): qg (n_rows, n_head, 2 head_dim) the gated attention's query and
    // gate; of the Gated DeltaNet layers qkv and conv (n_rows, conv_ch) before and after the conv, z and o
    // (n_rows, d_inner), gb (n_rows, 4 H_v): beta and alpha logits, then per row the decay g and beta.
    std::vector<float> qg, qkv, conv, z, o, gb;
    void resize(const HParams& hp, int n_rows);
};

class RecurrentState;

struct ForwardCtx {
    const HParams& hp;
    const ModelWeights& w;
    ThreadPool& pool;
    KvCache& kv;
    int n_rows = 0;
    const int32_t* pos = nullptr;    // [n_rows]
    const int32_t* cells = nullptr;  // [n_rows] KV cell of each row
    // [n_rows] cells each row may attend to (ascending position), full and sliding-window layers.
    const std::vector<int32_t>* const* visible_full = nullptr;
    const std::vector<int32_t>* const* visible_swa = nullptr;
    float* x = nullptr;  // (n_rows, n_embd) residual stream
    ForwardScratch& s;
    const int32_t* seq = nullptr;  // [n_rows] sequence of each row
    RecurrentState* rs = nullptr;  // recurrent layers' state per sequence (model/recurrent_state.h), or none
    LoraBatch* lora = nullptr;     // the LoRA adapters the rows apply (model/lora.h), or none
};

// Calls fn(r0, r1) over contiguous ranges of the ubatch's rows, on the pool when there are enough rows.
// Every element is computed the same way whatever the split (batch invariance, DESIGN.md invariant 2).
template <class Fn>
void for_rows(const ForwardCtx& c, Fn&& fn) {
    constexpr int kMinRowsPerTask = 2;
    const int n_tasks = std::min(c.pool.size(), c.n_rows / kMinRowsPerTask);
    if (n_tasks <= 1) {
        fn(0, c.n_rows);
        return;
    }
    c.pool.run(n_tasks, [&](int t, int) { fn(c.n_rows * t / n_tasks, c.n_rows * (t + 1) / n_tasks); });
}

// out (n_rows, n) = rms_norm(in) * w, row by row.
void norm_rows(const ForwardCtx& c, const float* in, const Weight& w, float* out, int64_t n);
// out (n_rows, w.ne1) = in (n_rows, w.ne0) · wᵀ (+ bias if given).
void linear(const ForwardCtx& c, const Weight& w, const Weight& bias, const float* in, float* out);
// linear() of up to 4 weights on the same input: the input is quantized once for all (kernels.h).
struct LinearOut {
    const Weight* w;
    const Weight* bias;  // may point at an empty Weight
    float* out;
};
void linear_shared(const ForwardCtx& c, const float* in, std::initializer_list<LinearOut> outs);
// Per-head RMS norm over (n_rows, n_head, hd) in place, rows `stride` floats apart (0: n_head * hd).
void head_norm(const ForwardCtx& c, float* x, int n_head, int hd, const Weight& w, int64_t stride = 0);
// Self-attention of layer il on normed input xn into c.s.out: projections (+biases), per-head q/k
// norms when the layer has them, rope, KV write, attention over the visible cells, output projection.
void self_attention(ForwardCtx& c, int il, const float* xn);
// The middle of self_attention: rope on q (n_rows, n_head, hd) and k, K/V written into the layer's cells,
// attention over the visible cells into c.s.att (n_rows, n_head * head_dim_v).
void attend(ForwardCtx& c, int il, float* q, float* k, const float* v);

enum class FfnAct { silu, gelu };
// Gated FFN of layer il on normed input xn into c.s.out: down(act(gate(xn)) * up(xn)).
void ffn_gated(ForwardCtx& c, int il, const float* xn, FfnAct act);
// The residual step of a pre-norm block, one pass over the rows: y = rms_norm(y) * post when `post` is
// given (Gemma's post-norms), x += y, then xn = rms_norm(x) * next when `next` is given.
void residual_norm(const ForwardCtx& c, float* y, const Weight* post, const Weight* next, float* xn);
// A pre-norm decoder layer's input: xn = attn_norm(x). For il > 0 the previous layer's last
// residual_norm already wrote it (layer_output), so only layer 0 computes it here.
const float* layer_input(const ForwardCtx& c, int il);
// The layer's last residual step: x += post(y), and xn = the next layer's attn_norm(x) (none after the
// last layer: the engine normalizes only the rows that return logits).
void layer_output(const ForwardCtx& c, int il, float* y, const Weight* post);

// Binding helpers for architecture files: the tensor `name` with shape (ne0, ne1); throws Error naming
// the file and tensor if missing (when required), of another shape, or of an unsupported type.
Weight bind_weight(const GgufFile& f, const std::string& name, int64_t ne0, int64_t ne1, bool required = true);
// Reads `<arch>.<key>`; throws if missing and no default.
int64_t arch_int(const GgufFile& f, const std::string& arch, const char* key);
int64_t arch_int(const GgufFile& f, const std::string& arch, const char* key, int64_t def);
float arch_float(const GgufFile& f, const std::string& arch, const char* key, float def);
// Common hparams every decoder-only transformer has (n_embd, n_layer, heads, head dims, n_ff, eps,
// context length, vocab size, rope defaults); fills hp.layers with one entry per layer.
void load_common_hparams(const GgufFile& f, HParams& hp);
// Binds token_embd, output_norm, output (tied to token_embd if absent), rope_freqs (optional), and the
// optional classification head (bind_rank_head).
void bind_common_weights(const GgufFile& f, const HParams& hp, ModelWeights& w);
// Binds cls.{weight,bias} and cls.output.{weight,bias} where the file has them, with llama.cpp's names
// (model/pooling.cpp); throws Error naming the tensor if their shapes do not chain.
void bind_rank_head(const GgufFile& f, const HParams& hp, ModelWeights& w);

// Which optional per-layer tensors an architecture has (declared by the arch, not detected).
struct LayerTensors {
    bool qkv_bias = false;    // attn_{q,k,v}.bias
    bool qk_norm = false;     // attn_{q,k}_norm.weight
    bool post_norms = false;  // post_attention_norm.weight, post_ffw_norm.weight
};
// Binds blk.N.* attention and gated-FFN tensors of every layer with llama.cpp's names.
void bind_decoder_layers(const GgufFile& f, const HParams& hp, ModelWeights& w, LayerTensors opts);
// The pre-norm decoder layer: x += attn(norm(x)); x += ffn_silu(norm(x)).
void decoder_layer_prenorm(ForwardCtx& c, int il);

}  // namespace bee
