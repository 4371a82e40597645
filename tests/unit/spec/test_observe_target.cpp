// tests/unit/spec/test_observe_target: drafters observe what the target decoded (Drafter::observe_target)
// — prompt chunks and then every verify step, in decode order, with the hidden states they asked for,
// bit-identical to a capture of the same tokens decoded on their own.
#include <gtest/gtest.h>

#include "spec_loop.h"
#include "spec_test_util.h"

namespace bee::test {
namespace {

// Records every row it is shown, and drafts the token the prompt had 14 positions earlier (the prompt
// repeats with period 14), so verify batches carry several rows.
class RecordingDrafter : public Drafter {
public:
    struct Row {
        int32_t token, pos;
        int batch;  // which observe_target call
        bool prefill, has_logits;
        std::vector<float> h0, h_last;  // layer 0 and the final hidden state
    };
    explicit RecordingDrafter(int n_layer) : n_layer_(n_layer) {}
    void draft(const DraftRequest& req, DraftTree& out) override {
        std::vector<int32_t> seq = req.history;
        seq.push_back(req.id_last);
        int32_t parent = -1;
        for (int d = 0; d < std::min(3, req.n_max); d++) {
            const size_t at = seq.size() - 14;
            seq.push_back(seq[at]);
            parent = out.add(seq.back(), parent);
        }
    }
    int n_max() const override { return 3; }
    std::vector<int32_t> capture_layers() const override { return {n_layer_, 0}; }
    void observe_target(const TargetRows& t) override {
        ASSERT_EQ(t.out.hidden_layers, (std::vector<int32_t>{0, n_layer_}));  // sorted union
        for (int i = 0; i < t.n; i++) {
            Row r{t.token(i), t.pos(i), n_batches, t.prefill, t.logits(i) != nullptr, {}, {}};
            const float* h0 = t.hidden(i, 0);
            const float* hl = t.hidden(i, 1);
            EXPECT_TRUE(h0 && hl) << "row " << i << " of a batch at position " << t.pos(0);
            if (h0) r.h0.assign(h0, h0 + t.out.n_embd);
            if (hl) r.h_last.assign(hl, hl + t.out.n_embd);
            rows.push_back(std::move(r));
        }
        n_batches++;
    }
    std::vector<Row> rows;
    int n_batches = 0;

private:
    int n_layer_;
};

TEST(ObserveTarget, PromptChunksThenVerifyRowsWithTheirHiddenStates) {
    const TinyModel& tm = tiny_model("llama");
    const int n_layer = tm.cfg.n_layer;
    std::vector<int32_t> base = tiny_tokens(14, tm.cfg.n_vocab, 5), prompt{1};
    for (int r = 0; r < 4; r++) prompt.insert(prompt.end(), base.begin(), base.end());
    EngineParams ep;
    ep.n_ctx = 256;
    ep.n_threads = 2;
    Engine eng(*tm.model, ep);
    SpecParams sp;
    SpecShared shared(sp, *tm.model);
    Speculator spec(shared, {});
    auto rec = std::make_unique<RecordingDrafter>(n_layer);
    RecordingDrafter* r = rec.get();
    spec.add_drafter(std::move(rec), "recording");
    EXPECT_EQ(spec.capture_layers(), (std::vector<int32_t>{0, n_layer}));
    SamplingParams s;
    s.temp = 0;
    Sampler sampler(s, tm.cfg.n_vocab);
    GenerateOptions go;
    go.n_predict = 24;
    go.n_batch = 16;  // the prompt arrives in 4 chunks
    generate_tokens(eng, sampler, &spec, prompt, go);

    // The prompt first, position by position, then generation steps whose first row continues the cache.
    ASSERT_GT(r->rows.size(), prompt.size());
    for (size_t i = 0; i < prompt.size(); i++) {
        EXPECT_TRUE(r->rows[i].prefill);
        EXPECT_EQ(r->rows[i].pos, (int32_t)i);
        EXPECT_EQ(r->rows[i].token, prompt[i]);
        EXPECT_EQ(r->rows[i].has_logits, i + 1 == prompt.size());
    }
    EXPECT_EQ(r->rows[prompt.size() - 1].batch, 3);  // 4 chunks of at most 16 rows
    int n_steps = 0, n_multi = 0;
    for (size_t i = prompt.size(); i < r->rows.size();) {
        EXPECT_FALSE(r->rows[i].prefill);
        EXPECT_LE(r->rows[i].pos, r->rows[i - 1].pos + 1);  // the root follows what the cache kept
        size_t j = i + 1;
        while (j < r->rows.size() && r->rows[j].batch == r->rows[i].batch) {  // one verify batch: root + chain
            EXPECT_EQ(r->rows[j].pos, r->rows[j - 1].pos + 1);
            j++;
        }
        n_steps++;
        n_multi += j - i > 1;
        for (size_t k = i; k < j; k++) EXPECT_TRUE(r->rows[k].has_logits);
        i = j;
    }
    EXPECT_GT(n_multi, 0) << "no verify batch carried draft rows";

    // Each observed row's hidden states equal the same token decoded alone after the same prefix (the
    // prompt rows: a fresh engine decoding the prompt one token at a time).
    Engine alone(*tm.model, ep);
    for (size_t i = 0; i < prompt.size(); i++) {
        Batch b;
        b.capture_layers = {0, n_layer};
        b.add(prompt[i], (int32_t)i, 0, false);
        DecodeOutput out;
        alone.decode(b, out);
        EXPECT_EQ(0, memcmp(out.hidden_at(0, 0), r->rows[i].h0.data(), sizeof(float) * tm.cfg.n_embd)) << i;
        EXPECT_EQ(0, memcmp(out.hidden_at(0, 1), r->rows[i].h_last.data(), sizeof(float) * tm.cfg.n_embd)) << i;
    }
    EXPECT_GT(n_steps, 3);
}

}  // namespace
}  // namespace bee::test
