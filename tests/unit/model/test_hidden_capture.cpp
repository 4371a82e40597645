// tests/unit/model/test_hidden_capture: hidden-state capture (Batch::capture_layers) — the residual stream
// entering chosen layers is bit-identical however a row is batched (invariant 2 extends to hidden states),
// layer 0's is the scaled token embedding, the scalar path agrees within tolerance, and nothing is
// captured (or allocated) when nobody asks.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/error.h"
#include "engine_test_util.h"
#include "tiny_model.h"

namespace bee::test {
namespace {

constexpr int kN = 12;

struct CapCase {
    const char* preset;
    Isa isa;
};

std::vector<CapCase> cap_cases() {
    std::vector<CapCase> v;
    for (const char* p : {"llama", "gemma3", "llama_q4_k"})
        for (Isa isa : all_isas()) v.push_back({p, isa});
    return v;
}

// Rows of `toks` (sequence `seq`, positions 0..) decoded in chunks of `chunk`, capturing `layers`;
// returns (kN, layers, n_embd) in row order.
std::vector<float> capture(Engine& eng, const std::vector<int32_t>& toks, const std::vector<int32_t>& layers, int chunk,
                           int seq = 0) {
    std::vector<float> all;
    Batch b;
    DecodeOutput out;
    for (size_t i0 = 0; i0 < toks.size(); i0 += (size_t)chunk) {
        b.clear();
        b.capture_layers = layers;
        for (size_t i = i0; i < std::min(toks.size(), i0 + (size_t)chunk); i++) b.add(toks[i], (int32_t)i, seq, false);
        eng.decode(b, out);
        EXPECT_EQ(out.hidden_rows.size(), (size_t)b.size());
        EXPECT_EQ(out.hidden_layers, layers);
        all.insert(all.end(), out.hidden.begin(), out.hidden.end());
    }
    return all;
}

class HiddenCapture : public ::testing::TestWithParam<CapCase> {
protected:
    void SetUp() override {
        scope_ = std::make_unique<IsaScope>(GetParam().isa);
        tm_ = &tiny_model(GetParam().preset);
        toks_ = tiny_tokens(kN, tm_->cfg.n_vocab, 33);
        layers_ = {0, 1, tm_->cfg.n_layer};
        Engine eng(*tm_->model, engine_params(1));
        base_ = capture(eng, toks_, layers_, 1);
    }
    size_t row_floats() const { return layers_.size() * (size_t)tm_->cfg.n_embd; }

    std::unique_ptr<IsaScope> scope_;
    const TinyModel* tm_ = nullptr;
    std::vector<int32_t> toks_, layers_;
    std::vector<float> base_;  // token by token, one thread
};

TEST_P(HiddenCapture, SameBitsInPrefillChunksAndThreads) {
    for (int chunk : {kN, 5}) {
        Engine eng(*tm_->model, engine_params(2, 4));  // ubatches of 4 rows inside each decode
        EXPECT_TRUE(same_bits(capture(eng, toks_, layers_, chunk), base_)) << "chunk " << chunk;
    }
}

// Rows of two sequences interleaved in one batch; only some rows of sequence 0 captured.
TEST_P(HiddenCapture, SameBitsBesideOtherSequencesAndForChosenRows) {
    Engine eng(*tm_->model, engine_params(2, 512, 2));
    const std::vector<int32_t> other = tiny_tokens(kN, tm_->cfg.n_vocab, 77);
    Batch b;
    b.capture_layers = layers_;
    for (int i = 0; i < kN; i++) {
        b.add(toks_[i], i, 0, false);
        b.capture.push_back(i % 3 != 1);
        b.add(other[i], i, 1, i == kN - 1);
        b.capture.push_back(0);
    }
    DecodeOutput out;
    eng.decode(b, out);
    ASSERT_EQ(out.rows.size(), 1u);  // logits and capture are independent
    int n_cap = 0;
    for (int i = 0; i < kN; i++) {
        const bool want = i % 3 != 1;
        n_cap += want;
        for (size_t j = 0; j < layers_.size(); j++) {
            const float* h = out.hidden_for_row(2 * i, (int)j);
            ASSERT_EQ(h != nullptr, want) << "row " << 2 * i;
            if (h) {
                EXPECT_TRUE(same_bits(h, &base_[i * row_floats() + j * tm_->cfg.n_embd], tm_->cfg.n_embd))
                    << "token " << i << " layer " << layers_[j];
            }
        }
        EXPECT_EQ(out.hidden_for_row(2 * i + 1, 0), nullptr);
    }
    EXPECT_EQ((int)out.hidden_rows.size(), n_cap);
}

// Layer 0's input is the token embedding (times the architecture's embedding scale).
TEST_P(HiddenCapture, LayerZeroIsTheEmbedding) {
    const int n_embd = tm_->cfg.n_embd;
    const float scale = tm_->model->hparams().embd_scale;
    for (int i = 0; i < kN; i++)
        for (int e = 0; e < n_embd; e++)
            ASSERT_NEAR(base_[i * row_floats() + e], tm_->w.tok_embd[(size_t)toks_[i] * n_embd + e] * scale,
                        1e-6f * std::max(1.0f, std::fabs(scale)))
                << "token " << i << " element " << e;
}

// The ISA's path agrees with the scalar path within the tolerance of its float operation order.
TEST_P(HiddenCapture, MatchesTheScalarPath) {
    std::vector<float> ref;
    {
        IsaScope scalar(Isa::scalar);
        Engine eng(*tm_->model, engine_params(1));
        ref = capture(eng, toks_, layers_, kN);
    }
    EXPECT_LE(max_abs_diff(base_, ref), 5e-3 * max_abs(ref) + 1e-5);
}

TEST_P(HiddenCapture, NothingWhenNotAsked) {
    Engine eng(*tm_->model, engine_params(1));
    Batch b;
    for (int i = 0; i < kN; i++) b.add(toks_[i], i, 0, i == kN - 1);
    DecodeOutput out;
    eng.decode(b, out);
    EXPECT_TRUE(out.hidden.empty());
    EXPECT_TRUE(out.hidden_rows.empty());
    Engine fresh(*tm_->model, engine_params(1));
    b.capture_layers = {tm_->cfg.n_layer + 1};
    EXPECT_THROW(fresh.decode(b, out), Error);  // out of range: refused before the cache changes
    EXPECT_EQ(fresh.kv().seq_pos_max(0), -1);
}

INSTANTIATE_TEST_SUITE_P(TinyModels, HiddenCapture, ::testing::ValuesIn(cap_cases()),
                         [](const ::testing::TestParamInfo<CapCase>& i) {
                             return std::string(i.param.preset) + "_" + isa_name(i.param.isa);
                         });

}  // namespace
}  // namespace bee::test
