// tests/unit/spec/dflash_test_drafter: small random DFlash drafters in either GGUF dialect (llama.cpp's
// `dflash`, the fork's `dflash-draft`), written by GgufWriter for a 300-token tiny target with n_embd 64
// (the loader's and the drafter's tests).
#pragma once
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "../model/tiny_model.h"
#include "base/fp16.h"
#include "gguf/gguf_writer.h"
#include "quant/quant.h"

namespace bee::test {

struct DrafterSpec {
    bool fork = false;  // general.architecture dflash-draft (else dflash)
    int H = 64, n_head = 4, n_head_kv = 2, hd = 16, n_layer = 2, n_ff = 96, block = 8;
    int64_t mask = 299;
    std::vector<int32_t> layers = {1, 2, 3};  // as stored in the file
    int n_draft = 0;                          // > 0: a d2t of this many ids
    GgmlType d2t_type = GgmlType::I64;
    int64_t d2t_last = -1;  // >= 0: the last d2t id
    float fc_scale = 0;     // != 0: an fc.scale tensor
    int n_swa = 0;          // > 0: attention.sliding_window with the pattern `swa`
    std::vector<bool> swa = {true, false};
    bool own_embd = false, own_output = false;
    bool f16 = false;                        // 2-D weights in f16 (norms stay f32)
    bool q8 = false;                         // 2-D weights whose rows are whole blocks in q8_0
    std::string skip;                        // a tensor left out
    std::function<void(GgufWriter&)> edit;   // metadata changes after the defaults
    std::function<void(GgufWriter&)> extra;  // more tensors
};

inline void add_weight(GgufWriter& w, const std::string& name, int64_t ne0, int64_t ne1, std::mt19937& rng, float scale,
                       bool f16, bool q8 = false) {
    std::normal_distribution<float> nd(0.0f, scale);
    std::vector<float> v((size_t)(ne0 * ne1));
    for (float& x : v) x = nd(rng);
    if (ne1 == 1)
        for (float& x : v) x += 1.0f;  // norm weights near 1
    std::vector<int64_t> ne = {ne0};
    if (ne1 != 1) ne.push_back(ne1);
    if (q8 && ne1 != 1 && ne0 % 32 == 0) {
        std::vector<uint8_t> q(ggml_row_size(GgmlType::Q8_0, ne0) * (size_t)ne1);
        quantize_matrix(GgmlType::Q8_0, v.data(), q.data(), ne1, ne0);
        return w.add_tensor(name, GgmlType::Q8_0, ne, q.data(), q.size());
    }
    if (!f16 || ne1 == 1) return w.add_tensor(name, GgmlType::F32, ne, v.data(), v.size() * sizeof(float));
    std::vector<fp16_t> h(v.size());
    for (size_t i = 0; i < v.size(); i++) h[i] = fp32_to_fp16(v[i]);
    w.add_tensor(name, GgmlType::F16, ne, h.data(), h.size() * sizeof(fp16_t));
}

inline std::string write_drafter(const DrafterSpec& s) {
    GgufWriter w;
    const std::string a = s.fork ? "dflash-draft" : "dflash";
    const int nv = 300, n_out = s.n_draft ? s.n_draft : nv;
    w.set_str("general.architecture", a);
    w.set_u32(a + ".block_count", s.n_layer);
    w.set_u32(a + ".embedding_length", s.H);
    w.set_u32(a + ".feed_forward_length", s.n_ff);
    w.set_u32(a + ".attention.head_count", s.n_head);
    w.set_u32(a + ".attention.head_count_kv", s.n_head_kv);
    w.set_u32(a + ".attention.key_length", s.hd);
    w.set_u32(a + ".attention.value_length", s.hd);
    w.set_f32(a + ".attention.layer_norm_rms_epsilon", 1e-6f);
    w.set_f32(a + ".rope.freq_base", 1e6f);
    if (s.fork) {
        w.set_u32(a + ".dflash.block_size", s.block);
        w.set_u32(a + ".dflash.mask_token_id", (uint32_t)s.mask);
        w.set_i32_array(a + ".dflash.target_layer_ids", s.layers);
        w.set_u32(a + ".dflash.n_target_features", (uint32_t)(s.layers.size() * s.H));
        w.set_bool(a + ".attention.causal", false);
    } else {
        w.set_u32(a + ".block_size", s.block);
        w.set_u32("tokenizer.ggml.mask_token_id", (uint32_t)s.mask);
        w.set_i32_array(a + ".target_layers", s.layers);
    }
    if (s.n_swa) {
        w.set_u32(a + ".attention.sliding_window", s.n_swa);
        std::vector<GgufValue> pat;
        for (bool b : s.swa) pat.push_back(GgufValue::make_bool(b));
        w.set(a + ".attention.sliding_window_pattern", GgufValue::make_array(GgufValueType::BOOL, pat));
    }
    if (s.edit) s.edit(w);
    std::mt19937 rng(5);
    auto add = [&](const std::string& name, int64_t ne0, int64_t ne1, float scale) {
        if (name != s.skip) add_weight(w, name, ne0, ne1, rng, scale, s.f16, s.q8);
    };
    const int64_t nf = (int64_t)s.layers.size() * s.H, nq = s.n_head * s.hd, nk = s.n_head_kv * s.hd;
    add(s.fork ? "dflash_fc.weight" : "fc.weight", nf, s.H, 0.1f);
    add(s.fork ? "dflash_hidden_norm.weight" : "enc.output_norm.weight", s.H, 1, 0.1f);
    if (s.fc_scale != 0) w.add_tensor("fc.scale", GgmlType::F32, {1}, &s.fc_scale, sizeof(float));
    add("output_norm.weight", s.H, 1, 0.1f);
    if (s.own_embd) add("token_embd.weight", s.H, nv, 1.0f);
    if (s.own_output) add("output.weight", s.H, n_out, 0.3f);
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
    for (int il = 0; il < s.n_layer; il++) {
        const std::string p = "blk." + std::to_string(il) + ".";
        add(p + "attn_norm.weight", s.H, 1, 0.1f);
        add(p + "attn_q.weight", s.H, nq, 0.1f);
        add(p + "attn_k.weight", s.H, nk, 0.1f);
        add(p + "attn_v.weight", s.H, nk, 0.1f);
        add(p + "attn_output.weight", nq, s.H, 0.1f);
        add(p + "attn_q_norm.weight", s.hd, 1, 0.1f);
        add(p + "attn_k_norm.weight", s.hd, 1, 0.1f);
        add(p + (s.fork ? "post_attention_norm.weight" : "ffn_norm.weight"), s.H, 1, 0.1f);
        add(p + "ffn_gate.weight", s.H, s.n_ff, 0.1f);
        add(p + "ffn_up.weight", s.H, s.n_ff, 0.1f);
        add(p + "ffn_down.weight", s.n_ff, s.H, 0.1f);
    }
    if (s.extra) s.extra(w);
    const std::string path = temp_path("dflash_drafter");
    w.write(path);
    return path;
}

}  // namespace bee::test
