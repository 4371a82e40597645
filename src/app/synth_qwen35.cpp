// app/synth_qwen35: `bee gguf synth --shape qwen3.5-0.8b | qwen35-tiny`: a random-weight qwen35 model in
// upstream's layout (llama.cpp's convert_hf_to_gguf.py output for Qwen3_5ForCausalLM, read at commit
// 3f545becc: key names, tensor names and shapes, norm weights stored with the +1 folded in, ssm_a = -exp(A_log),
// ssm_conv1d {d_conv, conv_ch} in f32) with one MTP (NextN) block after the trunk
// (../shared/specs/drafters.md §4.1, §8.3, §8.5).
#include <cmath>
#include <cstdio>

#include "app/synth.h"
#include "base/error.h"
#include "gguf/gguf.h"

namespace bee {

namespace {

struct Qwen35Shape {
    const char* name;
    int n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff;
    int n_vocab;  // 0: the tokenizer's own size
    int n_ctx;
    int n_k_heads, n_v_heads, ssm_d, d_conv, full_attn_interval, n_rot;
    int sections[4];
    float rope_theta, norm_eps;
    bool tied;
};

const Qwen35Shape kQwen35Shapes[] = {
    // Qwen3.5-0.8B's text model (its config.json as known to us: hidden 1024, 24 layers with every 4th full
    // attention, 8 heads and 2 KV heads of 256, partial rotary 0.25, mrope sections [11, 11, 10],
    // intermediate 3584, linear attention 16 key and 16 value heads of 128, conv kernel 4, vocab 248320,
    // rope_theta 1e7, rms_norm_eps 1e-6, tied embeddings, one MTP layer).
    {"qwen3.5-0.8b",
     1024,
     24,
     8,
     2,
     256,
     3584,
     248320,
     262144,
     16,
     16,
     128,
     4,
     4,
     64,
     {11, 11, 10, 0},
     1e7f,
     1e-6f,
     true},
    // For tests: 3 Gated DeltaNet layers and 1 attention layer, 2 key heads for 4 value heads (tiling), an
    // untied output head.
    {"qwen35-tiny", 64, 4, 4, 2, 32, 128, 0, 4096, 2, 4, 16, 4, 4, 8, {2, 1, 1, 0}, 10000.0f, 1e-6f, false},
};

// note: uniform(±sqrt(3/n_in)) keeps each matmul's outputs at about the scale of its inputs.
float sc(int64_t n_in) { return std::sqrt(3.0f / (float)n_in); }

void write_metadata(const Qwen35Shape& s, const SynthOptions& o, int n_layer, GgufWriter& w) {
    const std::string a = "qwen35";
    w.set_str("general.architecture", a);
    w.set_str("general.name", strfmt("synthetic %s shape, seed %d", s.name, o.seed));
    w.set_u32("general.file_type", o.type == "f16" ? 1 : 0);
    w.set_u32(a + ".context_length", (uint32_t)s.n_ctx);
    w.set_u32(a + ".embedding_length", (uint32_t)s.n_embd);
    w.set_u32(a + ".block_count", (uint32_t)(n_layer + 1));  // the trunk and the MTP block
    w.set_u32(a + ".nextn_predict_layers", 1);
    w.set_u32(a + ".feed_forward_length", (uint32_t)s.n_ff);
    w.set_u32(a + ".attention.head_count", (uint32_t)s.n_head);
    w.set_u32(a + ".attention.head_count_kv", (uint32_t)s.n_head_kv);
    w.set_u32(a + ".attention.key_length", (uint32_t)s.head_dim);
    w.set_u32(a + ".attention.value_length", (uint32_t)s.head_dim);
    w.set_f32(a + ".attention.layer_norm_rms_epsilon", s.norm_eps);
    w.set_f32(a + ".rope.freq_base", s.rope_theta);
    w.set_u32(a + ".rope.dimension_count", (uint32_t)s.n_rot);
    w.set_i32_array(a + ".rope.dimension_sections", {s.sections[0], s.sections[1], s.sections[2], s.sections[3]});
    w.set_u32(a + ".ssm.conv_kernel", (uint32_t)s.d_conv);
    w.set_u32(a + ".ssm.state_size", (uint32_t)s.ssm_d);
    w.set_u32(a + ".ssm.group_count", (uint32_t)s.n_k_heads);
    w.set_u32(a + ".ssm.time_step_rank", (uint32_t)s.n_v_heads);
    w.set_u32(a + ".ssm.inner_size", (uint32_t)(s.n_v_heads * s.ssm_d));
    w.set_u32(a + ".full_attention_interval", (uint32_t)s.full_attn_interval);
}

// Stored RMSNorm weights: 1 + w with w around 0 (the converter folds in the +1).
void add_norm(GgufWriter& w, const std::string& name, int64_t n, SynthRng& rng) {
    synth_vector(w, name, n, 1.0f, 0.1f, rng);
}

// attn_norm .. ffn_down of a gated full-attention block (trunk attention layers and the MTP block).
void add_attention_block(const Qwen35Shape& s, const std::string& p, bool f16, GgufWriter& w, SynthRng& rng) {
    const int64_t e = s.n_embd, nq = (int64_t)s.n_head * s.head_dim, nkv = (int64_t)s.n_head_kv * s.head_dim;
    add_norm(w, p + "attn_norm.weight", e, rng);
    synth_matrix(w, p + "attn_q.weight", e, 2 * nq, sc(e), f16, rng);  // per head [query | gate]
    synth_matrix(w, p + "attn_k.weight", e, nkv, sc(e), f16, rng);
    synth_matrix(w, p + "attn_v.weight", e, nkv, sc(e), f16, rng);
    add_norm(w, p + "attn_q_norm.weight", s.head_dim, rng);
    add_norm(w, p + "attn_k_norm.weight", s.head_dim, rng);
    synth_matrix(w, p + "attn_output.weight", nq, e, sc(nq), f16, rng);
}

void add_gdn_block(const Qwen35Shape& s, const std::string& p, bool f16, GgufWriter& w, SynthRng& rng) {
    const int64_t e = s.n_embd, d = s.ssm_d, hv = s.n_v_heads, di = hv * d;
    const int64_t conv_ch = (int64_t)(2 * s.n_k_heads + s.n_v_heads) * d;
    add_norm(w, p + "attn_norm.weight", e, rng);
    synth_matrix(w, p + "attn_qkv.weight", e, conv_ch, sc(e), f16, rng);  // q | k | v
    synth_matrix(w, p + "attn_gate.weight", e, di, sc(e), f16, rng);      // z
    std::vector<float> taps((size_t)(s.d_conv * conv_ch));
    for (float& x : taps) x = rng.uniform(sc(s.d_conv));
    w.add_tensor(p + "ssm_conv1d.weight", GgmlType::F32, {s.d_conv, conv_ch}, taps.data(), taps.size() * sizeof(float));
    synth_vector(w, p + "ssm_dt.bias", hv, 1.0f, 0.5f, rng);
    std::vector<float> a((size_t)hv);
    for (float& x : a) x = -(8.5f + rng.uniform(7.5f));  // -exp(A_log) with A_log = log(U(1, 16))
    w.add_tensor(p + "ssm_a", GgmlType::F32, {hv}, a.data(), a.size() * sizeof(float));
    synth_matrix(w, p + "ssm_beta.weight", e, hv, sc(e), f16, rng);
    synth_matrix(w, p + "ssm_alpha.weight", e, hv, sc(e), f16, rng);
    synth_vector(w, p + "ssm_norm.weight", d, 1.0f, 0.1f, rng);  // stored as trained: no +1
    synth_matrix(w, p + "ssm_out.weight", di, e, sc(di), f16, rng);
}

void add_ffn(const Qwen35Shape& s, const std::string& p, bool f16, GgufWriter& w, SynthRng& rng) {
    const int64_t e = s.n_embd;
    add_norm(w, p + "post_attention_norm.weight", e, rng);
    synth_matrix(w, p + "ffn_gate.weight", e, s.n_ff, sc(e), f16, rng);
    synth_matrix(w, p + "ffn_up.weight", e, s.n_ff, sc(e), f16, rng);
    synth_matrix(w, p + "ffn_down.weight", s.n_ff, e, sc(s.n_ff), f16, rng);
}

void write(const Qwen35Shape& s, const SynthOptions& o) {
    const bool f16 = o.type == "f16";
    const int n_layer = o.n_layer > 0 ? o.n_layer : s.n_layer;
    GgufWriter w;
    write_metadata(s, o, n_layer, w);
    int n_vocab = s.n_vocab;
    if (n_vocab == 0) n_vocab = (int)GgufFile::open(o.vocab).get_str_array("tokenizer.ggml.tokens").size();
    synth_copy_tokenizer(o.vocab, n_vocab, w);

    SynthRng rng{(uint64_t)o.seed};
    const int64_t e = s.n_embd;
    synth_matrix(w, "token_embd.weight", e, n_vocab, 0.05f, f16, rng);  // (n_vocab, n_embd)
    add_norm(w, "output_norm.weight", e, rng);
    if (!s.tied) synth_matrix(w, "output.weight", e, n_vocab, sc(e), f16, rng);
    for (int il = 0; il < n_layer; il++) {
        const std::string p = strfmt("blk.%d.", il);
        if ((il + 1) % s.full_attn_interval == 0) add_attention_block(s, p, f16, w, rng);
        else add_gdn_block(s, p, f16, w, rng);
        add_ffn(s, p, f16, w, rng);
    }
    const std::string p = strfmt("blk.%d.", n_layer);  // the MTP block: [enorm(emb) ; hnorm(h)] -> eh_proj
    synth_matrix(w, p + "nextn.eh_proj.weight", 2 * e, e, sc(2 * e), f16, rng);
    add_norm(w, p + "nextn.enorm.weight", e, rng);
    add_norm(w, p + "nextn.hnorm.weight", e, rng);
    add_norm(w, p + "nextn.shared_head_norm.weight", e, rng);
    add_attention_block(s, p, f16, w, rng);
    add_ffn(s, p, f16, w, rng);
    w.write(o.pos[0]);
    printf("wrote %s: %s shape (qwen35, %d layers + 1 MTP block, vocab %d), %s weights, seed %d, tokenizer from %s\n",
           o.pos[0].c_str(), s.name, n_layer, n_vocab, o.type.c_str(), o.seed, o.vocab.c_str());
}

}  // namespace

std::string synth_qwen35_shapes() {
    std::string s;
    for (const Qwen35Shape& q : kQwen35Shapes) s += std::string(s.empty() ? "" : ", ") + q.name;
    return s;
}

bool synth_qwen35(const SynthOptions& o) {
    for (const Qwen35Shape& s : kQwen35Shapes)
        if (o.shape == s.name) {
            write(s, o);
            return true;
        }
    return false;
}

}  // namespace bee
