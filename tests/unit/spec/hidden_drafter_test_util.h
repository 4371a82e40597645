// tests/unit/spec/hidden_drafter_test_util: what the tests of drafters that read the target's hidden states
// (EAGLE-3, DFlash) share — the tiny target, a recorder of drafts, an oracle drafter, prompts, reference
// tensors.
#pragma once
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "../model/tiny_model.h"
#include "gguf/gguf.h"
#include "spec/drafter.h"

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

// BOS then n - 1 tokens of the tiny vocabulary.
inline std::vector<int32_t> prompt_tokens(int n) {
    std::vector<int32_t> p{1};
    const std::vector<int32_t> t = tiny_tokens(n - 1, 300, 11);
    p.insert(p.end(), t.begin(), t.end());
    return p;
}

}  // namespace bee::test
