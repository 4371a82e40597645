// tests/unit/spec/test_dflash_load: DflashModel::load on small random drafters written by GgufWriter in both
// dialects — llama.cpp's `dflash` and the fork's `dflash-draft` — with and without d2t, fc.scale, sliding
// layers, own or the target's token_embd and output, against a tiny llama target, and every refusal's message.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "../model/tiny_model.h"
#include "base/error.h"
#include "base/fp16.h"
#include "gguf/gguf_writer.h"
#include "spec/dflash/dflash_model.h"

namespace bee::test {
namespace {

// The tiny target: 4 layers, n_embd 64, 300 tokens.
const Model& target() {
    static std::unique_ptr<Model> m = [] {
        TinyConfig cfg = tiny_config("llama");
        cfg.n_layer = 4;
        const std::string path = temp_path("dflash_target");
        write_tiny_model(cfg, path);
        return Model::load(path);
    }();
    return *m;
}

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
    std::string skip;                        // a tensor left out
    std::function<void(GgufWriter&)> edit;   // metadata changes after the defaults
    std::function<void(GgufWriter&)> extra;  // more tensors
};

void add_weight(GgufWriter& w, const std::string& name, int64_t ne0, int64_t ne1, std::mt19937& rng, float scale,
                bool f16) {
    std::normal_distribution<float> nd(0.0f, scale);
    std::vector<float> v((size_t)(ne0 * ne1));
    for (float& x : v) x = nd(rng);
    if (ne1 == 1)
        for (float& x : v) x += 1.0f;  // norm weights near 1
    std::vector<int64_t> ne = {ne0};
    if (ne1 != 1) ne.push_back(ne1);
    if (!f16 || ne1 == 1) return w.add_tensor(name, GgmlType::F32, ne, v.data(), v.size() * sizeof(float));
    std::vector<fp16_t> h(v.size());
    for (size_t i = 0; i < v.size(); i++) h[i] = fp32_to_fp16(v[i]);
    w.add_tensor(name, GgmlType::F16, ne, h.data(), h.size() * sizeof(fp16_t));
}

std::string write_drafter(const DrafterSpec& s) {
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
        if (name != s.skip) add_weight(w, name, ne0, ne1, rng, scale, s.f16);
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

// Loads, adds 3 context rows and drafts a block of 2: finite logits over the draft vocabulary.
void load_and_draft(const DrafterSpec& s) {
    const DflashTarget t = dflash_target_of(target());
    const std::unique_ptr<DflashModel> m = DflashModel::load(write_drafter(s), t);
    const DflashHParams& hp = m->hparams();
    EXPECT_EQ(hp.dialect, s.fork ? DflashDialect::fork : DflashDialect::llama_cpp);
    EXPECT_EQ(hp.n_embd, s.H);
    EXPECT_EQ(hp.n_layer, s.n_layer);
    EXPECT_EQ(hp.head_dim, s.hd);
    EXPECT_EQ(hp.rope.mode, RopeMode::neox);
    EXPECT_EQ(hp.block_size, s.block);
    EXPECT_EQ(hp.mask_token, s.mask);
    std::vector<int32_t> want = s.layers;
    for (int32_t& id : want) id += s.fork ? 1 : 0;  // the fork stores HF ids: layer outputs
    EXPECT_EQ(hp.target_layers, want);
    EXPECT_EQ(hp.fc_scale, s.fc_scale != 0 ? s.fc_scale : 1.0f);
    EXPECT_EQ(hp.n_swa, s.n_swa);
    for (int il = 0; il < s.n_layer; il++) EXPECT_EQ(hp.swa[il] != 0, s.n_swa > 0 && s.swa[il]) << il;
    EXPECT_EQ(hp.n_draft_vocab, s.n_draft ? s.n_draft : t.n_vocab);
    EXPECT_EQ(m->weights().tok_embd.data == t.tok_embd.data, !s.own_embd);
    EXPECT_EQ(m->weights().output.data == t.output.data, !s.own_output);
    for (int i = 0; i < s.n_draft; i++) EXPECT_EQ(m->target_id(i), 7 * i % t.n_vocab);

    ThreadPool pool(2);
    std::vector<float> feats(3 * (size_t)hp.n_features());
    for (size_t i = 0; i < feats.size(); i++) feats[i] = std::sin(0.37f * (float)i);
    const int32_t pos[3] = {0, 1, 2};
    DflashContext ctx;
    m->add_context(pool, ctx, feats.data(), pos, 3);
    EXPECT_EQ(ctx.k.size(), (size_t)s.n_layer);
    const DflashBlock b{&ctx, 17, 3, 2};
    std::vector<float> logits(2 * (size_t)hp.n_draft_vocab), full(t.n_vocab);
    m->draft(pool, &b, 1, DflashModel::kDefaultCrossCtx, logits.data());
    for (float x : logits) ASSERT_TRUE(std::isfinite(x));
    m->scatter_logits(logits.data(), full.data(), t.n_vocab);
    int finite = 0;
    for (float x : full) finite += std::isfinite(x);
    EXPECT_EQ(finite, hp.n_draft_vocab);
}

struct Variant {
    const char* name;
    bool fork;
    int n_draft;
    float fc_scale;
    int n_swa;
    bool own_embd, own_output;
    bool f16 = false;
};
class DflashLoad : public ::testing::TestWithParam<Variant> {};

TEST_P(DflashLoad, BindsAndDrafts) {
    const Variant v = GetParam();
    DrafterSpec s;
    s.fork = v.fork;
    s.n_draft = v.n_draft;
    s.fc_scale = v.fc_scale;
    s.n_swa = v.n_swa;
    s.own_embd = v.own_embd;
    s.own_output = v.own_output;
    s.f16 = v.f16;
    load_and_draft(s);
}

INSTANTIATE_TEST_SUITE_P(Variants, DflashLoad,
                         ::testing::Values(Variant{"llama_cpp", false, 0, 0, 0, false, false},
                                           Variant{"llama_cpp_d2t", false, 40, 0, 0, false, true},
                                           Variant{"llama_cpp_fc_scale", false, 0, 0.5f, 0, true, true},
                                           Variant{"llama_cpp_sliding", false, 0, 0, 2, false, false},
                                           Variant{"fork", true, 0, 0, 0, false, false},
                                           Variant{"fork_own_embd_and_output", true, 0, 0, 0, true, true},
                                           Variant{"fork_sliding", true, 0, 0, 3, false, false},
                                           Variant{"fork_f16", true, 0, 0, 0, true, true, true}),
                         [](const ::testing::TestParamInfo<Variant>& i) { return std::string(i.param.name); });

TEST(DflashLoad, LastLayerIdsOfEachDialect) {
    DrafterSpec s;
    s.layers = {3};  // llama.cpp: the input of layer 3, the last one
    load_and_draft(s);
    s.fork = true;  // the fork: the output of layer 3 = Bee's id 4 (the final state before the norm)
    load_and_draft(s);
}

// The load must throw an Error whose message holds `want`.
void expect_refused(const DrafterSpec& s, const std::string& want) {
    const std::string path = write_drafter(s);
    try {
        DflashModel::load(path, dflash_target_of(target()));
        ADD_FAILURE() << "loaded; expected an error with: " << want;
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
}

TEST(DflashLoad, RefusesADrafterThatDoesNotFit) {
    DrafterSpec s;
    s.H = 32;
    s.n_head = 2;
    expect_refused(s, "dflash.embedding_length is 32 but the target");
    s = {};
    s.layers = {1, 4};
    expect_refused(s, "dflash.target_layers = [1, 4] but the target");
    s.layers = {-1, 2};
    expect_refused(s, "has 4 layers (ids 0..3, llama.cpp's layer inputs, HF ids + 1)");
    s = {};
    s.fork = true;
    s.layers = {0, 4};
    expect_refused(s, "dflash-draft.dflash.target_layer_ids = [0, 4] but the target");
    s = {};
    s.mask = 300;
    expect_refused(s, "tokenizer.ggml.mask_token_id = 300 is not a token of the target");
    s.fork = true;
    expect_refused(s, "dflash-draft.dflash.mask_token_id = 300 is not a token of the target");
    s = {};
    s.H = 64;
    s.n_draft = 10;
    expect_refused(s, "d2t names 10 draft tokens but the drafter has no 'output.weight'");
}

TEST(DflashLoad, RefusesAMalformedDrafter) {
    DrafterSpec s;
    s.edit = [](GgufWriter& w) { w.set_str("general.architecture", "eagle3"); };
    expect_refused(s, "general.architecture is 'eagle3', not 'dflash' (llama.cpp) or 'dflash-draft'");
    s.edit = [](GgufWriter& w) { w.set_u32("dflash.block_size", 1); };
    expect_refused(s, "dflash.block_size is 1");
    s.edit = [](GgufWriter& w) { w.set_i32_array("dflash.target_layers", {}); };
    expect_refused(s, "dflash.target_layers is empty");
    s = {};
    s.fork = true;
    s.edit = [](GgufWriter& w) { w.set_u32("dflash-draft.dflash.n_target_features", 100); };
    expect_refused(s, "dflash-draft.dflash.n_target_features is 100 but 3 target layers of hidden size 64 make 192");
    s = {};
    s.skip = "blk.1.attn_k_norm.weight";
    expect_refused(s, "tensor 'blk.1.attn_k_norm.weight' is missing");
    s = {};
    s.fork = true;
    s.skip = "dflash_hidden_norm.weight";
    expect_refused(s, "tensor 'dflash_hidden_norm.weight' is missing");
    s = {};
    s.n_draft = 10;
    s.own_output = true;
    s.d2t_type = GgmlType::I32;
    expect_refused(s, "tensor 'd2t' has type i32");
    s.d2t_type = GgmlType::I64;
    s.d2t_last = 300;
    expect_refused(s, "d2t[9] = 300 is not a token of the target");
    s = {};
    s.n_swa = 4;
    s.swa = {true};
    expect_refused(s, "dflash.attention.sliding_window_pattern must be an array of 2 bools");
    s.edit = [](GgufWriter& w) { w.set_i32_array("dflash.attention.sliding_window_pattern", {}); };
    expect_refused(s, "must be an array of 2 bools");
    s = {};
    s.extra = [](GgufWriter& w) {
        const float x[4] = {};
        w.add_tensor("markov_w1.weight", GgmlType::F32, {2, 2}, x, sizeof x);
    };
    expect_refused(s, "this is a DSpark drafter");
}

// A drafter's header without the DFlash keys; `add` puts some back.
void expect_header_refused(const std::function<void(GgufWriter&)>& add, const std::string& want) {
    GgufWriter w;
    w.set_str("general.architecture", "dflash");
    w.set_u32("dflash.block_count", 1);
    w.set_u32("dflash.embedding_length", 64);
    w.set_u32("dflash.feed_forward_length", 96);
    w.set_u32("dflash.attention.head_count", 4);
    add(w);
    const std::string path = temp_path("dflash_header");
    w.write(path);
    try {
        DflashModel::load(path, dflash_target_of(target()));
        ADD_FAILURE() << "loaded; expected an error with: " << want;
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
}

TEST(DflashLoad, NamesMissingKeys) {
    expect_header_refused([](GgufWriter& w) { w.set_i32_array("dflash.target_layers", {1}); },
                          "the drafter has no mask token (tokenizer.ggml.mask_token_id)");
    expect_header_refused([](GgufWriter& w) { w.set_u32("tokenizer.ggml.mask_token_id", 5); },
                          "dflash.target_layers is missing");
    expect_header_refused(
        [](GgufWriter& w) {
            w.set_u32("tokenizer.ggml.mask_token_id", 5);
            w.set_i32_array("dflash.target_layers", {1});
            w.set_u32("dflash.attention.sliding_window", 8);
        },
        "dflash.attention.sliding_window is 8 but dflash.attention.sliding_window_pattern is missing");
}

}  // namespace
}  // namespace bee::test
