// spec/speculator: speculative decoding for ONE sequence — the object a generation loop (`bee run`, the
// server's scheduler, `bee bench spec`) drives. It owns that sequence's drafters (one per configured
// type, first non-empty draft in priority order wins), its depth policy and its statistics.
//
// Contract, per step (DESIGN.md flow; modelfree-and-server.md A.1):
//
//   Speculator spec(shared);               // shared = SpecShared, one per process
//   ... prefill the prompt; sample the first token id_last from the prompt's last logits ...
//   spec.begin(prompt);
//   loop:
//     const DraftTree& t = spec.draft(history, id_last, limits);  // history: tokens in the KV cache
//     int row0 = spec.add_to_batch(batch, id_last, pos, seq);     // pos: id_last's position (= |history|)
//     engine.decode(batch, out);                                   // other sequences may share the batch
//     VerifyResult r = spec.verify(batch, out, row0, sampler);     // r.tokens = accepted drafts + bonus
//     spec.commit(engine, seq, pos, r);                            // before the sequence's next decode
//     history += id_last, r.tokens[0 .. n-2];  id_last = r.tokens.back();
//     (stop at end-of-generation or the token budget; tokens after an EOG in r.tokens are dropped,
//      the cache may keep their cells: remove them with seq_rm if the sequence continues)
//   spec.end(output);
//
// An empty tree (no draft, or the depth policy says 0) makes the step an ordinary decode of id_last, so
// one loop serves both. Rows: id_last is batch row row0, draft node i is row row0 + 1 + i, every row asks
// for logits. Tree drafts (a node with siblings) set Batch::parent; add_to_batch fills parents for the
// rows already in the batch (each row's parent = the previous row of its sequence), so a tree can share
// a batch with other sequences' ordinary rows. Trees must fit in one ubatch: pass limits.n_nodes.
//
// KV: commit() keeps id_last's cell and the accepted path's cells and removes the rest — a cut after the
// path for chains, SeqMemory::prune_rows for trees; where the sequence memory cannot cut there (recurrent
// rules, model/seq_memory.h) it cuts back to the verify batch's start and decodes the path again
// (Engine::rewind) — so the cache holds
// exactly history + id_last + accepted tokens, as if decoded one by one (bit-identical, invariant 2).
// The bonus token is not in the cache: it is the next step's id_last.
#pragma once
#include <climits>
#include <memory>
#include <optional>
#include <vector>

#include "model/batch.h"
#include "model/engine.h"
#include "sample/grammar.h"
#include "sample/sampler.h"
#include "spec/depth_policy.h"
#include "spec/drafter.h"
#include "spec/registry.h"
#include "spec/stats.h"
#include "spec/verify.h"

namespace bee {

struct DraftLimits {
    int n_max = INT_MAX;        // draft tokens on any path: context room and tokens left to generate
    int n_nodes = INT_MAX;      // nodes in the tree (a tree batch must fit in n_ubatch: n_ubatch - 1)
    int n_max_override = 0;     // per-request speculative.n_max (> 0: caps the depth policy's base)
    int n_min_override = -1;    // per-request speculative.n_min (>= 0: replaces --spec-draft-n-min)
    float p_min_override = -1;  // per-request speculative.p_min (>= 0: replaces --spec-draft-p-min)
    float target_temp = 0;      // the target sampler's temperature (--spec-draft-temp auto)
    bool timed = true;          // false: this cycle shares its decode with other sequences (no timing data)
    // The shared step this cycle joins: rows the other sequences decode in it and tokens they are expected
    // to emit (DepthPolicy::set_batch; 0, 0: alone).
    int other_rows = 0, other_tokens = 0;
    // The target's memory follows one path (recurrent layers, SeqMemory::can_decode_trees): a tree draft is
    // cut to its first branch.
    bool chains_only = false;
    // The request's grammar at id_last (constrained requests): each draft is cut at the first token it
    // rejects, per path (spec/draft_grammar.h), before the depth / size limits; a draft cut below
    // n_min lets the next drafter try. Pass the same constraint to verify(). null: unconstrained.
    const GrammarConstraint* grammar = nullptr;
};

class Speculator {
public:
    // Creates one drafter per type in shared.params().types. Throws Error if a drafter can't start.
    explicit Speculator(SpecShared& shared);
    // Only `types` (each one of shared.params().types, in priority order): a server request's
    // speculative.type. Throws Error for a type the shared state was not started with.
    Speculator(SpecShared& shared, const std::vector<std::string>& types);
    ~Speculator();

