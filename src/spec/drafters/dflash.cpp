// spec/drafters/dflash: DFlash block drafting (--spec-type dflash, alias draft-dflash; -md DRAFTER.gguf in
// llama.cpp's `dflash` or the fork's `dflash-draft` dialect; specs/drafters.md §2.4–§2.10, §8.2). The
// drafter reads the target's hidden states, so it follows the target position by position:
//
//   - observe_target turns each decoded row's tapped layers into one context cell of the sequence's
//     DflashContext at the row's position (a prompt chunk's rows and a one-row step at once; a verify
//     batch's rows wait for observe(), which says which rows were committed, so trees and other drafters'
//     accepted drafts are followed exactly). The rows wait as raw features until a draft needs them (then
//     every queued sequence's become cells in one pass) or 64 of them pile up. Any batch at position p drops the cells from p on; a cell whose
//     token is not the history's any more (a prefix decoded while another Speculator served the slot) is
//     dropped at the next draft. The context keeps the last 4096 positions; a block attends to the last
//     --spec-dflash-cross-ctx of them;
//   - draft() runs one block [id_last, MASK × n] at positions T…T+n in one pass: row i's logits are the
//     marginal of the token at T+1+i. A flat chain is the top-1 of each row; with --spec-branch-budget the
//     DDTree best-first tree over the rows' top-k marginals (draft_marginals.h); with --spec-draft-temp > 0
//     each row is sampled and carries its distribution for exact rejection sampling.
#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "base/log.h"
#include "model/model.h"
#include "spec/dflash/dflash_model.h"
#include "spec/draft_confidence.h"
#include "spec/draft_marginals.h"
#include "spec/drafters/drafters.h"
#include "spec/registry.h"

namespace bee {

namespace {

constexpr int kKeepPositions = 4096;  // context positions kept per sequence (the fork's ring)
constexpr int kDropSlack = 512;       // cells beyond the kept ones before the oldest are dropped (amortized)
constexpr int kAddAt = 64;            // pending rows a sequence adds to its context without waiting for a draft

class DflashDrafter;
// Drafts the sequences' blocks in one drafter pass (declared for DflashShared).
void draft_together(const DflashModel& m, ThreadPool& pool, int cross_ctx, const std::vector<DflashDrafter*>& seqs);

struct DflashShared : DrafterShared {
    DrafterTarget target;
    std::unique_ptr<DflashModel> model;
    ThreadPool* pool = nullptr;  // the target's threads (the drafters')
    int cross_ctx = DflashModel::kDefaultCrossCtx;
    std::vector<DflashDrafter*> queued;  // Drafter::queue .. draft_queued()
    void draft_queued() override;
};

class DflashDrafter : public Drafter {
public:
    DflashDrafter(const SpecParams& p, DflashShared& shared, ThreadPool& pool, int n_vocab)
        : p_(p), shared_(shared), m_(*shared.model), hp_(m_.hparams()), pool_(pool), n_vocab_(n_vocab) {}

    int n_max() const override { return std::max(1, std::min(p_.draft_n_max, hp_.block_size - 1)); }

    std::vector<int32_t> capture_layers() const override {
        std::vector<int32_t> l = hp_.target_layers;
        std::sort(l.begin(), l.end());
        l.erase(std::unique(l.begin(), l.end()), l.end());
        return l;
    }

