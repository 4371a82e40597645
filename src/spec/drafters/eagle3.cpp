// spec/drafters/eagle3: EAGLE-3 drafting (--spec-type draft-eagle3, -md HEAD.gguf; specs/drafters.md §3.4,
// §3.5, §8.1). The head reads the target's hidden states, so it follows the target position by position:
//
//   - observe_target keeps each decoded row's three tapped layers, fused into g = fc(features) per target
//     position when a draft needs them — every queued sequence's rows in one fc pass (a verify batch's rows
//     wait for observe() to say which rows were committed);
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

constexpr int kEncodeAt = 64;  // pending feature rows a sequence encodes without waiting for a draft

class Eagle3Drafter;
// Drafts the sequences together: one head pass per depth for all of them (declared for Eagle3Shared).
void draft_together(const Eagle3Head& head, ThreadPool& pool, const std::vector<Eagle3Drafter*>& seqs);

struct Eagle3Shared : DrafterShared {
    DrafterTarget target;
    std::unique_ptr<Eagle3Head> head;
    ThreadPool* pool = nullptr;          // the target's threads (the drafters')
    std::vector<Eagle3Drafter*> queued;  // Drafter::queue .. draft_queued()
    void draft_queued() override;
};

class Eagle3Drafter : public Drafter {
public:
    Eagle3Drafter(const SpecParams& p, Eagle3Shared& shared, ThreadPool& pool, int n_vocab)
        : p_(p),
          shared_(shared),
          head_(*shared.head),
          pool_(pool),
          n_vocab_(n_vocab),
          e_(head_.hparams().n_embd),
          f3_(3 * head_.hparams().target_n_embd) {
        for (int32_t il : head_.hparams().target_layers) layers_.push_back(il);
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
        forget_from(rows.pos(0));
        step_n_ = 0;
        if (rows.prefill || n == 1) {  // every row is in the target's cache now
            for (int i = 0; i < n; i++)
                if (ok[i]) add_pending(rows.pos(i), feat.data() + (size_t)i * f3_);
            if ((int)pend_pos_.size() >= kEncodeAt) encode_pending();
            return;
        }
        // A verify batch: which rows stay is known in observe().
        step_n_ = n;
        step_pos0_ = rows.pos(0);
        step_feat_ = std::move(feat);
        step_ok_ = std::move(ok);
    }

    void observe(const VerifyRows& v) override {
        main_accepted_ = main_chain_accepted(v.committed_rows);  // for accept(), if this drafter drafted
        if (step_n_ == 0) return;
        for (size_t i = 0; i < v.committed_rows.size(); i++) {
            const int32_t r = v.committed_rows[i];
            if (r < step_n_ && step_ok_[r]) add_pending(step_pos0_ + (int32_t)i, step_feat_.data() + (size_t)r * f3_);
        }
        step_n_ = 0;
        if ((int)pend_pos_.size() >= kEncodeAt) encode_pending();
    }

    // Features waiting for fc (positions ascending): draft_together encodes every sequence's in one pass.
    int n_pending() const { return (int)pend_pos_.size(); }
    const float* pending_features() const { return pend_.data(); }
    // g of the pending positions (n_pending() rows) is computed: keep it and clear the queue.
    void set_pending_g(const float* g) {
        for (size_t i = 0; i < pend_pos_.size(); i++)
            std::copy(g + i * e_, g + (i + 1) * e_, g_.begin() + (size_t)pend_pos_[i] * e_);
        pend_.clear();
        pend_pos_.clear();
    }

