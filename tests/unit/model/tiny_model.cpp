// tests/unit/model/tiny_model: writes tiny seeded random models with llama.cpp's GGUF names and an SPM vocab.
#include "tiny_model.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "base/error.h"
#include "gguf/gguf_writer.h"
#include "quant/quant.h"

namespace bee::test {

namespace {

// splitmix64: a portable seeded generator (std distributions differ between standard libraries).
struct Rng {
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 0x1234567ull) {}
    uint64_t next() {
        uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    float uniform() { return (float)((double)(next() >> 11) * (2.0 / 9007199254740992.0) - 1.0); }  // [-1, 1)
};

std::vector<float> uniform(Rng& rng, size_t n, float amp, float center = 0.0f) {
    std::vector<float> v(n);
    for (float& x : v) x = center + amp * rng.uniform();
    return v;
}

struct Builder {
    const TinyConfig& cfg;
    GgufWriter& gw;
    const TensorHook& hook;
    Rng rng;

    void put(const std::string& name, GgmlType type, std::vector<int64_t> ne, std::vector<uint8_t> bytes) {
        TensorSpec t{name, type, std::move(ne), std::move(bytes)};
        if (hook && !hook(t)) return;
        gw.add_tensor(t.name, t.type, t.ne, t.bytes.data(), t.bytes.size());
    }
    // 1-D F32 tensor of n values.
    std::vector<float> vec(const std::string& name, int64_t n, float amp, float center) {
        std::vector<float> v = uniform(rng, (size_t)n, amp, center);
        std::vector<uint8_t> b(v.size() * sizeof(float));
        memcpy(b.data(), v.data(), b.size());
        put(name, GgmlType::F32, {n}, std::move(b));
        return v;
    }
    // (rows, cols) matrix in cfg.wtype with entries U(-amp, amp); returns what the file holds, as float.
    std::vector<float> mat(const std::string& name, int64_t rows, int64_t cols, float amp) {
        std::vector<float> v = uniform(rng, (size_t)(rows * cols), amp);
        const GgmlType t = cfg.wtype;
        std::vector<uint8_t> b(ggml_row_size(t, cols) * rows);
        if (t == GgmlType::F32) {
            memcpy(b.data(), v.data(), b.size());
        } else {
            quantize_matrix(t, v.data(), b.data(), rows, cols);
            const QuantTraits* qt = quant_traits(t);
            for (int64_t r = 0; r < rows; r++)
                qt->dequantize_row(b.data() + r * ggml_row_size(t, cols), v.data() + r * cols, cols);
        }
        put(name, t, {cols, rows}, std::move(b));
        return v;
    }
    // Variance-preserving amplitude for a matrix with `cols` inputs.
    static float amp_for(int64_t cols) { return std::sqrt(3.0f / (float)cols); }
};

// GgufWriter setters that skip the keys a config asks to omit.
struct MetaWriter {
    GgufWriter& gw;
    const std::vector<std::string>& omit;
    bool keep(const std::string& k) const { return std::find(omit.begin(), omit.end(), k) == omit.end(); }
    void u32(const std::string& k, uint32_t v) {
        if (keep(k)) gw.set_u32(k, v);
    }
    void f32(const std::string& k, float v) {
        if (keep(k)) gw.set_f32(k, v);
    }
    void str(const std::string& k, const std::string& v) {
        if (keep(k)) gw.set_str(k, v);
    }
    void strs(const std::string& k, const std::vector<std::string>& v) {
        if (keep(k)) gw.set_str_array(k, v);
    }
    void f32s(const std::string& k, const std::vector<float>& v) {
        if (keep(k)) gw.set_f32_array(k, v);
    }
    void i32s(const std::string& k, const std::vector<int32_t>& v) {
        if (keep(k)) gw.set_i32_array(k, v);
    }
};

void write_vocab(MetaWriter& gw, int n_vocab) {
    std::vector<std::string> text = {"<unk>", "<s>", "</s>"};
    std::vector<int32_t> type = {2, 3, 3};
    for (int b = 0; b < 256; b++) {
        char hex[8];
        snprintf(hex, sizeof(hex), "<0x%02X>", b);
        text.push_back(hex);
        type.push_back(6);
    }
    for (int i = 0; (int)text.size() < n_vocab; i++) {
        text.push_back("\xe2\x96\x81t" + std::to_string(i));  // "▁t<i>"
        type.push_back(1);
    }
    if ((int)text.size() != n_vocab) fail("tiny model: n_vocab %d is smaller than the 259 base tokens", n_vocab);
    std::vector<float> scores(text.size());
    for (size_t i = 0; i < scores.size(); i++) scores[i] = -(float)i;
    gw.str("tokenizer.ggml.model", "llama");
    gw.strs("tokenizer.ggml.tokens", text);
    gw.f32s("tokenizer.ggml.scores", scores);
    gw.i32s("tokenizer.ggml.token_type", type);
    gw.u32("tokenizer.ggml.bos_token_id", 1);
    gw.u32("tokenizer.ggml.eos_token_id", 2);
    gw.u32("tokenizer.ggml.unknown_token_id", 0);
}

void write_hparams(MetaWriter& gw, const TinyConfig& c, const std::string& arch_name) {
    const std::string a = c.arch + ".";
    gw.str("general.architecture", arch_name);
    gw.str("general.name", "tiny-" + c.arch);
    gw.u32(a + "context_length", (uint32_t)c.n_ctx_train);
    gw.u32(a + "embedding_length", (uint32_t)c.n_embd);
    gw.u32(a + "block_count", (uint32_t)c.n_layer);
    gw.u32(a + "feed_forward_length", (uint32_t)c.n_ff);
    gw.u32(a + "attention.head_count", (uint32_t)c.n_head);
    gw.u32(a + "attention.head_count_kv", (uint32_t)c.n_head_kv);
    gw.u32(a + "attention.key_length", (uint32_t)c.head_dim);
    gw.u32(a + "attention.value_length", (uint32_t)c.head_dim);
    gw.f32(a + "attention.layer_norm_rms_epsilon", c.norm_eps);
    gw.f32(a + "rope.freq_base", c.rope_base);
    gw.u32(a + "rope.dimension_count", (uint32_t)(c.n_rot > 0 ? c.n_rot : c.head_dim));
    if (c.rope_scale > 0) {
        gw.str(a + "rope.scaling.type", "linear");
        gw.f32(a + "rope.scaling.factor", c.rope_scale);
    }
    if (c.n_swa > 0) gw.u32(a + "attention.sliding_window", (uint32_t)c.n_swa);
    if (c.rope_base_swa != 0.0f) gw.f32(a + "rope.freq_base_swa", c.rope_base_swa);
}

}  // namespace

TinyConfig tiny_config(const std::string& preset) {
    TinyConfig c;
    if (preset == "llama") {
    } else if (preset == "llama_tied") {  // also llama-3 style rope: freq factors and linear scaling
        c.tied_output = true;
        c.rope_freqs = true;
        c.rope_scale = 2.0f;
        c.seed = 2;
    } else if (preset == "qwen2") {
        c.arch = "qwen2";
        c.qkv_bias = true;
        c.n_rot = 8;  // partial rotary: half of each head turns
        c.rope_base = 1000000.0f;
        c.seed = 3;
    } else if (preset == "qwen3") {
        c.arch = "qwen3";
        c.qk_norm = true;
        c.n_layer = 3;
        c.rope_base = 1000000.0f;
        c.seed = 4;
    } else if (preset == "gemma3") {
        c.arch = "gemma3";
        c.qk_norm = true;
        c.post_norms = true;
        c.tied_output = true;
        c.n_layer = 7;  // layers 0-4 and 6 local (window 4), layer 5 global
        c.n_swa = 4;
        c.rope_base = 1000000.0f;
        c.rope_base_swa = 10000.0f;
        c.rope_scale = 8.0f;  // global layers only, as in Gemma 3 4B+
        c.seed = 5;
    } else if (preset == "llama_hd64") {  // 64-wide heads: rotated q8_0 / q4_0 KV (kv_rot_group), 4 layers
        c.n_embd = 128;
        c.head_dim = 64;
        c.n_layer = 4;
        c.seed = 8;
    } else if (preset == "llama_q8_0") {
        c.wtype = GgmlType::Q8_0;
        c.seed = 6;
    } else if (preset == "llama_q3_k") {  // a weight type without a device matmul
        c.wtype = GgmlType::Q3_K;
        c.n_embd = 256;
        c.head_dim = 64;
        c.n_ff = 512;
        c.seed = 9;
    } else if (preset == "llama_q4_k") {  // every matrix's input dim a multiple of 256
        c.wtype = GgmlType::Q4_K;
        c.n_embd = 256;
        c.head_dim = 64;
        c.n_ff = 512;
        c.seed = 7;
    } else {
        fail("tiny model: unknown preset '%s'", preset.c_str());
    }
    return c;
}

TinyWeights write_tiny_model(const TinyConfig& c, const std::string& path, const TensorHook& hook,
                             const std::string& arch_name) {
    GgufWriter gw;
    MetaWriter meta{gw, c.omit_keys};
    write_hparams(meta, c, arch_name.empty() ? c.arch : arch_name);
    write_vocab(meta, c.n_vocab);
    Builder b{c, gw, hook, Rng(c.seed)};
    const int64_t e = c.n_embd, nq = (int64_t)c.n_head * c.head_dim, nk = (int64_t)c.n_head_kv * c.head_dim;
    TinyWeights w;
    w.tok_embd = b.mat("token_embd.weight", c.n_vocab, e, 1.0f);
    w.output_norm = b.vec("output_norm.weight", e, 0.2f, 1.0f);
    w.output = c.tied_output ? w.tok_embd : b.mat("output.weight", c.n_vocab, e, 2.0f * Builder::amp_for(e));
    if (c.rope_freqs) w.rope_freqs = b.vec("rope_freqs.weight", (c.n_rot > 0 ? c.n_rot : c.head_dim) / 2, 1.5f, 2.5f);
    w.layers.resize(c.n_layer);
    for (int il = 0; il < c.n_layer; il++) {
        const std::string p = "blk." + std::to_string(il) + ".";
        TinyLayer& L = w.layers[il];
        L.attn_norm = b.vec(p + "attn_norm.weight", e, 0.2f, 1.0f);
        L.wq = b.mat(p + "attn_q.weight", nq, e, Builder::amp_for(e));
        L.wk = b.mat(p + "attn_k.weight", nk, e, Builder::amp_for(e));
        L.wv = b.mat(p + "attn_v.weight", nk, e, Builder::amp_for(e));
        if (c.qkv_bias) {
            L.bq = b.vec(p + "attn_q.bias", nq, 0.2f, 0.0f);
            L.bk = b.vec(p + "attn_k.bias", nk, 0.2f, 0.0f);
            L.bv = b.vec(p + "attn_v.bias", nk, 0.2f, 0.0f);
        }
        if (c.qk_norm) {
            L.q_norm = b.vec(p + "attn_q_norm.weight", c.head_dim, 0.2f, 1.0f);
            L.k_norm = b.vec(p + "attn_k_norm.weight", c.head_dim, 0.2f, 1.0f);
        }
        L.wo = b.mat(p + "attn_output.weight", e, nq, Builder::amp_for(nq));
        if (c.post_norms) L.post_attn_norm = b.vec(p + "post_attention_norm.weight", e, 0.2f, 1.0f);
        L.ffn_norm = b.vec(p + "ffn_norm.weight", e, 0.2f, 1.0f);
        L.ffn_gate = b.mat(p + "ffn_gate.weight", c.n_ff, e, Builder::amp_for(e));
        L.ffn_up = b.mat(p + "ffn_up.weight", c.n_ff, e, Builder::amp_for(e));
        L.ffn_down = b.mat(p + "ffn_down.weight", e, c.n_ff, Builder::amp_for(c.n_ff));
        if (c.post_norms) L.post_ffn_norm = b.vec(p + "post_ffw_norm.weight", e, 0.2f, 1.0f);
    }
    gw.write(path);
    return w;
}

const TinyModel& tiny_model(const std::string& preset) {
    static std::map<std::string, std::unique_ptr<TinyModel>> cache;
    std::unique_ptr<TinyModel>& m = cache[preset];
    if (!m) {
        m = std::make_unique<TinyModel>();
        m->cfg = tiny_config(preset);
        m->path = temp_path(preset);
        m->w = write_tiny_model(m->cfg, m->path);
        m->model = Model::load(m->path);
        unlink(m->path.c_str());  // the mapping stays valid; nothing is left behind in the temp dir
    }
    return *m;
}

std::string temp_path(const std::string& stem) {
    static int counter = 0;
    return ::testing::TempDir() + "bee_tiny_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + "_" +
           stem + ".gguf";
}

std::vector<int32_t> tiny_tokens(int n, int n_vocab, uint32_t seed) {
    Rng rng(seed + 1000);
    std::vector<int32_t> t(n);
    for (int32_t& x : t) x = (int32_t)(rng.next() % (uint64_t)n_vocab);
    return t;
}

}  // namespace bee::test