    void observe_target(const TargetRows& rows) override {
        if (rows.n <= 0) return;
        const int n = rows.n, e = hp_.n_embd, taps = (int)hp_.target_layers.size();
        std::vector<int> slot(taps, -1);  // the batch's capture slot of each tapped layer
        const std::vector<int32_t>& cap = rows.out.hidden_layers;
        for (int j = 0; j < taps; j++)
            for (size_t s = 0; s < cap.size(); s++)
                if (cap[s] == hp_.target_layers[j]) slot[j] = (int)s;
        std::vector<float> feat((size_t)n * hp_.n_features());  // (n, taps * H), taps in file order
        std::vector<uint8_t> ok(n, 1);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < taps && ok[i]; j++) {
                const float* h = slot[j] < 0 ? nullptr : rows.hidden(i, slot[j]);
                if (!h) ok[i] = 0;
                else std::copy(h, h + e, feat.begin() + ((size_t)i * taps + j) * e);
            }
        forget_from(rows.pos(0));
        step_n_ = 0;
        if (rows.prefill || n == 1) {  // every row is in the target's cache now
            for (int i = 0; i < n; i++)
                if (ok[i]) add_pending(rows.pos(i), rows.token(i), feat.data() + (size_t)i * hp_.n_features());
            if ((int)pend_pos_.size() >= kAddAt) flush_pending();
            return;
        }
        // A verify batch: which rows stay is known in observe().
        step_n_ = n;
        step_pos0_ = rows.pos(0);
        step_feat_ = std::move(feat);
        step_ok_ = std::move(ok);
        step_tok_.resize(n);
        for (int i = 0; i < n; i++) step_tok_[i] = rows.token(i);
    }

    void observe(const VerifyRows& v) override {
        main_accepted_ = main_chain_accepted(v.committed_rows);  // for accept(), if this drafter drafted
        if (step_n_ == 0) return;
        const size_t nf = hp_.n_features();
        for (size_t i = 0; i < v.committed_rows.size(); i++) {
            const int32_t r = v.committed_rows[i];
            if (r < step_n_ && step_ok_[r])
                add_pending(step_pos0_ + (int32_t)i, step_tok_[r], step_feat_.data() + r * nf);
        }
        step_n_ = 0;
        if ((int)pend_pos_.size() >= kAddAt) flush_pending();
    }

    void draft(const DraftRequest& req, DraftTree& out) override {
        if (!start(req)) return;
        flush_pending();
        const DflashBlock b = block();
        logits_.resize((size_t)b.n_draft * hp_.n_draft_vocab);
        m_.draft(pool_, &b, 1, p_.dflash_cross_ctx, logits_.data());
        finish(logits_.data(), out);
    }

    bool queue(const DraftRequest& req) override {
        if (!start(req)) return false;
        shared_.queued.push_back(this);
        return true;
    }

    void take(DraftTree& out) override {
        out = std::move(job_.out);
        job_.out.clear();
    }
    void drop_draft() { job_.out.clear(); }  // a failed shared pass: no draft

    // Drafting in steps, so that draft_together can run several sequences' blocks in one pass. start():
    // this draft's settings, false if there is nothing to draft from (no context cells yet).
    bool start(const DraftRequest& req) {
        const int32_t T = (int32_t)req.history.size();
        if (T == 0) return false;
        forget_from(T);
        drop_stale(req.history);
        if (ctx_.n_cells() + pend_pos_.size() == 0) return false;  // nothing of this sequence seen yet
        job_ = Job{};
        job_.n = std::min(n_max(), req.n_max);
        if (job_.n < 1) return false;
        job_.T = T;
        job_.id_last = req.id_last;
        job_.temp = p_.draft_temp_auto ? req.target_temp : p_.draft_temp;
        job_.p_min = req.p_min >= 0 ? req.p_min : p_.draft_p_min;
        job_.row_cost = req.row_cost;
        return true;
    }
    DflashBlock block() const { return DflashBlock{&ctx_, job_.id_last, job_.T, job_.n}; }