    void draft(const DraftRequest& req, DraftTree& out) override {
        if (!start(req)) return;
        draft_together(head_, pool_, {this});
        take(out);
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
    // A failed shared pass: no draft, and no draft cell left in the head's cache.
    void drop_draft() {
        job_.out.clear();
        main_.clear();
        kv_.cut(job_.T);
        kv_tok_.resize(kv_.n_cells());
    }

    // Drafting in steps, so that draft_together can run several sequences' head passes as one.
    // start(): this draft's settings, false if there is nothing to draft from (no features for the seed).
    bool start(const DraftRequest& req) {
        const int32_t T = (int32_t)req.history.size();
        if (T == 0 || (int32_t)have_g_.size() < T || !have_g_[T - 1]) return false;
        job_ = Job{};
        job_.history = &req.history;
        job_.id_last = req.id_last;
        job_.T = T;
        job_.n = std::min(n_max(), req.n_max);
        job_.temp = p_.draft_temp_auto ? req.target_temp : p_.draft_temp;
        job_.p_min = req.p_min >= 0 ? req.p_min : p_.draft_p_min;
        job_.tree = job_.temp <= 0 && p_.branch_budget > 0 && p_.draft_top_k > 1;
        job_.row_cost = req.row_cost;
        main_.clear();
        conf_.begin(req.row_cost);
        return true;
    }

    // Brings the head's cache to cells 0..T-2 of the history plus the seed (id_last, g[T-1]) at T-1:
    // cuts the cells that are no longer right and appends the rows it lacks to tok / pos / g.
    void catch_up(std::vector<int32_t>& tok, std::vector<int32_t>& pos, std::vector<float>& g) {
        const std::vector<int32_t>& history = *job_.history;
        const int32_t T = job_.T;
        auto next_token = [&](int32_t k) { return k + 1 < T ? history[k + 1] : job_.id_last; };
        int keep = 0;  // cells still right: below T-1 and decoded with the token now after them
        while (keep < kv_.n_cells() && kv_.pos[keep] < T - 1 && kv_tok_[keep] == next_token(kv_.pos[keep])) keep++;
        kv_.cut(keep < kv_.n_cells() ? kv_.pos[keep] : INT32_MAX);
        kv_tok_.resize(kv_.n_cells());
        const size_t n0 = tok.size();
        for (int32_t k = kv_.n_cells() ? kv_.pos.back() + 1 : 0; k < T; k++) {
            if (!have_g_[k]) continue;  // a position the drafter never saw (a reused prefix): a gap
            tok.push_back(next_token(k));
            pos.push_back(k);
            g.insert(g.end(), g_.begin() + (size_t)k * e_, g_.begin() + (size_t)(k + 1) * e_);
        }
        kv_tok_.insert(kv_tok_.end(), tok.begin() + (std::ptrdiff_t)n0, tok.end());
        // >= 1 row: the seed's position T-1 has g (checked by start())
    }

    // The next depth from the newest row's draft logits: adds its token to the draft, or stops. True if
    // the chain goes on: a row (next_token(), next_pos(), hidden()) for the next head pass.
    bool pick(const float* logits) {
        const int nd = head_.hparams().n_draft_vocab;
        DraftTree& out = job_.out;
        int32_t token;
        if (job_.temp > 0) {
            token = sample(job_.temp, logits, out);
            if (token < 0) return false;
        } else if (!job_.tree && job_.p_min <= 0 && job_.row_cost <= 0) {  // a plain chain, nothing to weigh
            token = head_.target_id(argmax(logits, nd));
            out.add(token, out.size() - 1);
        } else {
            main_.emplace_back();
            top_candidates(logits, nd, job_.tree ? p_.draft_top_k : 1, main_.back());
            const double p1 = std::exp(main_.back().lp[0]);
            if ((job_.p_min > 0 && p1 < job_.p_min) || !conf_.keep(p1)) {  // the next depth does not pay
                main_.pop_back();
                return false;
            }
            token = head_.target_id(main_.back().id[0]);
            out.add(token, out.size() - 1);
        }
        job_.d++;
        job_.next = token;
        return job_.d < job_.n;
    }
    int32_t next_token() const { return job_.next; }
    int32_t next_pos() const { return job_.T - 1 + job_.d; }  // the drafted token's cell
    Eagle3Kv& kv() { return kv_; }
    std::vector<float>& hidden() { return h_; }  // the newest row's pre-norm output (feeds the next depth)

    // Drops the draft cells (the seed stays) and adds the tree's branches.
    void end_draft() {
        kv_.cut(job_.T);
        kv_tok_.resize(kv_.n_cells());
        if (job_.tree) {
            calibrate(conf_, main_);
            add_branches(job_.row_cost, job_.out);
        }
    }

    void accept(int n_accepted, bool is_other) override {
        (void)n_accepted;  // with a tree the path may have left the main chain: main_accepted_ counts the chain
        if (!is_other) conf_.accepted(main_accepted_);
    }

private:
    struct Job {  // the draft in progress
        const std::vector<int32_t>* history = nullptr;
        int32_t id_last = 0, T = 0;
        int n = 0, d = 0;  // depth cap, depths drafted
        float temp = 0, p_min = 0;
        bool tree = false;
        double row_cost = -1;
        int32_t next = 0;  // the token drafted last
        DraftTree out;
    };
    const SpecParams& p_;
    Eagle3Shared& shared_;
    const Eagle3Head& head_;
    ThreadPool& pool_;
    const int n_vocab_;
    const int e_;                  // the head's width H
    std::vector<int32_t> layers_;  // the tapped target layers, in the head's feature order
    const int f3_;                 // a feature row's width, 3 * H_t
    std::vector<float> g_;         // (positions, H): g of each committed target position
    std::vector<uint8_t> have_g_;  // per position: g_ holds it, or its features are pending
    Eagle3Kv kv_;
    std::vector<int32_t> kv_tok_;  // the token each cell was decoded with (the one after its position)
    int step_n_ = 0;               // rows of the verify batch waiting for observe()
    int32_t step_pos0_ = 0;
    std::vector<float> step_feat_;  // (step_n_, 3 * H_t) the verify batch's features
    std::vector<uint8_t> step_ok_;
    // Positions whose features wait for fc, kept raw until a draft needs them (then every queued sequence's
    // are encoded in one pass) or kEncodeAt of them pile up: a slot whose depth policy is off pays no head work.
    std::vector<float> pend_;  // (pending, 3 * H_t)
    std::vector<int32_t> pend_pos_;
    Job job_;
    std::vector<float> h_;        // the newest row's pre-norm output
    std::vector<DepthTop> main_;  // the chain's candidates per depth (greedy)
    int main_accepted_ = 0;       // main-chain nodes the last verify path accepted
    DraftConfidence conf_;        // where a greedy chain stops (calibrated against acceptance)
    std::unique_ptr<Sampler> sampler_;
    std::vector<float> full_;  // sampled drafting: draft logits over the target's vocabulary

    // The target decoded position p again: everything from p on is stale.
    void forget_from(int32_t p) {
        if ((int32_t)have_g_.size() > p) have_g_.resize(std::max(p, 0));
        g_.resize(have_g_.size() * e_);
        size_t keep = pend_pos_.size();
        while (keep > 0 && pend_pos_[keep - 1] >= p) keep--;
        pend_pos_.resize(keep);
        pend_.resize(keep * f3_);
        kv_.cut(p);
        kv_tok_.resize(kv_.n_cells());
    }

    void add_pending(int32_t pos, const float* feat) {
        if ((int32_t)have_g_.size() <= pos) {
            have_g_.resize(pos + 1, 0);
            g_.resize(have_g_.size() * e_);
        }
        have_g_[pos] = 1;
        pend_pos_.push_back(pos);
        pend_.insert(pend_.end(), feat, feat + f3_);
    }

    void encode_pending() {
        std::vector<float> g(pend_pos_.size() * e_);
        head_.encode(pool_, pend_.data(), (int)pend_pos_.size(), g.data());
        set_pending_g(g.data());
    }

    // Sampled drafting: one token from the draft distribution at temperature `temp`, its distribution
    // recorded for exact rejection sampling; -1 if nothing can be drawn.
    int32_t sample(float temp, const float* logits, DraftTree& out) {
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
        head_.scatter_logits(logits, full_.data(), n_vocab_);
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

void draft_together(const Eagle3Head& head, ThreadPool& pool, const std::vector<Eagle3Drafter*>& seqs) {
    const int e = head.hparams().n_embd, nd = head.hparams().n_draft_vocab, f3 = 3 * head.hparams().target_n_embd;
    {  // the features waiting for fc, every sequence's in one pass
        std::vector<float> feat, g;
        for (Eagle3Drafter* d : seqs)
            feat.insert(feat.end(), d->pending_features(), d->pending_features() + (size_t)d->n_pending() * f3);
        const int n = (int)(feat.size() / f3);
        g.resize((size_t)n * e);
        if (n > 0) head.encode(pool, feat.data(), n, g.data());
        size_t row = 0;
        for (Eagle3Drafter* d : seqs) {
            const int k = d->n_pending();
            if (k > 0) d->set_pending_g(g.data() + row * e);
            row += (size_t)k;
        }
    }
    // The cells each head lacks and the seeds, in one pass.
    std::vector<int32_t> tok, pos, seq;
    std::vector<float> g;
    std::vector<Eagle3Kv*> kvs;
    std::vector<int> last_row;  // each sequence's seed row
    for (size_t i = 0; i < seqs.size(); i++) {
        seqs[i]->catch_up(tok, pos, g);
        seq.resize(tok.size(), (int32_t)i);
        kvs.push_back(&seqs[i]->kv());
        last_row.push_back((int)tok.size() - 1);
    }
    std::vector<float> h(tok.size() * e);
    head.decode(pool, kvs.data(), (int)kvs.size(),
                Eagle3Rows{(int)tok.size(), tok.data(), pos.data(), g.data(), seq.data()}, h.data(), nullptr);
    std::vector<Eagle3Drafter*> live = seqs;  // sequences whose chain goes on
    std::vector<float> hs(live.size() * e), logits(live.size() * nd);
    for (size_t i = 0; i < live.size(); i++) {
        live[i]->hidden().assign(h.begin() + (size_t)last_row[i] * e, h.begin() + (size_t)(last_row[i] + 1) * e);
        std::copy(live[i]->hidden().begin(), live[i]->hidden().end(), hs.begin() + i * e);
    }
    head.logits(pool, hs.data(), (int)live.size(), logits.data());
    // Then one row per sequence and depth, fed the previous depth's output, while any chain goes on.
    while (!live.empty()) {
        std::vector<Eagle3Drafter*> next;
        tok.clear(), pos.clear(), seq.clear(), kvs.clear();
        hs.clear();
        for (size_t i = 0; i < live.size(); i++) {
            if (!live[i]->pick(logits.data() + i * nd)) continue;
            seq.push_back((int32_t)next.size());
            next.push_back(live[i]);
            tok.push_back(live[i]->next_token());
            pos.push_back(live[i]->next_pos());
            kvs.push_back(&live[i]->kv());
            hs.insert(hs.end(), live[i]->hidden().begin(), live[i]->hidden().end());
        }
        live.swap(next);
        if (live.empty()) break;
        const int n = (int)live.size();
        h.resize((size_t)n * e);
        logits.resize((size_t)n * nd);
        head.decode(pool, kvs.data(), n, Eagle3Rows{n, tok.data(), pos.data(), hs.data(), seq.data()}, h.data(),
                    logits.data());
        for (int i = 0; i < n; i++)
            live[i]->hidden().assign(h.begin() + (size_t)i * e, h.begin() + (size_t)(i + 1) * e);
    }
    for (Eagle3Drafter* d : seqs) d->end_draft();
}

void Eagle3Shared::draft_queued() {
    if (queued.empty()) return;
    std::vector<Eagle3Drafter*> seqs;
    seqs.swap(queued);
    try {
        draft_together(*head, *pool, seqs);
    } catch (const std::exception& e) {  // speculation is an optimisation: these slots go on without a draft
        BEE_LOG_ERROR("draft-eagle3: drafting %zu sequences together failed: %s", seqs.size(), e.what());
        for (auto* d : seqs) d->drop_draft();
    }
}

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
    auto* shared = static_cast<Eagle3Shared*>(env.shared);
    shared->pool = env.pool;
    return std::make_unique<Eagle3Drafter>(env.params, *shared, *env.pool, env.target.hparams().n_vocab);
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
