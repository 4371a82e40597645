// tests/unit/model/tiny_model: tiny seeded random GGUF models of every architecture, written by GgufWriter.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gguf/ggml_type.h"
#include "model/model.h"

namespace bee::test {

// Shape and options of a tiny model. Architecture semantics (rope mode, FFN activation, sliding
// layers) follow from `arch`; the flags say which optional tensors are written.
struct TinyConfig {
    std::string arch = "llama";
    int n_vocab = 300;  // 3 specials + 256 byte tokens + filler pieces
    int n_embd = 64;
    int n_layer = 2;
    int n_head = 4;
    int n_head_kv = 2;
    int head_dim = 16;
    int n_ff = 96;
    int n_ctx_train = 256;
    float norm_eps = 1e-6f;
    float rope_base = 10000.0f;
    float rope_base_swa = 0.0f;  // gemma3: rope.freq_base_swa (0: key not written; NaN, inf, < 0 are written)
    int n_rot = 0;               // rope.dimension_count (0: head_dim)
    float rope_scale = 0.0f;     // rope.scaling.type linear with this factor (0: none); not on sliding layers
    bool rope_freqs = false;     // rope_freqs.weight: (n_rot/2) divisors of theta
    int n_swa = 0;               // attention.sliding_window (0: key not written)
    bool qkv_bias = false;
    bool qk_norm = false;
    bool post_norms = false;
    bool tied_output = false;    // no output.weight: the head reuses token_embd
    GgmlType wtype = GgmlType::F32;  // type of every 2-D weight (1-D norms and biases stay F32)
    uint32_t seed = 1;
    std::vector<std::string> omit_keys;  // metadata keys left out of the file (load error tests)
};

// Weights as float, exactly as the file holds them (quantized types dequantized back). Shapes are
// (rows, cols) row-major with cols the input dimension, i.e. GGUF's (ne1, ne0).
struct TinyLayer {
    std::vector<float> attn_norm;                // (n_embd)
    std::vector<float> wq, wk, wv, wo;           // (n_head*hd, n_embd), (n_head_kv*hd, n_embd) x2, (n_embd, n_head*hd)
    std::vector<float> bq, bk, bv;               // (n_head*hd), (n_head_kv*hd) x2, empty if none
    std::vector<float> q_norm, k_norm;           // (hd), empty if none
    std::vector<float> post_attn_norm;           // (n_embd), empty if none
    std::vector<float> ffn_norm;                 // (n_embd)
    std::vector<float> ffn_gate, ffn_up;         // (n_ff, n_embd)
    std::vector<float> ffn_down;                 // (n_embd, n_ff)
    std::vector<float> post_ffn_norm;            // (n_embd), empty if none
};
struct TinyWeights {
    std::vector<float> tok_embd;                 // (n_vocab, n_embd)
    std::vector<float> output_norm;              // (n_embd)
    std::vector<float> output;                   // (n_vocab, n_embd); == tok_embd when tied
    std::vector<float> rope_freqs;               // (n_rot/2), empty if none
    std::vector<TinyLayer> layers;
};

// One tensor on its way into the file; a hook may change it or drop it (return false).
struct TensorSpec {
    std::string name;
    GgmlType type;
    std::vector<int64_t> ne;
    std::vector<uint8_t> bytes;
};
using TensorHook = std::function<bool(TensorSpec&)>;

// Presets: "llama", "llama_tied", "qwen2", "qwen3", "gemma3", "llama_q8_0", "llama_q4_k".
TinyConfig tiny_config(const std::string& preset);

// Writes the model to `path` (general.architecture = arch_name, or cfg.arch if empty) and returns its
// weights. `hook` sees every tensor before it is added.
TinyWeights write_tiny_model(const TinyConfig& cfg, const std::string& path, const TensorHook& hook = {},
                             const std::string& arch_name = "");

// A written and loaded preset, cached for the whole test binary.
struct TinyModel {
    TinyConfig cfg;
    TinyWeights w;
    std::string path;
    std::unique_ptr<Model> model;
};
const TinyModel& tiny_model(const std::string& preset);

// A fresh path in the test temp dir (unique per call).
std::string temp_path(const std::string& stem);

// A fixed pseudo-random token sequence of length n in [0, n_vocab).
std::vector<int32_t> tiny_tokens(int n, int n_vocab, uint32_t seed);

}  // namespace bee::test
