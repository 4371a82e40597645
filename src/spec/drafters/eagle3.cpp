// spec/drafters/eagle3: EAGLE-3 drafting (--spec-type draft-eagle3, -md HEAD.gguf; specs/drafters.md §3.4,
// §3.5, §8.1). The head reads the target's hidden states, so it follows the target position by position:
//
//   - observe_target fuses each decoded row's three tapped layers into g = fc(features) and keeps g per
//     target position (a verify batch's rows wait for observe() to say which rows were committed);
//   - the head's own KV holds one cell per committed position k < T-1, decoded from (token k+1, g[k]) at
//     position k, as EAGLE-3 was trained (features of t paired with the token after t);
//   - draft() decodes the cells the head lacks plus the seed (id_last, g[T-1]) at T-1 in one batch, then
//     drafts a chain, each depth fed the previous depth's pre-norm output; the draft cells are dropped after.
//
// So positions never freeze and accepted tokens always enter the head's cache (the fork's "1/n_draft
// ceiling", §3.5, cannot happen). A batch at position p drops what the drafter held from p on, so prompt
// reuse, rewinds and new requests on the slot need no other bookkeeping. Greedy drafting may add a tree:
// the runners-up at each depth of the chain (--spec-draft-top-k), best first by path probability, at most
// --spec-branch-budget of them, each only while its chance of acceptance pays for its verify row. With
// --spec-draft-temp > 0 the chain is sampled and carries its distributions for exact rejection sampling.
#include <algorithm>
#include <cmath>
#include <queue>

#include "base/error.h"
#include "base/log.h"
#include "model/model.h"
#include "sample/sampler.h"
#include "spec/draft_confidence.h"
#include "spec/draft_marginals.h"
#include "spec/drafters/drafters.h"
#include "spec/eagle3/eagle3_head.h"
#include "spec/registry.h"

namespace bee {

namespace {

struct Eagle3Shared : DrafterShared {
    DrafterTarget target;
    std::unique_ptr<Eagle3Head> head;
};

class Eagle3Drafter : public Drafter {
public:
    Eagle3Drafter(const SpecParams& p, const Eagle3Head& head, ThreadPool& pool, int n_vocab)
        : p_(p), head_(head), pool_(pool), n_vocab_(n_vocab), e_(head.hparams().n_embd) {
        for (int32_t il : head.hparams().target_layers) layers_.push_back(il);
    }
    int n_max() const override { return std::max(1, p_.draft_n_max); }

    std::vector<int32_t> capture_layers() const override {
        std::vector<int32_t> l = layers_;
        std::sort(l.begin(), l.end());
        l.erase(std::unique(l.begin(), l.end()), l.end());
        return l;
    }

    void observe_target(const TargetRows& rows) override {
        if (rows.n <= 0) return;
        const int n = rows.n, ht = head_.hparams().target_n_embd;
        std::vector<int> slot(3, -1);  // the batch's capture slot of each tapped layer
        const std::vector<int32_t>& cap = rows.out.hidden_layers;
        for (int j = 0; j < 3; j++)
            for (size_t s = 0; s < cap.size(); s++)
                if (cap[s] == layers_[j]) slot[j] = (int)s;
        std::vector<float> feat((size_t)n * 3 * ht);
        std::vector<uint8_t> ok(n, 1);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < 3; j++) {
                const float* h = slot[j] < 0 ? nullptr : rows.hidden(i, slot[j]);
                if (!h) {
                    ok[i] = 0;
                    continue;
                }
                std::copy(h, h + ht, feat.begin() + ((size_t)i * 3 + j) * ht);
            }
        std::vector<float> g((size_t)n * e_);
        head_.encode(pool_, feat.data(), n, g.data());
        forget_from(rows.pos(0));
        step_n_ = 0;
        if (rows.prefill || n == 1) {  // every row is in the target's cache now
            for (int i = 0; i < n; i++)
                if (ok[i]) set_g(rows.pos(i), g.data() + (size_t)i * e_);
            return;
        }
        // A verify batch: which rows stay is known in observe().
        step_n_ = n;
        step_pos0_ = rows.pos(0);
        step_g_ = std::move(g);
        step_ok_ = std::move(ok);
    }

    void observe(const VerifyRows& v) override {
        if (step_n_ == 0) return;
        for (size_t i = 0; i < v.committed_rows.size(); i++) {
            const int32_t r = v.committed_rows[i];
            if (r < step_n_ && step_ok_[r]) set_g(step_pos0_ + (int32_t)i, step_g_.data() + (size_t)r * e_);
        }
        step_n_ = 0;
    }

