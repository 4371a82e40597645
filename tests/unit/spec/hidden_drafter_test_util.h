// tests/unit/spec/hidden_drafter_test_util: what the tests of drafters that read the target's hidden states
// (EAGLE-3, DFlash) share — the tiny target, a recorder of drafts, an oracle drafter, prompts, reference
// tensors.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../model/tiny_model.h"
#include "base/thread_pool.h"
#include "gguf/gguf.h"
#include "kernels/kernels.h"
#include "kernels/repack.h"
#include "model/engine.h"
#include "spec/drafter.h"
#include "spec/registry.h"

namespace bee::test {

// The tiny llama target: 4 layers, n_embd 64, 300 tokens, written once per `tag`.
inline std::unique_ptr<Model> tiny_drafter_target(const char* tag) {
    TinyConfig cfg = tiny_config("llama");
    cfg.n_layer = 4;
    const std::string path = temp_path(tag);
    write_tiny_model(cfg, path);
    return Model::load(path);
}

inline std::vector<int32_t> tree_tokens(const DraftTree& t) {
    std::vector<int32_t> v;
    for (const DraftNode& n : t.nodes) v.insert(v.end(), {n.token, n.parent});
    return v;
}

// Forwards to the real drafter and records each draft with what it was asked.
class Recorder : public Drafter {
public:
    explicit Recorder(std::unique_ptr<Drafter> d) : d_(std::move(d)) {}
    struct Step {
        std::vector<int32_t> history;
        int32_t id_last;
        int n_max;
        double row_cost;
        std::vector<int32_t> tree;
    };
    std::vector<Step> steps;
    void begin(const std::vector<int32_t>& p) override { d_->begin(p); }
    void draft(const DraftRequest& req, DraftTree& out) override {
        d_->draft(req, out);
        steps.push_back({req.history, req.id_last, req.n_max, req.row_cost, tree_tokens(out)});
    }
    void observe(const VerifyRows& r) override { d_->observe(r); }
    void observe_target(const TargetRows& r) override { d_->observe_target(r); }
    std::vector<int32_t> capture_layers() const override { return d_->capture_layers(); }
    void accept(int n, bool o) override { d_->accept(n, o); }
    int n_max() const override { return d_->n_max(); }

private:
    std::unique_ptr<Drafter> d_;
};

// Drafts the true continuation (from a run without speculation) on every other step, so verify batches
// with several accepted rows reach the drafter under test through observe_target/observe.
class Oracle : public Drafter {
public:
    explicit Oracle(std::vector<int32_t> truth, int prompt_len) : truth_(std::move(truth)), n_prompt_(prompt_len) {}
    void draft(const DraftRequest& req, DraftTree& out) override {
        if (++calls_ % 2) return;
        const size_t at = req.history.size() + 1 - n_prompt_;  // index in truth_ of the token after id_last
        int32_t parent = -1;
        for (size_t i = at; i < truth_.size() && i < at + 3 && (int)(i - at) < req.n_max; i++)
            parent = out.add(truth_[i], parent);
    }
    int n_max() const override { return 3; }

private:
    std::vector<int32_t> truth_;
    int n_prompt_;
    int calls_ = 0;
};

// The values of tensor `name` of a reference-data file (a failure, and nothing, if it is missing).
template <class T>
std::vector<T> tensor_values(const GgufFile& io, const char* name) {
    const GgufTensor* t = io.find_tensor(name);
    EXPECT_NE(t, nullptr) << name;
    if (!t) return {};
    const T* p = (const T*)t->data;
    return std::vector<T>(p, p + t->n_elements());
}

// A drafter's own quantized matrix `m`, repacked at load, holds the file's tensor `name` bit for bit: every row
// unpacks to the file's bytes and a matmul gives the same floats on both copies.
inline void expect_repacked_losslessly(const GgufFile& file, const char* name, const Weight& m, GgmlType type) {
    SCOPED_TRACE(name);
    const GgufTensor* t = file.find_tensor(name);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(m.layout, preferred_layout(type));
    const size_t row = ggml_row_size(m.type, m.ne0);
    std::vector<uint8_t> got(row);
    for (int64_t r = 0; r < m.ne1; r++) {
        unpack_row(m.type, m.layout, m.data, m.ne1, m.ne0, r, got.data());
        ASSERT_EQ(std::memcmp(got.data(), t->data + (size_t)r * row, row), 0) << "row " << r;
    }
    ThreadPool pool(2);
    const int n_tok = 3;
    std::vector<float> x((size_t)n_tok * m.ne0), y((size_t)n_tok * m.ne1), y_file(y.size());
    for (size_t i = 0; i < x.size(); i++) x[i] = std::cos(0.11f * (float)i);
    matmul(pool, m.type, m.data, m.ne1, m.ne0, x.data(), n_tok, y.data(), m.layout);
    matmul(pool, m.type, t->data, m.ne1, m.ne0, x.data(), n_tok, y_file.data(), WeightLayout::gguf);
    for (size_t i = 0; i < y.size(); i++) ASSERT_EQ(y[i], y_file[i]) << "output " << i;
}

// BOS then n - 1 tokens of the tiny vocabulary.
inline std::vector<int32_t> prompt_tokens(int n) {
    std::vector<int32_t> p{1};
    const std::vector<int32_t> t = tiny_tokens(n - 1, 300, 11);
    p.insert(p.end(), t.begin(), t.end());
    return p;
}

// Several sequences drafting in one pass (Drafter::queue, DrafterShared::draft_queued, Drafter::take), as
// the server's slots do: three histories of different lengths arrive in two prompt chunks each, with one
// shared pass after each chunk. Every draft must equal alone(history, id_last): a fresh drafter's draft
// shown that history in one batch. The second pass checks that the first left each drafter's state right.
using AloneDraft = std::function<std::vector<int32_t>(const std::vector<int32_t>& history, int32_t id_last)>;
inline void expect_queued_drafts_equal_alone(SpecShared& shared, const Model& target, const char* kind, int n_max,
                                             const AloneDraft& alone) {
    const DrafterEnv env{shared.params(), target, shared.get(kind), &shared.pool()};
    const int n_seq = 3;
    std::vector<std::unique_ptr<Drafter>> drafters;
    std::vector<std::unique_ptr<Engine>> engines;
    std::vector<std::vector<int32_t>> full(n_seq), hist(n_seq);
    EngineParams ep;
    ep.n_ctx = 256;
    ep.n_threads = 2;
    for (int s = 0; s < n_seq; s++) {
        drafters.push_back(find_drafter_kind(kind)->make(env));
        engines.push_back(std::make_unique<Engine>(target, ep));
        full[s] = {1};
        const std::vector<int32_t> t = tiny_tokens(23 + 9 * s, 300, 20 + s);
        full[s].insert(full[s].end(), t.begin(), t.end());
    }
    for (int round = 0; round < 2; round++) {
        std::vector<int32_t> id_last(n_seq);
        for (int s = 0; s < n_seq; s++) {
            const size_t from = hist[s].size(), to = round == 0 ? full[s].size() / 2 : full[s].size();
            Batch b;
            for (size_t i = from; i < to; i++) b.add(full[s][i], (int32_t)i, 0, i + 1 == to);
            b.capture_layers = drafters[s]->capture_layers();
            DecodeOutput out;
            engines[s]->decode(b, out);
            drafters[s]->observe_target(TargetRows{b, out, 0, b.size(), true});
            hist[s].insert(hist[s].end(), full[s].begin() + (std::ptrdiff_t)from, full[s].begin() + (std::ptrdiff_t)to);
            id_last[s] = 5 + 11 * s + round;
            ASSERT_TRUE(drafters[s]->queue(DraftRequest{hist[s], id_last[s], n_max, 0.0f})) << "sequence " << s;
        }
        shared.get(kind)->draft_queued();
        for (int s = 0; s < n_seq; s++) {
            DraftTree t;
            drafters[s]->take(t);
            EXPECT_FALSE(t.empty()) << "round " << round << ", sequence " << s;
            EXPECT_EQ(tree_tokens(t), alone(hist[s], id_last[s])) << "round " << round << ", sequence " << s;
        }
    }
}

}  // namespace bee::test