    // The draft from the block's logits (n, n_draft_vocab): a flat chain of each row's top token, a DDTree,
    // or a sampled chain.
    void finish(const float* logits, DraftTree& out) {
        const int n = job_.n, nd = hp_.n_draft_vocab;
        if (job_.temp > 0) return sample_chain(job_.temp, logits, n, out);
        const bool tree = p_.branch_budget > 0 && p_.draft_top_k > 1;
        marg_.resize(n);
        conf_.begin(job_.row_cost);
        int len = 0;
        for (; len < n; len++) {
            DepthTop& t = marg_[len];
            top_candidates(logits + (size_t)len * nd, nd, tree ? p_.draft_top_k : 1, t);
            const double p1 = std::exp(t.lp[0]);
            if ((job_.p_min > 0 && p1 < job_.p_min) || !conf_.keep(p1)) break;
            for (int32_t& id : t.id) id = m_.target_id(id);
            out.add(t.id[0], out.size() - 1);
        }
        marg_.resize(len);
        if (tree && len > 0) {
            calibrate(conf_, marg_);
            ddtree_add_branches(marg_, ddtree_branch_budget(n_max(), n, p_.branch_budget, p_.draft_top_k),
                                job_.row_cost, out);
        }
    }
    DraftTree& queued_out() { return job_.out; }

    // Rows waiting to become context cells (positions ascending, after every cell): draft_together adds
    // every queued sequence's in one pass.
    DflashContext& context() { return ctx_; }
    int n_pending() const { return (int)pend_pos_.size(); }
    const float* pending_features() const { return pend_feat_.data(); }
    const int32_t* pending_pos() const { return pend_pos_.data(); }
    // The pending rows are cells of context() now.
    void pending_added() {
        ctx_tok_.insert(ctx_tok_.end(), pend_tok_.begin(), pend_tok_.end());
        clear_pending(0);
        if (ctx_.n_cells() > kKeepPositions + kDropSlack) {
            ctx_.drop_before(ctx_.pos.back() + 1 - kKeepPositions);
            ctx_tok_.erase(ctx_tok_.begin(), ctx_tok_.end() - ctx_.n_cells());
        }
    }

    void accept(int n_accepted, bool is_other) override {
        (void)n_accepted;  // with a tree the path may have left the main chain: main_accepted_ counts the chain
        if (!is_other) conf_.accepted(main_accepted_);
    }

private:
    struct Job {  // the draft in progress
        int32_t T = 0, id_last = 0;
        int n = 0;
        float temp = 0, p_min = 0;
        double row_cost = -1;
        DraftTree out;  // a queued draft's result
    };
    const SpecParams& p_;
    DflashShared& shared_;
    const DflashModel& m_;
    const DflashHParams& hp_;
    ThreadPool& pool_;
    const int n_vocab_;
    DflashContext ctx_;                         // the sequence's context cells, ascending position
    std::vector<int32_t> ctx_tok_;              // (cells) the token the target decoded at each cell's position
    int step_n_ = 0;                            // rows of the verify batch waiting for observe()
    int32_t step_pos0_ = 0;                     // their first position
    std::vector<float> step_feat_;              // (step_n_, n_features) their features
    std::vector<uint8_t> step_ok_;              // (step_n_) 1: every tap was captured
    std::vector<int32_t> step_tok_;             // (step_n_) their tokens
    std::vector<int32_t> pend_pos_, pend_tok_;  // rows waiting to become cells (flush_pending)
    std::vector<float> pend_feat_;              // (pending, n_features)
    Job job_;
    std::vector<float> logits_;   // (n, n_draft_vocab) the block's mask rows
    std::vector<DepthTop> marg_;  // the top-k marginal of each depth (greedy)
    int main_accepted_ = 0;       // main-chain nodes the last verify path accepted
    DraftConfidence conf_;        // where a greedy chain stops (calibrated against acceptance)
    std::unique_ptr<Sampler> sampler_;
    std::vector<float> full_;  // sampled drafting: one row's logits over the target's vocabulary

    // The target decoded position p again: every cell from p on is stale.
    void forget_from(int32_t p) {
        ctx_.cut(p);
        ctx_tok_.resize(ctx_.n_cells());
        size_t keep = pend_pos_.size();
        while (keep > 0 && pend_pos_[keep - 1] >= p) keep--;
        clear_pending(keep);
    }