    void draft(const DraftRequest& req, DraftTree& out) override {
        const int32_t T = (int32_t)req.history.size();
        if (T == 0 || (int32_t)have_g_.size() < T || !have_g_[T - 1]) return;  // no features for the seed yet
        sync(req.history, req.id_last);
        const int n = std::min(n_max(), req.n_max);
        const float temp = p_.draft_temp_auto ? req.target_temp : p_.draft_temp;
        const float p_min = req.p_min >= 0 ? req.p_min : p_.draft_p_min;
        const bool tree = temp <= 0 && p_.branch_budget > 0 && p_.draft_top_k > 1;
        const int k = tree ? p_.draft_top_k : 1;
        const int nd = head_.hparams().n_draft_vocab;
        logits_.resize(nd);
        head_.logits(pool_, h_.data(), 1, logits_.data());
        main_.clear();
        conf_.begin(req.row_cost);
        for (int d = 1; d <= n; d++) {
            int32_t token;
            if (temp > 0) {
                token = sample(temp, out);
                if (token < 0) break;
            } else if (!tree && p_min <= 0 && req.row_cost <= 0) {  // a plain chain, nothing to weigh: the argmax
                token = head_.target_id(argmax(logits_.data(), nd));
                out.add(token, out.size() - 1);
            } else {
                main_.emplace_back();
                top_candidates(logits_.data(), nd, k, main_.back());
                const double p1 = std::exp(main_.back().lp[0]);
                if ((p_min > 0 && p1 < p_min) || !conf_.keep(p1)) {  // the next depth does not pay
                    main_.pop_back();
                    break;
                }
                token = head_.target_id(main_.back().id[0]);
                out.add(token, out.size() - 1);
            }
            if (d == n) break;
            const int32_t pos = T - 1 + d;  // the drafted token's cell, fed the previous depth's output
            const Eagle3Rows row{1, &token, &pos, h_.data()};
            std::vector<float> h(e_);
            head_.decode(pool_, kv_, row, h.data(), nullptr);
            h_ = std::move(h);
            head_.logits(pool_, h_.data(), 1, logits_.data());
        }
        kv_.cut(T);  // drop the draft cells; the seed (id_last at T-1) stays
        kv_tok_.resize(kv_.n_cells());
        if (tree) {
            calibrate(conf_, main_);
            add_branches(req.row_cost, out);
        }
    }

    void accept(int n_accepted, bool is_other) override {
        if (!is_other) conf_.accepted(n_accepted);
    }

private:
    const SpecParams& p_;
    const Eagle3Head& head_;
    ThreadPool& pool_;
    const int n_vocab_;
    const int e_;                  // the head's width H
    std::vector<int32_t> layers_;  // the tapped target layers, in the head's feature order
    std::vector<float> g_;         // (positions, H): g of each committed target position
    std::vector<uint8_t> have_g_;  // per position: g_ holds it
    Eagle3Kv kv_;
    std::vector<int32_t> kv_tok_;  // the token each cell was decoded with (the one after its position)
    int step_n_ = 0;               // rows of the verify batch waiting for observe()
    int32_t step_pos0_ = 0;
    std::vector<float> step_g_;
    std::vector<uint8_t> step_ok_;
    std::vector<float> h_, logits_;  // the newest row's pre-norm output and its draft logits
    std::vector<DepthTop> main_;     // the chain's candidates per depth (greedy)
    DraftConfidence conf_;           // where a greedy chain stops (calibrated against acceptance)
    std::unique_ptr<Sampler> sampler_;
    std::vector<float> full_;  // sampled drafting: draft logits over the target's vocabulary

    // The target decoded position p again: everything from p on is stale.
    void forget_from(int32_t p) {
        if ((int32_t)have_g_.size() > p) have_g_.resize(std::max(p, 0));
        g_.resize(have_g_.size() * e_);
        kv_.cut(p);
        kv_tok_.resize(kv_.n_cells());
    }

    void set_g(int32_t pos, const float* g) {
        if ((int32_t)have_g_.size() <= pos) {
            have_g_.resize(pos + 1, 0);
            g_.resize(have_g_.size() * e_);
        }
        std::copy(g, g + e_, g_.begin() + (size_t)pos * e_);
        have_g_[pos] = 1;
    }