    bool enabled() const { return !drafters_.empty(); }
    void begin(const std::vector<int32_t>& prompt);
    const DraftTree& draft(const std::vector<int32_t>& history, int32_t id_last, const DraftLimits& limits);
    // Several sequences drafting in one pass (the server's step): plan() is draft() that lets a drafter
    // which computes queue its request (Drafter::queue) and returns true if one did; the caller runs
    // SpecShared::draft_queued() once for every sequence's plan, then finish() takes the draft, applies
    // the limits and asks the later drafters if it came back empty. finish() is called after every plan():
    // `n_nodes` caps the tree to the batch room left now, `queued_ms` is this sequence's share of the
    // shared pass. history must stay as it is until finish().
    bool plan(const std::vector<int32_t>& history, int32_t id_last, const DraftLimits& limits, bool may_queue);
    const DraftTree& finish(int n_nodes, double queued_ms);
    int depth() const { return depth_; }  // the depth cap of the cycle planned last
    // Appends [id_last, draft nodes] for `seq` (id_last at `pos`); returns id_last's row.
    int add_to_batch(Batch& b, int32_t id_last, int32_t pos, int seq) const;
    // `grammar`: the request's constraint, the one given to draft() (it moves along the emitted tokens).
    VerifyResult verify(const Batch& b, const DecodeOutput& out, int row0, Sampler& sampler,
                        GrammarConstraint* grammar = nullptr);
    void commit(Engine& eng, int seq, int32_t pos, const VerifyResult& r);
    void end(const std::vector<int32_t>& output);

    // Hidden-state capture the drafters need: the union of their layers, sorted (empty: none). The
    // caller sets it as Batch::capture_layers for this sequence's rows.
    const std::vector<int32_t>& capture_layers() const { return capture_layers_; }
    // Hands the rows the target just decoded for this sequence to every drafter (Drafter::observe_target).
    void observe_target(const Batch& b, const DecodeOutput& out, int row0, int n, bool prefill);
    // Tests: a drafter that is not in the registry, after the configured ones.
    void add_drafter(std::unique_ptr<Drafter> d, const char* stats_name);

    const DraftTree& tree() const { return tree_; }
    // Draft nodes the grammar cut in the last draft() (never verified).
    int n_grammar_cut() const { return n_cut_; }
    const SpecStats& stats() const { return stats_; }
    const char* policy_name() const { return policy_->name(); }

private:
    SpecShared& shared_;
    std::vector<std::unique_ptr<Drafter>> drafters_;
    std::unique_ptr<DepthPolicy> policy_;
    DepthPrior& prior_;  // shared with every request of these types (begin seeds, end folds)
    SpecStats stats_;
    DraftTree tree_;
    int winner_ = -1;   // drafter that produced tree_, -1: none
    int pending_ = -1;  // drafter whose request is queued (plan() .. finish()), -1: none
    int n_min_ = 0;
    DraftLimits lim_;
    std::optional<DraftRequest> req_;
    int depth_ = 0;  // cap asked this cycle
    int n_cut_ = 0;  // draft nodes the grammar cut this cycle
    bool timed_ = true;
    double t_start_ = 0, draft_ms_ = 0;
    std::vector<int32_t> row_tokens_;
    std::vector<const float*> row_logits_;
    std::vector<int32_t> capture_layers_;
    void collect_capture_layers();
    bool run_drafters(size_t i, bool may_queue);
    void settle(size_t i);
};

}  // namespace bee