    // Cells decoded with another token than the history's at their position (the slot's cache was
    // refilled while another Speculator served it) are stale, and so is everything after them.
    void drop_stale(const std::vector<int32_t>& history) {
        for (int c = 0; c < ctx_.n_cells(); c++)
            if (ctx_tok_[c] != history[ctx_.pos[c]]) return forget_from(ctx_.pos[c]);
        for (size_t i = 0; i < pend_pos_.size(); i++)
            if (pend_tok_[i] != history[pend_pos_[i]]) return forget_from(pend_pos_[i]);
    }

    // Rows become context cells when a draft needs them or kAddAt of them wait: a slot whose depth policy
    // is off pays no drafter work, and the slots of a step add theirs in one pass.
    void add_pending(int32_t pos, int32_t tok, const float* feat) {
        pend_pos_.push_back(pos);
        pend_tok_.push_back(tok);
        pend_feat_.insert(pend_feat_.end(), feat, feat + hp_.n_features());
    }
    void clear_pending(size_t keep) {
        pend_pos_.resize(keep);
        pend_tok_.resize(keep);
        pend_feat_.resize(keep * hp_.n_features());
    }
    void flush_pending() {
        if (pend_pos_.empty()) return;
        m_.add_context(pool_, ctx_, pend_feat_.data(), pend_pos_.data(), (int)pend_pos_.size());
        pending_added();
    }

    // Sampled drafting: each row's token drawn from its marginal at temperature `temp`, the distribution
    // recorded for exact rejection sampling (a chain; DFlash's rows do not depend on the earlier draws).
    void sample_chain(float temp, const float* logits, int n, DraftTree& out) {
        if (!sampler_ || sampler_->params().temp != temp) {  // --spec-draft-temp auto follows each request
            SamplingParams sp;
            sp.temp = temp;
            sp.top_k = 40;
            sp.top_p = 1.0f;
            sp.min_p = 0.0f;
            sp.seed = 0x5eed;
            sampler_ = std::make_unique<Sampler>(sp, n_vocab_);
        }
        full_.resize(n_vocab_);
        for (int d = 0; d < n; d++) {
            m_.scatter_logits(logits + (size_t)d * hp_.n_draft_vocab, full_.data(), n_vocab_);
            sampler_->apply(full_.data());
            if (sampler_->candidates().empty()) return;
            const int32_t token = sampler_->draw(sampler_->candidates());
            out.q.push_back(sampler_->candidates());
            out.add(token, out.size() - 1);
        }
    }
};

void draft_together(const DflashModel& m, ThreadPool& pool, int cross_ctx, const std::vector<DflashDrafter*>& seqs) {
    {  // the rows waiting to become context cells, every sequence's in one pass
        std::vector<DflashContext*> ctxs;
        std::vector<int> counts;
        std::vector<float> feat;
        std::vector<int32_t> pos;
        const size_t nf = m.hparams().n_features();
        for (DflashDrafter* d : seqs) {
            ctxs.push_back(&d->context());
            counts.push_back(d->n_pending());
            feat.insert(feat.end(), d->pending_features(), d->pending_features() + d->n_pending() * nf);
            pos.insert(pos.end(), d->pending_pos(), d->pending_pos() + d->n_pending());
        }
        m.add_contexts(pool, ctxs.data(), counts.data(), (int)ctxs.size(), feat.data(), pos.data());
        for (DflashDrafter* d : seqs) d->pending_added();
    }
    std::vector<DflashBlock> blocks;
    size_t rows = 0;
    for (DflashDrafter* d : seqs) {
        blocks.push_back(d->block());
        rows += (size_t)blocks.back().n_draft;
    }
    const int nd = m.hparams().n_draft_vocab;
    std::vector<float> logits(rows * nd);
    m.draft(pool, blocks.data(), (int)blocks.size(), cross_ctx, logits.data());
    size_t row = 0;
    for (size_t i = 0; i < seqs.size(); i++) {
        seqs[i]->finish(logits.data() + row * nd, seqs[i]->queued_out());
        row += (size_t)blocks[i].n_draft;
    }
}

void DflashShared::draft_queued() {
    if (queued.empty()) return;
    std::vector<DflashDrafter*> seqs;
    seqs.swap(queued);
    try {
        draft_together(*model, *pool, cross_ctx, seqs);
    } catch (const std::exception& e) {  // speculation is an optimisation: these slots go on without a draft
        BEE_LOG_ERROR("dflash: drafting %zu sequences together failed: %s", seqs.size(), e.what());
        for (auto* d : seqs) d->drop_draft();
    }
}

}  // namespace