    // Brings the head's cache to cells 0..T-2 of this history plus the seed (id_last, g[T-1]) at T-1,
    // decoding what it lacks in one batch; h_ = the seed's pre-norm output.
    void sync(const std::vector<int32_t>& history, int32_t id_last) {
        const int32_t T = (int32_t)history.size();
        auto next_token = [&](int32_t k) { return k + 1 < T ? history[k + 1] : id_last; };
        int keep = 0;  // cells still right: below T-1 and decoded with the token now after them
        while (keep < kv_.n_cells() && kv_.pos[keep] < T - 1 && kv_tok_[keep] == next_token(kv_.pos[keep])) keep++;
        kv_.cut(keep < kv_.n_cells() ? kv_.pos[keep] : INT32_MAX);
        kv_tok_.resize(kv_.n_cells());
        std::vector<int32_t> tok, pos;
        std::vector<float> g;
        for (int32_t k = kv_.n_cells() ? kv_.pos.back() + 1 : 0; k < T; k++) {
            if (!have_g_[k]) continue;  // a position the drafter never saw (a reused prefix): a gap
            tok.push_back(next_token(k));
            pos.push_back(k);
            g.insert(g.end(), g_.begin() + (size_t)k * e_, g_.begin() + (size_t)(k + 1) * e_);
        }
        const int n = (int)tok.size();  // >= 1: the seed's position T-1 has g (checked by draft())
        std::vector<float> h((size_t)n * e_);
        const Eagle3Rows rows{n, tok.data(), pos.data(), g.data()};
        head_.decode(pool_, kv_, rows, h.data(), nullptr);
        kv_tok_.insert(kv_tok_.end(), tok.begin(), tok.end());
        h_.assign(h.end() - e_, h.end());
    }

    // Sampled drafting: one token from the draft distribution at temperature `temp`, its distribution
    // recorded for exact rejection sampling; -1 if nothing can be drawn.
    int32_t sample(float temp, DraftTree& out) {
        if (!sampler_) {
            SamplingParams sp;
            sp.temp = temp;
            sp.top_k = 40;
            sp.top_p = 1.0f;
            sp.min_p = 0.0f;
            sp.seed = 0x5eed;
            sampler_ = std::make_unique<Sampler>(sp, n_vocab_);
        }
        full_.resize(n_vocab_);
        head_.scatter_logits(logits_.data(), full_.data(), n_vocab_);
        sampler_->apply(full_.data());
        if (sampler_->candidates().empty()) return -1;
        const int32_t token = sampler_->draw(sampler_->candidates());
        out.q.push_back(sampler_->candidates());
        out.add(token, out.size() - 1);
        return token;
    }

    // Runners-up along the chain as extra leaves, best first by the probability of their path, while the
    // budget lasts and each is likelier to be accepted than its verify row costs.
    void add_branches(double row_cost, DraftTree& out) {
        struct Cand {
            float score;
            int depth, rank;
            bool operator<(const Cand& o) const { return score < o.score; }
        };
        std::priority_queue<Cand> heap;
        float prefix = 0;  // log-probability of the chain down to depth d-1
        for (int d = 0; d < (int)main_.size() && d < out.size(); d++) {
            for (int r = 1; r < (int)main_[d].id.size(); r++) heap.push({prefix + main_[d].lp[r], d, r});
            prefix += main_[d].lp[0];
        }
        for (int added = 0; added < p_.branch_budget && !heap.empty(); added++) {
            const Cand c = heap.top();
            heap.pop();
            if (row_cost >= 0 && std::exp(c.score) <= row_cost) break;
            out.add(head_.target_id(main_[c.depth].id[c.rank]), c.depth == 0 ? -1 : c.depth - 1);
        }
    }
};

}  // namespace

std::unique_ptr<DrafterShared> make_eagle3_shared(const SpecParams& p, const Model& target) {
    if (p.draft_model.empty()) fail("--spec-type draft-eagle3 needs an EAGLE-3 head: give it with -md HEAD.gguf");
    auto s = std::make_unique<Eagle3Shared>();
    s->target = drafter_target_of(target);
    s->head = Eagle3Head::load(p.draft_model, s->target);
    const Eagle3HParams& hp = s->head->hparams();
    BEE_LOG_INFO("EAGLE-3 head %s: width %d, %d heads, taps [%d, %d, %d], draft vocabulary %d", p.draft_model.c_str(),
                 hp.n_embd, hp.n_head, hp.target_layers[0], hp.target_layers[1], hp.target_layers[2], hp.n_draft_vocab);
    return s;
}

std::unique_ptr<Drafter> make_eagle3(const DrafterEnv& env) {
    if (!env.pool) fail("draft-eagle3: no thread pool given to the drafter");
    return std::make_unique<Eagle3Drafter>(env.params, *static_cast<Eagle3Shared*>(env.shared)->head, *env.pool,
                                           env.target.hparams().n_vocab);
}

// The head file is given with -md like a draft model; -md alone picks this kind when the file's
// architecture is eagle3 (file_arch).
extern const DrafterKind kDrafterEagle3 = {"draft-eagle3",
                                           "eagle3",
                                           "draft_eagle3",
                                           {},
                                           "-md HEAD.gguf",
                                           [](const SpecParams& p) { return !p.draft_model.empty(); },
                                           true,
                                           make_eagle3,
                                           make_eagle3_shared,
                                           "eagle3"};

}  // namespace bee
