// app/cmd_synth: `bee gguf synth OUT.gguf` — a model of a published shape with seeded random weights,
// written with our GgufWriter, for benchmarks at sizes the packaged models do not cover (the weights are
// noise: the text it generates is meaningless, the work per token is the real model's).
// The tokenizer block is copied from a BPE vocab GGUF (e.g. ../shared/data/vocab/ggml-vocab-gpt-2.gguf)
// and padded with unused tokens up to the shape's vocabulary size.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "app/args.h"
#include "app/commands.h"
#include "base/error.h"
#include "base/fp16.h"
#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"

namespace bee {

namespace {

// A decoder-only shape (llama-style layer: attention with optional q/k/v bias, gated FFN, tied output).
struct SynthShape {
    const char* name;
    const char* arch;
    int n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab, n_ctx;
    float rope_theta, norm_eps;
    bool qkv_bias;
};

// Qwen2.5-0.5B (config.json of Qwen/Qwen2.5-0.5B: hidden 896, 24 layers, 14 heads, 2 KV heads,
// intermediate 4864, vocab 151936, rope_theta 1e6, rms_norm_eps 1e-6, tied embeddings).
const SynthShape kShapes[] = {
    {"qwen2.5-0.5b", "qwen2", 896, 24, 14, 2, 4864, 151936, 32768, 1e6f, 1e-6f, true},
};

struct SynthOptions {
    std::vector<std::string> pos;  // OUT.gguf
    std::string shape = "qwen2.5-0.5b", vocab, type = "f16";
    int32_t seed = 42, n_layer = 0;
};

// splitmix64: a fast seeded stream (the weights only need to be reproducible, not good random numbers).
struct Rng {
    uint64_t s;
    uint64_t next() {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    float uniform(float scale) { return scale * (float)((double)(next() >> 11) * 0x1.0p-53 * 2.0 - 1.0); }
};

// Adds a (ne1, ne0) matrix of uniform values in [-scale, scale] as F16 or F32.
void add_matrix(GgufWriter& w, const std::string& name, int64_t ne0, int64_t ne1, float scale, bool f16, Rng& rng) {
    const size_t n = (size_t)ne0 * (size_t)ne1;
    if (f16) {
        std::vector<fp16_t> v(n);
        for (fp16_t& x : v) x = fp32_to_fp16(rng.uniform(scale));
        w.add_tensor(name, GgmlType::F16, {ne0, ne1}, v.data(), n * sizeof(fp16_t));
    } else {
        std::vector<float> v(n);
        for (float& x : v) x = rng.uniform(scale);
        w.add_tensor(name, GgmlType::F32, {ne0, ne1}, v.data(), n * sizeof(float));
    }
}

// A 1-D F32 vector: `base` plus uniform noise of `scale` (norm weights around 1, biases around 0).
void add_vector(GgufWriter& w, const std::string& name, int64_t n, float base, float scale, Rng& rng) {
    std::vector<float> v((size_t)n);
    for (float& x : v) x = base + rng.uniform(scale);
    w.add_tensor(name, GgmlType::F32, {n}, v.data(), v.size() * sizeof(float));
}

// Copies tokenizer.* from a BPE vocab file and pads tokens / token types (and scores if present) to n_vocab.
void copy_tokenizer(const std::string& path, int n_vocab, GgufWriter& w) {
    const GgufFile v = GgufFile::open(path);
    if (v.get_str("tokenizer.ggml.model", "") != "gpt2")
        fail("%s: tokenizer.ggml.model is '%s'; synth needs a BPE ('gpt2') vocab file", path.c_str(),
             v.get_str("tokenizer.ggml.model", "").c_str());
    std::vector<std::string> tokens = v.get_str_array("tokenizer.ggml.tokens");
    if ((int64_t)tokens.size() > n_vocab)
        fail("%s: %zu tokens, more than the shape's vocabulary of %d", path.c_str(), tokens.size(), n_vocab);
    const size_t n_real = tokens.size();
    for (const auto& [key, value] : v.metadata())
        if (key.rfind("tokenizer.", 0) == 0) w.set(key, value);
    for (size_t i = n_real; i < (size_t)n_vocab; i++) tokens.push_back(strfmt("<|synth_pad_%zu|>", i));
    w.set_str_array("tokenizer.ggml.tokens", tokens);
    std::vector<int32_t> types;
    if (v.has("tokenizer.ggml.token_type"))
        for (int64_t t : v.get_int_array("tokenizer.ggml.token_type")) types.push_back((int32_t)t);
    types.resize(n_real, 1);           // normal
    types.resize((size_t)n_vocab, 5);  // unused
    w.set_i32_array("tokenizer.ggml.token_type", types);
    if (v.has("tokenizer.ggml.scores")) {
        std::vector<float> scores = v.get_float_array("tokenizer.ggml.scores");
        scores.resize((size_t)n_vocab, 0.0f);
        w.set_f32_array("tokenizer.ggml.scores", scores);
    }
}

void synth(const SynthShape& s, const SynthOptions& o) {
    const bool f16 = o.type == "f16";
    const int n_layer = o.n_layer > 0 ? o.n_layer : s.n_layer;
    const std::string a = s.arch;
    GgufWriter w;
    w.set_str("general.architecture", a);
    w.set_str("general.name", strfmt("synthetic %s shape, seed %d", s.name, o.seed));
    w.set_u32("general.file_type", f16 ? 1 : 0);
    w.set_u32(a + ".context_length", (uint32_t)s.n_ctx);
    w.set_u32(a + ".embedding_length", (uint32_t)s.n_embd);
    w.set_u32(a + ".block_count", (uint32_t)n_layer);
    w.set_u32(a + ".feed_forward_length", (uint32_t)s.n_ff);
    w.set_u32(a + ".attention.head_count", (uint32_t)s.n_head);
    w.set_u32(a + ".attention.head_count_kv", (uint32_t)s.n_head_kv);
    w.set_f32(a + ".rope.freq_base", s.rope_theta);
    w.set_f32(a + ".attention.layer_norm_rms_epsilon", s.norm_eps);
    copy_tokenizer(o.vocab, s.n_vocab, w);

    Rng rng{(uint64_t)o.seed};
    const int64_t e = s.n_embd, hd = s.n_embd / s.n_head, nkv = (int64_t)s.n_head_kv * hd;
    // note: uniform(±sqrt(3/n_in)) keeps each matmul's outputs at about the scale of its inputs
    const auto sc = [](int64_t n_in) { return std::sqrt(3.0f / (float)n_in); };
    add_matrix(w, "token_embd.weight", e, s.n_vocab, 0.05f, f16, rng);  // (n_vocab, n_embd), also the output
    add_vector(w, "output_norm.weight", e, 1.0f, 0.1f, rng);
    for (int il = 0; il < n_layer; il++) {
        const std::string p = strfmt("blk.%d.", il);
        add_vector(w, p + "attn_norm.weight", e, 1.0f, 0.1f, rng);
        add_matrix(w, p + "attn_q.weight", e, e, sc(e), f16, rng);    // (n_head * head_dim, n_embd)
        add_matrix(w, p + "attn_k.weight", e, nkv, sc(e), f16, rng);  // (n_head_kv * head_dim, n_embd)
        add_matrix(w, p + "attn_v.weight", e, nkv, sc(e), f16, rng);
        if (s.qkv_bias) {
            add_vector(w, p + "attn_q.bias", e, 0.0f, 0.1f, rng);
            add_vector(w, p + "attn_k.bias", nkv, 0.0f, 0.1f, rng);
            add_vector(w, p + "attn_v.bias", nkv, 0.0f, 0.1f, rng);
        }
        add_matrix(w, p + "attn_output.weight", e, e, sc(e), f16, rng);
        add_vector(w, p + "ffn_norm.weight", e, 1.0f, 0.1f, rng);
        add_matrix(w, p + "ffn_gate.weight", e, s.n_ff, sc(e), f16, rng);  // (n_ff, n_embd)
        add_matrix(w, p + "ffn_up.weight", e, s.n_ff, sc(e), f16, rng);
        add_matrix(w, p + "ffn_down.weight", s.n_ff, e, sc(s.n_ff), f16, rng);  // (n_embd, n_ff)
    }
    w.write(o.pos[0]);
    printf("wrote %s: %s shape (%s, %d layers), %s weights, seed %d, tokenizer from %s\n", o.pos[0].c_str(), s.name,
           s.arch, n_layer, o.type.c_str(), o.seed, o.vocab.c_str());
}

}  // namespace

int cmd_gguf_synth(int argc, char** argv) {
    SynthOptions o;
    std::string names;
    for (const SynthShape& s : kShapes) names += std::string(names.empty() ? "" : ", ") + s.name;
    ArgParser p("bee gguf synth",
                "Writes a model of a known shape with seeded random weights (shapes: " + names + ").");
    p.positional(&o.pos, "OUT.gguf");
    p.str("--shape", &o.shape, "NAME", "model shape [qwen2.5-0.5b]");
    p.str("--vocab", &o.vocab, "FILE", "BPE vocab GGUF whose tokenizer.* keys are copied (required)");
    p.str("--type", &o.type, "TYPE", "weight matrix type: f16 or f32 [f16]");
    p.i32("--seed", &o.seed, "random seed [42]", 0, 1 << 30);
    p.i32("--layers", &o.n_layer, "layers (0: the shape's) [0]", 0, 4096);
    try {
        if (!p.parse(argc, argv)) return 0;
        if (o.pos.size() != 1) fail("expected one output file OUT.gguf");
        if (o.vocab.empty()) fail("--vocab FILE is required (e.g. ../shared/data/vocab/ggml-vocab-gpt-2.gguf)");
        if (o.type != "f16" && o.type != "f32")
            fail("invalid value '%s' for --type: expected f16 or f32", o.type.c_str());
    } catch (const Error& e) {
        fprintf(stderr, "error: %s\n%s", e.what(), p.usage().c_str());
        return 2;
    }
    for (const SynthShape& s : kShapes) {
        if (o.shape != s.name) continue;
        try {
            synth(s, o);
            return 0;
        } catch (const std::exception& e) {
            fprintf(stderr, "error: %s\n", e.what());
            return 1;
        }
    }
    fprintf(stderr, "error: unknown --shape '%s' (one of: %s)\n", o.shape.c_str(), names.c_str());
    return 2;
}

}  // namespace bee
