// spec/drafter: the interface every drafter implements (one file per drafter in spec/drafters/), and
// the shared per-process state a drafter kind may keep across sequences and requests.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/batch.h"
#include "spec/draft_tree.h"
#include "spec/spec_params.h"

namespace bee {

class Model;
class ThreadPool;

// What a drafter is asked for, once per speculative step of one sequence.
struct DraftRequest {
    const std::vector<int32_t>& history;  // tokens in the target's KV cache (prompt + accepted output)
    int32_t id_last;                      // the newest sampled token, not yet in the cache
    int n_max;                            // most draft tokens on any path (tree depth); >= 1
    float target_temp;                    // the target sampler's temperature (for --spec-draft-temp auto)
    float p_min = -1;                     // >= 0: per-request confidence floor for drafters that have one
    // What one more verify row costs, as a fraction of a plain decode (in a shared step: of the time per
    // token the step yields), from the process's verify cost curve (depth_policy.h); < 0: not measured yet. Tree drafters add a node only while its chance of
    // being accepted pays for its row.
    double row_cost = -1;
};

// Rows of one verify batch, handed to every drafter after verification: token t[i] at row i, and the
// target's logits there. Row 0 is the root (id_last); the first n_committed rows along `path` were
// accepted (row indices into these arrays).
struct VerifyRows {
    const std::vector<int32_t>& tokens;
    const std::vector<const float*>& logits;  // (rows, n_vocab)
    int32_t n_vocab;
    const std::vector<int32_t>& committed_rows;  // root first, then the accepted nodes' rows
};

// Rows the target decoded for one sequence in one batch, handed to its drafters right after the decode,
// in decode order, whether or not other sequences shared the batch: row i of this sequence is batch row
// row0 + i (tokens, positions, logits of the rows that asked, hidden states of the captured rows).
struct TargetRows {
    const Batch& batch;
    const DecodeOutput& out;
    int row0 = 0, n = 0;
    bool prefill = false;  // a prompt chunk (else a generation step: [id_last] + draft rows)
    int32_t token(int i) const { return batch.token[row0 + i]; }
    int32_t pos(int i) const { return batch.pos[row0 + i]; }
    const float* logits(int i) const { return out.logits_for_row(row0 + i); }
    // Captured hidden state of row i for layer slot j (an index into out.hidden_layers), or nullptr.
    const float* hidden(int i, int j) const { return out.hidden_for_row(row0 + i, j); }
};

class Drafter {
public:
    virtual ~Drafter() = default;
    // Once per request, after the prompt is in the cache.
    virtual void begin(const std::vector<int32_t>& prompt) { (void)prompt; }
    // Proposes a tree (usually a chain) of at most req.n_max tokens deep; leaves `out` empty if it has
    // nothing to propose.
    virtual void draft(const DraftRequest& req, DraftTree& out) = 0;
    // After each verify batch of this sequence (whoever drafted): the target's logits per row.
    virtual void observe(const VerifyRows& rows) { (void)rows; }
    // Every batch the target decoded for this sequence: prompt chunks (prefill, before begin()) and each
    // generation step's rows (after verification, before observe()). A drafter that keeps what it reads
    // here starts over when a prompt chunk at position 0 arrives (a cached prefix is not decoded again).
    virtual void observe_target(const TargetRows& rows) { (void)rows; }
    // The target layers whose input (the residual stream; n_layer: the final hidden state) this drafter
    // reads in observe_target; empty: none, and nothing is captured for it.
    virtual std::vector<int32_t> capture_layers() const { return {}; }
    // After verification: how many draft tokens were accepted. is_other: another drafter produced it.
    virtual void accept(int n_accepted, bool is_other) { (void)n_accepted, (void)is_other; }
    // The request ended; `output` is every token it generated.
    virtual void end(const std::vector<int32_t>& output) { (void)output; }
    // Longest draft this drafter proposes with its own settings (the depth policy's base).
    virtual int n_max() const = 0;
    // Drafting several sequences in one pass (kinds that compute, so the weights are read once for every
    // server slot of a step). queue() may put this sequence's request in its kind's DrafterShared instead
    // of drafting and return true; DrafterShared::draft_queued() then drafts every queued sequence
    // together, and take() hands this one's draft over: the draft draft(req, out) would give. `history`
    // must stay as it is until take(). false: not queued (the caller asks draft()).
    virtual bool queue(const DraftRequest& req) { return (void)req, false; }
    virtual void take(DraftTree& out) { (void)out; }
};

// State one drafter kind keeps for the whole process (a hash table shared by every slot, a global
// suffix tree over earlier responses, a loaded draft model). Created once by SpecShared.
struct DrafterShared {
    virtual ~DrafterShared() = default;
    // Drafts every sequence whose drafter queued its request since the last call (Drafter::queue).
    virtual void draft_queued() {}
};

// What a drafter's factory gets.
struct DrafterEnv {
    const SpecParams& params;
    const Model& target;
    DrafterShared* shared;       // this kind's shared state (nullptr if the kind has none)
    ThreadPool* pool = nullptr;  // the target's threads, for drafters that compute (drafting runs between decodes)
};

}  // namespace bee
