// tests/unit/spec/eagle3_test_head: small random EAGLE-3 heads in llama.cpp's eagle3 layout, written by
// GgufWriter for a 300-token tiny target (the loader's and the drafter's tests).
#pragma once
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "../model/tiny_model.h"
#include "gguf/gguf_writer.h"

namespace bee::test {

struct HeadSpec {
    int H = 64, Ht = 64, n_head = 4, n_head_kv = 2, n_ff = 96;
    int n_draft = 0;  // > 0: a d2t of this many ids
    GgmlType d2t_type = GgmlType::I64;
    int32_t d2t_last = -1;  // >= 0: the last d2t id (out-of-range tests)
    bool norm_before_fc = false, norm_before_residual = false;
    bool write_enc_norm = true;  // enc.output_norm.weight when norm_before_fc
    bool own_embd = true, own_output = true;
    std::vector<int32_t> layers = {1, 2, 3};
    const char* layer_key = "eagle3.target_layers";
    std::function<void(GgufWriter&)> edit;  // metadata changes after the defaults
};

inline void add_f32(GgufWriter& w, const std::string& name, int64_t ne0, int64_t ne1, std::mt19937& rng, float scale) {
    std::normal_distribution<float> nd(0.0f, scale);
    std::vector<float> v((size_t)(ne0 * ne1));
    for (float& x : v) x = nd(rng);
    if (ne1 == 1)
        for (float& x : v) x += 1.0f;  // norm weights near 1
    std::vector<int64_t> ne = {ne0};
    if (ne1 != 1) ne.push_back(ne1);
    w.add_tensor(name, GgmlType::F32, ne, v.data(), v.size() * sizeof(float));
}

inline std::string write_head(const HeadSpec& s) {
    GgufWriter w;
    const int hd = s.H / s.n_head, nv = 300, n_out = s.n_draft ? s.n_draft : nv;
    w.set_str("general.architecture", "eagle3");
    w.set_u32("eagle3.block_count", 1);
    w.set_u32("eagle3.embedding_length", s.H);
    w.set_u32("eagle3.feed_forward_length", s.n_ff);
    w.set_u32("eagle3.attention.head_count", s.n_head);
    w.set_u32("eagle3.attention.head_count_kv", s.n_head_kv);
    w.set_u32("eagle3.vocab_size", nv);
    w.set_f32("eagle3.attention.layer_norm_rms_epsilon", 1e-5f);
    w.set_i32_array(s.layer_key, s.layers);
    w.set_u32("eagle3.target_hidden_size", s.Ht);
    w.set_bool("eagle3.norm_before_residual", s.norm_before_residual);
    w.set_bool("eagle3.norm_before_fc", s.norm_before_fc);
    if (s.edit) s.edit(w);
    std::mt19937 rng(7);
    if (s.own_embd) add_f32(w, "token_embd.weight", s.H, nv, rng, 1.0f);
    add_f32(w, "fc.weight", 3 * s.Ht, s.H, rng, 0.1f);
    if (s.norm_before_fc && s.write_enc_norm) add_f32(w, "enc.output_norm.weight", 3 * s.Ht, 1, rng, 0.1f);
    if (s.n_draft) {
        std::vector<int64_t> ids(s.n_draft);
        for (int i = 0; i < s.n_draft; i++) ids[i] = 7 * i % nv;
        if (s.d2t_last >= 0) ids.back() = s.d2t_last;
        if (s.d2t_type == GgmlType::I64) {
            w.add_tensor("d2t", GgmlType::I64, {s.n_draft}, ids.data(), ids.size() * 8);
        } else {
            std::vector<int32_t> ids32(ids.begin(), ids.end());
            w.add_tensor("d2t", GgmlType::I32, {s.n_draft}, ids32.data(), ids32.size() * 4);
        }
    }
    add_f32(w, "blk.0.attn_norm.weight", s.H, 1, rng, 0.1f);
    add_f32(w, "blk.0.attn_norm_2.weight", s.H, 1, rng, 0.1f);
    add_f32(w, "blk.0.attn_q.weight", 2 * s.H, s.n_head * hd, rng, 0.1f);
    add_f32(w, "blk.0.attn_k.weight", 2 * s.H, s.n_head_kv * hd, rng, 0.1f);
    add_f32(w, "blk.0.attn_v.weight", 2 * s.H, s.n_head_kv * hd, rng, 0.1f);
    add_f32(w, "blk.0.attn_output.weight", s.n_head * hd, s.H, rng, 0.1f);
    add_f32(w, "blk.0.ffn_norm.weight", s.H, 1, rng, 0.1f);
    add_f32(w, "blk.0.ffn_gate.weight", s.H, s.n_ff, rng, 0.1f);
    add_f32(w, "blk.0.ffn_up.weight", s.H, s.n_ff, rng, 0.1f);
    add_f32(w, "blk.0.ffn_down.weight", s.n_ff, s.H, rng, 0.1f);
    add_f32(w, "output_norm.weight", s.H, 1, rng, 0.1f);
    if (s.own_output) add_f32(w, "output.weight", s.H, n_out, rng, 0.3f);
    const std::string path = temp_path("eagle3_head");
    w.write(path);
    return path;
}

}  // namespace bee::test
