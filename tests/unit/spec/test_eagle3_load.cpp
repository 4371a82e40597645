// tests/unit/spec/test_eagle3_load: Eagle3Head::load on small random heads written in llama.cpp's eagle3
// layout by GgufWriter — with and without d2t and norm_before_fc, own or the target's token_embd and
// output, F32 or Q8_0 (repacked) matrices — against a tiny llama target, and every refusal's message.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "../model/tiny_model.h"
#include "base/error.h"
#include "eagle3_test_head.h"
#include "gguf/gguf_writer.h"
#include "hidden_drafter_test_util.h"
#include "spec/eagle3/eagle3_head.h"

namespace bee::test {
namespace {

// The tiny target: 4 layers, n_embd 64, 300 tokens.
const Model& target() {
    static std::unique_ptr<Model> m = tiny_drafter_target("eagle3_target");
    return *m;
}

// Loads, then decodes two rows: finite logits over the draft vocabulary, scattered onto the target's.
void load_and_decode(const HeadSpec& s) {
    const DrafterTarget t = drafter_target_of(target());
    const std::unique_ptr<Eagle3Head> h = Eagle3Head::load(write_head(s), t);
    const Eagle3HParams& hp = h->hparams();
    EXPECT_EQ(hp.n_embd, s.H);
    EXPECT_EQ(hp.target_n_embd, s.Ht);
    EXPECT_EQ(hp.target_layers, (std::array<int32_t, 3>{s.layers[0], s.layers[1], s.layers[2]}));
    EXPECT_EQ(hp.norm_before_fc, s.norm_before_fc);
    EXPECT_EQ(hp.norm_before_residual, s.norm_before_residual);
    EXPECT_EQ(hp.n_draft_vocab, s.n_draft ? s.n_draft : t.n_vocab);
    EXPECT_EQ(h->d2t().size(), (size_t)s.n_draft);
    EXPECT_EQ((bool)h->weights().enc_norm, s.norm_before_fc);
    EXPECT_EQ(h->weights().tok_embd.data == t.tok_embd.data, !s.own_embd);
    EXPECT_EQ(h->weights().output.data == t.output.data, !s.own_output);
    for (int i = 0; i < s.n_draft; i++) EXPECT_EQ(h->target_id(i), 7 * i % t.n_vocab);

    ThreadPool pool(2);
    std::vector<float> feats(2 * 3 * (size_t)s.Ht, 0.25f), g(2 * (size_t)s.H), hid(2 * (size_t)s.H);
    for (size_t i = 0; i < feats.size(); i++) feats[i] = std::sin(0.37f * (float)i);
    h->encode(pool, feats.data(), 2, g.data());
    const int32_t tok[2] = {5, 290}, pos[2] = {0, 1};
    std::vector<float> logits(2 * (size_t)hp.n_draft_vocab), full(t.n_vocab);
    Eagle3Kv kv;
    h->decode(pool, kv, {2, tok, pos, g.data()}, hid.data(), logits.data());
    for (float x : logits) ASSERT_TRUE(std::isfinite(x));
    h->scatter_logits(logits.data(), full.data(), t.n_vocab);
    int finite = 0;
    for (float x : full) finite += std::isfinite(x);
    EXPECT_EQ(finite, hp.n_draft_vocab);
}

struct Variant {
    const char* name;
    int n_draft;
    bool norm_before_fc, norm_before_residual, own_embd, own_output;
};
class Eagle3Load : public ::testing::TestWithParam<Variant> {};

TEST_P(Eagle3Load, BindsAndDecodes) {
    const Variant v = GetParam();
    HeadSpec s;
    s.n_draft = v.n_draft;
    s.norm_before_fc = v.norm_before_fc;
    s.norm_before_residual = v.norm_before_residual;
    s.own_embd = v.own_embd;
    s.own_output = v.own_output;
    load_and_decode(s);
}

INSTANTIATE_TEST_SUITE_P(Variants, Eagle3Load,
                         ::testing::Values(Variant{"plain", 0, false, false, true, true},
                                           Variant{"d2t", 40, false, false, true, true},
                                           Variant{"norm_before_fc", 40, true, false, true, true},
                                           Variant{"norm_before_residual", 0, false, true, true, true},
                                           Variant{"shared_output", 0, false, false, true, false},
                                           Variant{"shared_embd_and_output", 0, true, false, false, false},
                                           Variant{"d2t_shared_embd", 25, false, false, false, true}),
                         [](const ::testing::TestParamInfo<Variant>& i) { return std::string(i.param.name); });

// A quantized head's own matrices are repacked at load into the layout the target's matmul reads (where
// the ISA has one): the same bytes per row, and matmul gives the same bits as on the file's GGUF rows.
TEST(Eagle3Load, RepacksItsOwnQuantizedMatricesLosslessly) {
    HeadSpec s;
    s.n_draft = 32;
    s.mat_type = GgmlType::Q8_0;
    const std::string path = write_head(s);
    const std::unique_ptr<Eagle3Head> h = Eagle3Head::load(path, drafter_target_of(target()));
    const GgufFile file = GgufFile::open(path);
    const Eagle3Weights& w = h->weights();
    const std::pair<const char*, const Weight*> mats[] = {{"fc.weight", &w.fc},
                                                          {"blk.0.attn_q.weight", &w.wq},
                                                          {"blk.0.attn_k.weight", &w.wk},
                                                          {"blk.0.attn_v.weight", &w.wv},
                                                          {"blk.0.attn_output.weight", &w.wo},
                                                          {"blk.0.ffn_gate.weight", &w.ffn_gate},
                                                          {"blk.0.ffn_up.weight", &w.ffn_up},
                                                          {"blk.0.ffn_down.weight", &w.ffn_down},
                                                          {"output.weight", &w.output}};
    for (const auto& [name, m] : mats) expect_repacked_losslessly(file, name, *m, GgmlType::Q8_0);
    load_and_decode(s);
}

TEST(Eagle3Load, LayerIdOfTheFinalStateIsAccepted) {
    HeadSpec s;
    s.layers = {2, 3, 4};  // 4 = n_layer: the final hidden state before the output norm
    load_and_decode(s);
}

// The load must throw an Error whose message holds `want`.
void expect_refused(const HeadSpec& s, const std::string& want) {
    const std::string path = write_head(s);
    try {
        Eagle3Head::load(path, drafter_target_of(target()));
        ADD_FAILURE() << "loaded; expected an error with: " << want;
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
}

TEST(Eagle3Load, RefusesAHeadThatDoesNotFit) {
    HeadSpec s;
    s.Ht = 32;
    expect_refused(s, "eagle3.target_hidden_size is 32 but the target");
    s = {};
    s.layers = {1, 2, 5};
    expect_refused(s, "eagle3.target_layers = [1, 2, 5] but the target");
    s.layers = {-1, 2, 3};
    expect_refused(s, "has 4 layers (ids 0..4)");
    s = {};
    s.layers = {1, 2};
    expect_refused(s, "eagle3.target_layers has 2 ids: EAGLE-3 reads exactly 3");
    s = {};
    s.edit = [](GgufWriter& w) { w.set_u32("eagle3.vocab_size", 301); };
    expect_refused(s, "eagle3.vocab_size is 301 but the target");
    s = {};
    s.H = 32;
    s.own_embd = false;
    expect_refused(s, "the head has no 'token_embd.weight', so it would use the target's");
    s = {};
    s.H = 32;
    s.own_output = false;
    expect_refused(s, "the head has no 'output.weight', so it would use the target's");
}

TEST(Eagle3Load, RefusesAMalformedHead) {
    HeadSpec s;
    s.edit = [](GgufWriter& w) { w.set_str("general.architecture", "llama"); };
    expect_refused(s, "general.architecture is 'llama', not 'eagle3'");
    s.edit = [](GgufWriter& w) { w.set_u32("eagle3.block_count", 2); };
    expect_refused(s, "an EAGLE-3 head has exactly one decoder block");
    s = {};
    s.n_draft = 10;
    s.d2t_type = GgmlType::I32;
    expect_refused(s, "tensor 'd2t' has type i32");
    s.d2t_type = GgmlType::I64;
    s.d2t_last = 300;
    expect_refused(s, "d2t[9] = 300 is not a token of the target");
    s = {};
    s.n_draft = 10;
    s.own_output = false;
    expect_refused(s, "d2t names 10 draft tokens but the head has no 'output.weight'");
    s = {};
    s.norm_before_fc = true;
    s.write_enc_norm = false;
    expect_refused(s, "tensor 'enc.output_norm.weight' is missing");
}

TEST(Eagle3Load, NamesTheOlderLayerKey) {
    HeadSpec s;
    s.layer_key = "eagle3.extract_layers";  // earlier revisions of the converter; llama.cpp reads only target_layers
    expect_refused(s, "eagle3.target_layers is missing (the file has the older eagle3.extract_layers)");
}

}  // namespace
}  // namespace bee::test
