// spec/drafters/draft_model: a second, smaller model with the same vocabulary (-md). Its own Engine and
// KV cache follow the target's committed tokens in lock-step: each step it drops what it holds beyond
// the common prefix with history + id_last, decodes the missing tokens, then drafts autoregressively —
// greedily (--spec-draft-temp 0) or by sampling at a temperature, in which case it also returns the
// distribution q of every token so the verifier can use exact rejection sampling.
#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "base/log.h"
#include "model/engine.h"
#include "spec/drafters/drafters.h"
#include "spec/registry.h"

namespace bee {

namespace {

struct DraftModel : DrafterShared {
    std::unique_ptr<Model> model;
};

// The draft must speak the target's token ids: same tokenizer kind and the same text for every id.
void check_vocab(const Model& target, const Model& draft, const std::string& path) {
    const Tokenizer& a = target.tokenizer();
    const Tokenizer& b = draft.tokenizer();
    if (a.n_vocab() != b.n_vocab() || target.hparams().n_vocab != draft.hparams().n_vocab)
        fail(
            "draft model '%s': vocabulary has %d tokens but the target's has %d (-md needs a model with the "
            "same tokenizer)",
            path.c_str(), b.n_vocab(), a.n_vocab());
    if (std::string(a.model_name()) != b.model_name())
        fail("draft model '%s': tokenizer '%s' differs from the target's '%s'", path.c_str(), b.model_name(),
             a.model_name());
    for (int32_t id = 0; id < a.n_vocab(); id++)
        if (a.token_text(id) != b.token_text(id))
            fail("draft model '%s': token %d is '%s' but the target's is '%s' (different vocabularies)", path.c_str(),
                 id, b.token_text(id).c_str(), a.token_text(id).c_str());
}

float top_prob(const float* logits, int32_t n) {
    const float mx = *std::max_element(logits, logits + n);
    double sum = 0;
    for (int32_t i = 0; i < n; i++) sum += std::exp((double)logits[i] - mx);
    return (float)(1.0 / sum);
}

class DraftModelDrafter : public Drafter {
public:
    DraftModelDrafter(const SpecParams& p, const Model& m) : p_(p), model_(m) {
        EngineParams ep;
        ep.n_ctx = p.draft_n_ctx;
        ep.n_threads = p.draft_n_threads;
        eng_ = std::make_unique<Engine>(m, ep);
    }
    int n_max() const override { return std::max(1, p_.draft_n_max); }

    void begin(const std::vector<int32_t>&) override {
        eng_->memory().clear_all();
        tokens_.clear();
    }

    void draft(const DraftRequest& req, DraftTree& out) override {
        seq_.assign(req.history.begin(), req.history.end());
        seq_.push_back(req.id_last);
        const int n = std::min(n_max(), req.n_max);
        if ((int)seq_.size() + n > eng_->params().n_ctx) return;  // the draft context is full
        size_t common = 0;
        while (common < tokens_.size() && common + 1 < seq_.size() && tokens_[common] == seq_[common]) common++;
        common = (size_t)eng_->memory().cut_point(0, (int32_t)common);  // a recurrent draft model may cut less
        eng_->memory().cut(0, (int32_t)common);
        tokens_.resize(common);
        for (size_t i = common; i < seq_.size(); i += (size_t)eng_->params().n_ubatch) {  // catch up
            batch_.clear();
            const size_t end = std::min(seq_.size(), i + (size_t)eng_->params().n_ubatch);
            for (size_t j = i; j < end; j++) batch_.add(seq_[j], (int32_t)j, 0, j + 1 == seq_.size());
            eng_->decode(batch_, out_);
        }
        tokens_ = seq_;
        const float temp = p_.draft_temp_auto ? req.target_temp : p_.draft_temp;
        if (temp > 0 && !sampler_) {
            SamplingParams sp;
            sp.temp = temp;
            sp.top_k = 40;
            sp.top_p = 1.0f;
            sp.min_p = 0.0f;
            sp.seed = 0x5eed;
            sampler_ = std::make_unique<Sampler>(sp, model_.hparams().n_vocab);
        }
        const float p_min = req.p_min >= 0 ? req.p_min : p_.draft_p_min;
        for (int i = 0; i < n; i++) {
            const float* logits = out_.logits_at(0);
            if (p_min > 0 && top_prob(logits, out_.n_vocab) < p_min) break;
            int32_t d;
            if (temp > 0) {
                sampler_->apply(logits);
                d = sampler_->draw(sampler_->candidates());
                out.q.push_back(sampler_->candidates());
            } else {
                d = argmax(logits, out_.n_vocab);
            }
            out.add(d, out.size() - 1);
            if (i + 1 == n) break;
            batch_.clear();
            batch_.add(d, (int32_t)tokens_.size(), 0, true);
            eng_->decode(batch_, out_);
            tokens_.push_back(d);
        }
    }

private:
    const SpecParams& p_;
    const Model& model_;
    std::unique_ptr<Engine> eng_;
    std::unique_ptr<Sampler> sampler_;
    std::vector<int32_t> tokens_;  // what the draft KV holds, in order
    std::vector<int32_t> seq_;
    Batch batch_;
    DecodeOutput out_;
};

}  // namespace

std::unique_ptr<DrafterShared> make_draft_model_shared(const SpecParams& p, const Model& target) {
    if (p.draft_model.empty()) fail("--spec-type draft needs a draft model: give it with -md FILE");
    auto s = std::make_unique<DraftModel>();
    s->model = Model::load(p.draft_model);
    check_vocab(target, *s->model, p.draft_model);
    BEE_LOG_INFO("draft model: %s", s->model->describe().c_str());
    return s;
}

std::unique_ptr<Drafter> make_draft_model(const DrafterEnv& env) {
    return std::make_unique<DraftModelDrafter>(env.params, *static_cast<DraftModel*>(env.shared)->model);
}

// llama.cpp calls this kind draft-simple.
extern const DrafterKind kDrafterDraftModel = {"draft",
                                               "draft-simple",
                                               "draft",
                                               {{"-md,--model-draft,--spec-draft-model", "FILE",
                                                 "draft model GGUF (same vocabulary as the target), or an EAGLE-3 head "
                                                 "or DFlash drafter: -md alone picks the type by the file",
                                                 nullptr, [](SpecParams& p) { return &p.draft_model; }}},
                                               "-md FILE",
                                               [](const SpecParams& p) { return !p.draft_model.empty(); },
                                               false,
                                               make_draft_model,
                                               make_draft_model_shared,
                                               ""};

}  // namespace bee
