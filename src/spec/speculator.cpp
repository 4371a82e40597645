// spec/speculator: one sequence's draft -> batch -> verify -> commit cycle (contract in speculator.h).
#include "spec/speculator.h"

#include <algorithm>

#include "base/error.h"
#include "base/timer.h"
#include "model/model.h"
#include "spec/draft_grammar.h"

namespace bee {

Speculator::Speculator(SpecShared& shared) : Speculator(shared, shared.params().types) {}

Speculator::Speculator(SpecShared& shared, const std::vector<std::string>& types)
    : shared_(shared), prior_(shared.depth_prior(types)) {
    const SpecParams& p = shared.params();
    for (const std::string& name : types) {
        const DrafterKind* k = find_drafter_kind(name);
        if (!k) fail("unknown speculative type: '%s'", name.c_str());
        if (std::find(p.types.begin(), p.types.end(), name) == p.types.end())
            fail("speculative type '%s' was not started with this process (--spec-type)", name.c_str());
        DrafterEnv env{p, shared.target(), shared.get(name), k->reads_hidden ? &shared.pool() : nullptr};
        drafters_.push_back(k->make(env));
        DrafterStats st;
        st.name = k->stats_name;
        stats_.drafters.push_back(st);
    }
    policy_ = make_depth_policy(p.depth, shared.verify_cost());
    collect_capture_layers();
}

void Speculator::collect_capture_layers() {
    capture_layers_.clear();
    for (const auto& d : drafters_)
        for (int32_t il : d->capture_layers()) capture_layers_.push_back(il);
    std::sort(capture_layers_.begin(), capture_layers_.end());
    capture_layers_.erase(std::unique(capture_layers_.begin(), capture_layers_.end()), capture_layers_.end());
}

void Speculator::add_drafter(std::unique_ptr<Drafter> d, const char* stats_name) {
    drafters_.push_back(std::move(d));
    DrafterStats st;
    st.name = stats_name;
    stats_.drafters.push_back(st);
    collect_capture_layers();
}

void Speculator::observe_target(const Batch& b, const DecodeOutput& out, int row0, int n, bool prefill) {
    const TargetRows rows{b, out, row0, n, prefill};
    for (const auto& d : drafters_) d->observe_target(rows);
}

Speculator::~Speculator() = default;

void Speculator::begin(const std::vector<int32_t>& prompt) {
    policy_->seed(prior_);
    for (size_t i = 0; i < drafters_.size(); i++) {
        const double t0 = time_ms();
        drafters_[i]->begin(prompt);
        stats_.drafters[i].n_begin++;
        stats_.drafters[i].ms_begin += time_ms() - t0;
    }
}

const DraftTree& Speculator::draft(const std::vector<int32_t>& history, int32_t id_last, const DraftLimits& lim) {
    plan(history, id_last, lim, false);
    return tree_;
}

bool Speculator::plan(const std::vector<int32_t>& history, int32_t id_last, const DraftLimits& lim, bool may_queue) {
    t_start_ = time_ms();
    tree_.clear();
    req_.reset();
    pending_ = -1;
    winner_ = -1;
    depth_ = 0;
    n_cut_ = 0;
    timed_ = lim.timed;
    draft_ms_ = 0;
    lim_ = lim;
    if (drafters_.empty()) return false;
    int base = 0;
    for (const auto& d : drafters_) base = std::max(base, d->n_max());
    if (lim.n_max_override > 0) base = std::min(base, lim.n_max_override);
    n_min_ = lim.n_min_override >= 0 ? lim.n_min_override : shared_.params().draft_n_min;
    policy_->set_batch(lim.other_rows, lim.other_tokens);
    depth_ = std::min(policy_->next(base), lim.n_max);
    if (depth_ <= 0 || depth_ < n_min_ || lim.n_nodes <= 0) {
        depth_ = std::max(depth_, 0);
        return false;
    }
    req_.emplace(DraftRequest{history, id_last, depth_, lim.target_temp, lim.p_min_override});
    const int32_t n_past = (int32_t)history.size();
    // a row's time over the time per token the step it joins yields (alone: over a plain decode)
    const double plain = shared_.verify_cost()->predict(n_past, lim.other_rows),
                 one = shared_.verify_cost()->predict(n_past, lim.other_rows + 1);
    if (plain > 0 && one > 0) req_->row_cost = (one - plain) * (lim.other_tokens + 1) / plain;
    return run_drafters(0, may_queue);
}

const DraftTree& Speculator::finish(int n_nodes, double queued_ms) {
    const double t0 = time_ms();
    lim_.n_nodes = std::min(lim_.n_nodes, n_nodes);
    if (pending_ >= 0) {
        const size_t i = (size_t)pending_;
        pending_ = -1;
        drafters_[i]->take(tree_);
        stats_.drafters[i].n_draft++;
        stats_.drafters[i].ms_draft += queued_ms + (time_ms() - t0);
        settle(i);
        run_drafters(i + 1, false);
    } else {
        tree_.truncate_size(std::max(lim_.n_nodes, 0));
    }
    draft_ms_ += queued_ms + (time_ms() - t0);
    return tree_;
}

// Asks the drafters from the i-th on, in priority order, until one drafts; with may_queue the first that
// queues its request stops the walk (finish() takes its draft and goes on).
bool Speculator::run_drafters(size_t i, bool may_queue) {
    const double t_walk = time_ms();
    for (; i < drafters_.size() && !tree_.drafted(); i++) {
        if (may_queue && drafters_[i]->queue(*req_)) {
            pending_ = (int)i;
            draft_ms_ += time_ms() - t_walk;
            return true;
        }
        const double t0 = time_ms();
        drafters_[i]->draft(*req_, tree_);
        stats_.drafters[i].n_draft++;
        stats_.drafters[i].ms_draft += time_ms() - t0;
        settle(i);
    }
    stats_.n_grammar_cut += n_cut_;
    draft_ms_ += time_ms() - t_walk;
    return false;
}

// The limits on the i-th drafter's draft: depth, chains only, the grammar, the batch's room, n_min.
void Speculator::settle(size_t i) {
    if (tree_.max_depth() > depth_) tree_.truncate_depth(depth_);
    if (lim_.chains_only && !tree_.is_chain()) tree_.keep_first_branch();
    if (lim_.grammar) n_cut_ += cut_draft_to_grammar(tree_, *lim_.grammar);
    tree_.truncate_size(std::max(lim_.n_nodes, 0));
    // too short to pay; but a sampled chain the grammar cut stays, whatever its length: dropping it
    // would depend on its draws, and rejection sampling would no longer be exact (DraftTree::q_cut)
    if (!tree_.empty() && tree_.q_cut.empty() && tree_.max_depth() < std::max(n_min_, 1)) tree_.clear();
    if (tree_.drafted()) winner_ = (int)i;
}

int Speculator::add_to_batch(Batch& b, int32_t id_last, int32_t pos, int seq) const {
    const int row0 = b.size();
    const bool tree = !tree_.is_chain();
    if (tree && b.parent.empty() && row0 > 0) {  // switch the batch to explicit parents
        b.parent.assign(row0, -1);
        for (int r = 0; r < row0; r++)
            for (int q = r - 1; q >= 0; q--)
                if (b.seq[q] == b.seq[r]) {
                    b.parent[r] = q;
                    break;
                }
    }
    const bool parents = tree || !b.parent.empty();
    b.add(id_last, pos, seq, true);
    if (parents) {
        int32_t prev = -1;  // the root continues this sequence's earlier rows in the batch, if any
        for (int q = row0 - 1; q >= 0; q--)
            if (b.seq[q] == seq) {
                prev = q;
                break;
            }
        b.parent.push_back(prev);
    }
    for (const DraftNode& n : tree_.nodes) {
        b.add(n.token, pos + n.depth, seq, true);
        if (parents) b.parent.push_back(n.parent < 0 ? row0 : row0 + 1 + n.parent);
    }
    return row0;
}

VerifyResult Speculator::verify(const Batch& b, const DecodeOutput& out, int row0, Sampler& sampler,
                                GrammarConstraint* grammar) {
    const int n = 1 + tree_.size();
    row_tokens_.assign(b.token.begin() + row0, b.token.begin() + row0 + n);
    row_logits_.resize(n);
    for (int i = 0; i < n; i++) {
        row_logits_[i] = out.logits_for_row(row0 + i);
        if (!row_logits_[i]) fail("speculator: batch row %d has no logits (add_to_batch asks for them)", row0 + i);
    }
    return verify_tree(tree_, row_logits_, sampler, grammar);
}

void Speculator::commit(Engine& eng, int seq, int32_t pos, const VerifyResult& r) {
    const int n_acc = r.n_accepted();
    if (!tree_.empty()) {
        SeqMemory& mem = eng.memory();
        std::vector<int32_t> path{row_tokens_[0]};  // the kept rows' tokens from position pos
        for (int32_t node : r.path) path.push_back(row_tokens_[1 + node]);
        if (tree_.is_chain()) {
            eng.rewind(seq, pos + 1 + n_acc, pos, path);
        } else if (mem.can_prune_rows(seq)) {
            std::vector<uint8_t> keep(1 + tree_.size(), 0);
            keep[0] = 1;
            for (int32_t node : r.path) keep[1 + node] = 1;
            mem.prune_rows(seq, pos, keep);
        } else {
            mem.cut(seq, pos);  // the verify batch's start
            eng.rewind(seq, pos + 1 + n_acc, pos, path);
        }
    }
    std::vector<int32_t> committed{0};
    for (int32_t node : r.path) committed.push_back(1 + node);
    const VerifyRows rows{row_tokens_, row_logits_, (int32_t)shared_.target().hparams().n_vocab, committed};
    for (size_t i = 0; i < drafters_.size(); i++) {
        const double t0 = time_ms();
        drafters_[i]->observe(rows);
        if (winner_ >= 0) drafters_[i]->accept(n_acc, (int)i != winner_);
        if ((int)i == winner_) {
            stats_.drafters[i].record_accept(tree_.size(), n_acc);
            stats_.drafters[i].ms_accept += time_ms() - t0;
        }
    }
    stats_.n_cycles++;
    stats_.n_tokens += (int64_t)r.tokens.size();
    CycleRecord c;
    c.depth = depth_;
    c.n_drafted = tree_.max_depth();
    c.n_accepted = n_acc;
    c.draft_ms = draft_ms_;
    c.cycle_ms = time_ms() - t_start_;
    c.timed = timed_;
    c.n_nodes = tree_.size();
    c.n_past = pos;
    policy_->record(c);
}

void Speculator::end(const std::vector<int32_t>& output) {
    policy_->fold(prior_);
    for (const auto& d : drafters_) d->end(output);
}

}  // namespace bee
