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
#include "dflash_test_drafter.h"
#include "gguf/gguf_writer.h"
#include "hidden_drafter_test_util.h"
#include "spec/dflash/dflash_model.h"

namespace bee::test {
namespace {

// The tiny target: 4 layers, n_embd 64, 300 tokens.
const Model& target() {
    static std::unique_ptr<Model> m = tiny_drafter_target("dflash_target");
    return *m;
}

// Loads, adds 3 context rows and drafts a block of 2: finite logits over the draft vocabulary.
void load_and_draft(const DrafterSpec& s) {
    const DrafterTarget t = drafter_target_of(target());
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
        DflashModel::load(path, drafter_target_of(target()));
        ADD_FAILURE() << "loaded; expected an error with: " << want;
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
}

TEST(DflashLoad, RepacksItsOwnQuantizedMatricesLosslessly) {
    DrafterSpec s;
    s.q8 = true;
    s.n_draft = 32;
    s.own_output = true;
    const std::string path = write_drafter(s);
    const std::unique_ptr<DflashModel> m = DflashModel::load(path, drafter_target_of(target()));
    const GgufFile file = GgufFile::open(path);
    const DflashWeights& w = m->weights();
    expect_repacked_losslessly(file, "fc.weight", w.fc, GgmlType::Q8_0);
    expect_repacked_losslessly(file, "output.weight", w.output, GgmlType::Q8_0);
    for (int il = 0; il < s.n_layer; il++) {
        const DflashLayer& L = w.layers[il];
        const std::string b = "blk." + std::to_string(il) + ".";
        const std::pair<const char*, const Weight*> mats[] = {{"attn_q.weight", &L.wq},
                                                              {"attn_k.weight", &L.wk},
                                                              {"attn_v.weight", &L.wv},
                                                              {"attn_output.weight", &L.wo},
                                                              {"ffn_gate.weight", &L.ffn_gate},
                                                              {"ffn_up.weight", &L.ffn_up},
                                                              {"ffn_down.weight", &L.ffn_down}};
        for (const auto& [name, x] : mats) expect_repacked_losslessly(file, (b + name).c_str(), *x, GgmlType::Q8_0);
    }
    load_and_draft(s);
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
        DflashModel::load(path, drafter_target_of(target()));
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
