// spec/drafters/draft_mtp: drafts with the target's own MTP (NextN) block (../shared/specs/drafters.md §4.3,
// §8.3; model/nextn.h). After every target decode of this sequence the block catches up on the decoded rows,
// row i taking (token_i, the trunk's h of row i - 1; the first row the pending h of the batch before), so its
// K/V follows the target's positions. A draft is a chain: (id_last, pending h) at id_last's position gives the
// first token, then each step feeds the head's own h and its token back (the single head used recursively,
// so acceptance falls with depth). accept(n) keeps the verify rows the target kept: pending h = the trunk's h
// of the last of them, and the head's K/V is cut after it. Greedy (top-1); --spec-draft-p-min stops a chain
// whose top probability falls below it, from the first token on.
#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "model/nextn.h"
#include "sample/sampler.h"
#include "spec/drafters/drafters.h"
#include "spec/registry.h"

namespace bee {

namespace {

float top_probability(const float* logits, int32_t n) {
    const float mx = *std::max_element(logits, logits + n);
    double sum = 0;
    for (int32_t i = 0; i < n; i++) sum += std::exp((double)logits[i] - mx);
    return (float)(1.0 / sum);
}

class MtpDrafter : public Drafter {
public:
    MtpDrafter(const SpecParams& p, const Model& target, ThreadPool& pool)
        : p_(p),
          target_(target),
          head_(target, p.draft_n_ctx, pool),
          e_(target.hparams().n_embd),
          pending_((size_t)e_, 0.0f) {}

    int n_max() const override { return std::max(1, p_.draft_n_max); }
    std::vector<int32_t> capture_layers() const override { return {target_.hparams().n_layer}; }

    void observe_target(const TargetRows& rows) override {
        const int n = rows.n;
        if (n <= 0) return;
        const int32_t p0 = rows.pos(0);
        if (p0 == 0) std::fill(pending_.begin(), pending_.end(), 0.0f);  // a new sequence
        int slot = -1;  // the capture of the final hidden state (layer n_layer)
        for (size_t j = 0; j < rows.out.hidden_layers.size(); j++)
            if (rows.out.hidden_layers[j] == target_.hparams().n_layer) slot = (int)j;
        verify_h_.assign((size_t)n * e_, 0.0f);
        h_in_.resize((size_t)n * e_);
        tokens_.resize(n);
        pos_.resize(n);
        for (int i = 0; i < n; i++) {
            const float* x = slot >= 0 ? rows.hidden(i, slot) : nullptr;
            if (x) head_.trunk_h(x, verify_h_.data() + (size_t)i * e_);  // else zeros: poorer drafts, no error
            const float* h = i == 0 ? pending_.data() : verify_h_.data() + (size_t)(i - 1) * e_;
            std::copy(h, h + e_, h_in_.begin() + (ptrdiff_t)i * e_);
            tokens_[i] = rows.token(i);
            pos_[i] = rows.pos(i);
        }
        head_.cut(p0);
        if (p0 + n > head_.n_ctx()) {  // no room: the head drafts nothing until a shorter sequence
            rows_ = 0;
            return;
        }
        h_out_.resize((size_t)n * e_);
        want_.assign(n, 0);
        logits_.clear();
        head_.decode(tokens_.data(), pos_.data(), h_in_.data(), n, want_.data(), h_out_.data(), logits_);
        std::copy(verify_h_.end() - e_, verify_h_.end(), pending_.begin());
        rows_ = n;
        pos0_ = p0;
    }

    void accept(int n_accepted, bool) override {
        if (rows_ <= 0) return;
        const int k = std::min(n_accepted, rows_ - 1);  // the verify batch kept its rows 0..k
        std::copy(verify_h_.begin() + (ptrdiff_t)k * e_, verify_h_.begin() + (ptrdiff_t)(k + 1) * e_, pending_.begin());
        head_.cut(pos0_ + k + 1);
    }

    void draft(const DraftRequest& req, DraftTree& out) override {
        const int32_t p = (int32_t)req.history.size();  // id_last's position
        const int n = std::min(n_max(), req.n_max);
        if (rows_ <= 0 || p + n > head_.n_ctx()) return;
        head_.cut(p);
        const float p_min = req.p_min >= 0 ? req.p_min : p_.draft_p_min;
        const int32_t n_vocab = target_.hparams().n_vocab;
        std::vector<float> h(pending_), h_next((size_t)e_);
        int32_t tok = req.id_last;
        const uint8_t want = 1;
        for (int i = 0; i < n; i++) {
            const int32_t pos = p + i;
            logits_.clear();
            head_.decode(&tok, &pos, h.data(), 1, &want, h_next.data(), logits_);
            if (p_min > 0 && top_probability(logits_.data(), n_vocab) < p_min) break;
            tok = argmax(logits_.data(), n_vocab);
            out.add(tok, out.size() - 1);
            h.swap(h_next);
        }
    }

private:
    const SpecParams& p_;
    const Model& target_;
    NextnHead head_;
    const int64_t e_;
    std::vector<float> pending_;   // the trunk's h of the last row the target kept
    std::vector<float> verify_h_;  // (rows of the last target batch, n_embd) the trunk's h of each
    int rows_ = 0;                 // rows of the last target batch (0: nothing to draft from)
    int32_t pos0_ = 0;             // its first position
    std::vector<float> h_in_, h_out_, logits_;
    std::vector<int32_t> tokens_, pos_;
    std::vector<uint8_t> want_;
};

}  // namespace

std::unique_ptr<DrafterShared> make_draft_mtp_shared(const SpecParams&, const Model& target) {
    if (!target.weights().nextn)
        fail("--spec-type draft-mtp: %s has no MTP (NextN) block (blk.N.nextn.eh_proj.weight after the trunk)",
             target.gguf().path().c_str());
    return nullptr;
}

std::unique_ptr<Drafter> make_draft_mtp(const DrafterEnv& env) {
    if (!env.pool) fail("draft-mtp: no thread pool given to the drafter");
    return std::make_unique<MtpDrafter>(env.params, env.target, *env.pool);
}

// llama.cpp's name; chosen without --spec-type when the target has an MTP block (app/args_spec.cpp).
extern const DrafterKind kDrafterMtp = {"draft-mtp", "mtp",          "draft-mtp",          {}, nullptr, nullptr,
                                        true,        make_draft_mtp, make_draft_mtp_shared};

}  // namespace bee
