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
#include "app/synth.h"
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
    synth_copy_tokenizer(o.vocab, s.n_vocab, w);

    SynthRng rng{(uint64_t)o.seed};
    const int64_t e = s.n_embd, hd = s.n_embd / s.n_head, nkv = (int64_t)s.n_head_kv * hd;
    // note: uniform(±sqrt(3/n_in)) keeps each matmul's outputs at about the scale of its inputs
    const auto sc = [](int64_t n_in) { return std::sqrt(3.0f / (float)n_in); };
    synth_matrix(w, "token_embd.weight", e, s.n_vocab, 0.05f, f16, rng);  // (n_vocab, n_embd), also the output
    synth_vector(w, "output_norm.weight", e, 1.0f, 0.1f, rng);
    for (int il = 0; il < n_layer; il++) {
        const std::string p = strfmt("blk.%d.", il);
        synth_vector(w, p + "attn_norm.weight", e, 1.0f, 0.1f, rng);
        synth_matrix(w, p + "attn_q.weight", e, e, sc(e), f16, rng);    // (n_head * head_dim, n_embd)
        synth_matrix(w, p + "attn_k.weight", e, nkv, sc(e), f16, rng);  // (n_head_kv * head_dim, n_embd)
        synth_matrix(w, p + "attn_v.weight", e, nkv, sc(e), f16, rng);
        if (s.qkv_bias) {
            synth_vector(w, p + "attn_q.bias", e, 0.0f, 0.1f, rng);
            synth_vector(w, p + "attn_k.bias", nkv, 0.0f, 0.1f, rng);
            synth_vector(w, p + "attn_v.bias", nkv, 0.0f, 0.1f, rng);
        }
        synth_matrix(w, p + "attn_output.weight", e, e, sc(e), f16, rng);
        synth_vector(w, p + "ffn_norm.weight", e, 1.0f, 0.1f, rng);
        synth_matrix(w, p + "ffn_gate.weight", e, s.n_ff, sc(e), f16, rng);  // (n_ff, n_embd)
        synth_matrix(w, p + "ffn_up.weight", e, s.n_ff, sc(e), f16, rng);
        synth_matrix(w, p + "ffn_down.weight", s.n_ff, e, sc(s.n_ff), f16, rng);  // (n_embd, n_ff)
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
    names += ", " + synth_qwen35_shapes();
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
    try {
        for (const SynthShape& s : kShapes)
            if (o.shape == s.name) {
                synth(s, o);
                return 0;
            }
        if (synth_qwen35(o)) return 0;
    } catch (const std::exception& e) {
        fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    fprintf(stderr, "error: unknown --shape '%s' (one of: %s)\n", o.shape.c_str(), names.c_str());
    return 2;
}

}  // namespace bee