std::unique_ptr<DrafterShared> make_dflash_shared(const SpecParams& p, const Model& target) {
    if (p.draft_model.empty()) fail("--spec-type dflash needs a DFlash drafter: give it with -md DRAFTER.gguf");
    if (p.draft_temp > 0 && !p.draft_temp_auto && p.branch_budget > 0)
        fail(
            "--spec-type dflash: --spec-draft-temp %g samples chains, which cannot be DDTree trees: give "
            "--spec-branch-budget 0 for sampled drafting, or --spec-draft-temp 0 (or auto) for trees",
            p.draft_temp);
    auto s = std::make_unique<DflashShared>();
    s->target = drafter_target_of(target);
    s->model = DflashModel::load(p.draft_model, s->target);
    const DflashHParams& hp = s->model->hparams();
    std::string layers;
    for (int32_t il : hp.target_layers) layers += (layers.empty() ? "" : ", ") + std::to_string(il);
    const std::string mode = p.branch_budget > 0 ? "DDTree, branch budget " + std::to_string(p.branch_budget) +
                                                       ", top-k " + std::to_string(p.draft_top_k)
                                                 : std::string("flat");
    BEE_LOG_INFO("DFlash drafter %s (%s): %d layers, block %d, taps [%s], draft vocabulary %d, cross-ctx %d, %s",
                 p.draft_model.c_str(), hp.dialect == DflashDialect::fork ? "dflash-draft" : "dflash", hp.n_layer,
                 hp.block_size, layers.c_str(), hp.n_draft_vocab, p.dflash_cross_ctx, mode.c_str());
    return s;
}

std::unique_ptr<Drafter> make_dflash(const DrafterEnv& env) {
    if (!env.pool) fail("dflash: no thread pool given to the drafter");
    auto* shared = static_cast<DflashShared*>(env.shared);
    shared->pool = env.pool;
    shared->cross_ctx = env.params.dflash_cross_ctx;
    return std::make_unique<DflashDrafter>(env.params, *shared, *env.pool, env.target.hparams().n_vocab);
}

// The drafter file is given with -md like a draft model; -md alone picks this kind when the file's
// architecture is either dialect's (file_arch).
extern const DrafterKind kDrafterDflash =
    {"dflash",
     "draft-dflash",
     "draft_dflash",
     {{"--spec-dflash-cross-ctx", "N", "dflash: context positions a block attends to (at most 4096 are kept) [512]",
       [](SpecParams& p) { return &p.dflash_cross_ctx; }, nullptr, 1, kKeepPositions},
      {"--spec-dflash-max-slots", "N", "dflash: server slots that draft with DFlash, the rest without it (0: all) [0]",
       [](SpecParams& p) { return &p.dflash_max_slots; }, nullptr, 0, 1 << 16}},
     "-md DRAFTER.gguf",
     [](const SpecParams& p) { return !p.draft_model.empty(); },
     true,
     make_dflash,
     make_dflash_shared,
     "dflash,dflash-draft",
     [](const SpecParams& p) { return p.dflash_max_slots; }};

}  // namespace bee
