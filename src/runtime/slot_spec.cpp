// runtime/slot_spec: a slot's speculative step inside the shared batch — draft and add its rows, then
// verify, commit the KV cache and emit the accepted tokens through the ordinary per-token path
// (contract in spec/speculator.h).
#include <algorithm>
#include <optional>
#include <string>

#include "base/error.h"
#include "base/log.h"
#include "runtime/slot.h"

namespace bee::runtime {

// Inside a reasoning span a budget or the loop guard may force the close tag after any token. The
// draft tokens after it are then dropped, but the sampler's penalty window has already seen them (it
// cannot rewind), so with penalties on such a span is generated without drafts, token by token.
bool Slot::may_draft() const {
    if (!spec_ || state_ != State::generate || !forced_.empty()) return false;
    const SamplingParams& sp = task_->params.sampling;
    const bool penalties = sp.repeat_penalty != 1.0f || sp.presence_penalty != 0.0f || sp.frequency_penalty != 0.0f;
    const bool may_force = output_->in_reasoning() && (guard_ || task_->params.reasoning_budget >= 0);
    return !(penalties && may_force);
}

bool Slot::plan_draft(int32_t n_ctx_slot, int room, bool timed, int other_rows, int other_tokens, bool may_queue) {
    drafting_ = false;
    planned_ = false;
    if (!may_draft()) return false;
    const GenParams& gp = task_->params;
    const int32_t pos = (int32_t)cache.size();  // last_'s position
    DraftLimits lim;
    // Every draft row needs a cell inside the slot's context; a step emits at most depth + 1 tokens.
    lim.n_max = n_ctx_slot - pos - 1;
    if (gp.n_predict >= 0) lim.n_max = std::min(lim.n_max, gp.n_predict - n_predicted_ - 1);
    lim.n_nodes = std::min(room - 1, n_ctx_slot - pos - 1);
    lim.n_max_override = std::max(gp.spec.n_max, 0);
    lim.n_min_override = gp.spec.n_min;
    lim.p_min_override = gp.spec.p_min;
    lim.target_temp = gp.sampling.temp;
    lim.timed = timed;
    lim.other_rows = other_rows;
    lim.other_tokens = other_tokens;
    lim.chains_only = chains_only;
    lim.grammar = grammar_.get();
    queued_ = spec_->plan(cache, last_, lim, may_queue);
    planned_ = true;
    return true;
}

int Slot::planned_rows() const {
    if (!planned_) return 1;
    return 1 + (queued_ ? std::max(spec_->depth(), 0) : spec_->tree().size());
}

bool Slot::add_draft_rows(Batch& b, int room, double queued_ms) {
    if (!planned_) return false;
    planned_ = false;
    const int32_t pos = (int32_t)cache.size();  // last_'s position
    spec_->finish(room - 1, queued_ ? queued_ms : 0.0);
    queued_ = false;
    fin_.draft_n_grammar_cut += spec_->n_grammar_cut();
    if (log_level() == LogLevel::debug) log_draft(pos);
    step_row0 = spec_->add_to_batch(b, last_, pos, id_);
    step_rows = 1 + spec_->tree().size();
    drafting_ = true;
    return true;
}

// -v: each draft, as "slot S: draft after pos P: t1 t2 ..." (tree nodes in order, "^k" naming a parent that
// is not the node before), to compare drafts with another engine's from the same context.
void Slot::log_draft(int32_t pos) const {
    const DraftTree& t = spec_->tree();
    std::string s;
    for (int i = 0; i < t.size(); i++) {
        s += " " + std::to_string(t.nodes[i].token);
        if (t.nodes[i].parent != i - 1) s += "^" + std::to_string(t.nodes[i].parent);
    }
    BEE_LOG_DEBUG("slot %d: draft after pos %d:%s", id_, pos, s.empty() ? " (none)" : s.c_str());
}

bool Slot::verify_draft(const Batch& b, const DecodeOutput& out, Engine& eng, int32_t n_ctx_slot, double now_ms) {
    drafting_ = false;
    const int32_t pos = (int32_t)cache.size();  // last_'s position
    const int n_drafted = spec_->tree().size();
    // A forced token (end of reasoning) drops the rest of the emitted tokens: the grammar, which verify
    // moves along all of them, then goes back to here and follows only the kept ones.
    const GenParams& gp = task_->params;
    std::optional<GrammarMatcher> before;
    if (grammar_ && gp.reasoning && (guard_ || gp.reasoning_budget >= 0)) before = grammar_->state();
    const VerifyResult r = spec_->verify(b, out, step_row0, *sampler_, grammar_.get());
    spec_->observe_target(b, out, step_row0, step_rows, false);
    spec_->commit(eng, id_, pos, r);  // the cache now holds last_ and the accepted draft tokens
    fin_.draft_n += n_drafted;
    fin_.draft_rounds++;
    fin_.draft_n_accepted += r.n_accepted();
    cache.push_back(last_);
    for (size_t i = 0; i < r.tokens.size(); i++) {
        const int32_t t = r.tokens[i];
        // r.tokens[i] was sampled from the root's row (i = 0) or from the previous accepted node's row.
        const int32_t row = step_row0 + (i == 0 ? 0 : 1 + r.path[i - 1]);
        const int32_t t_pos = pos + 1 + (int32_t)i;  // t's position once decoded
        last_ = t;
        bool ended = accept(t, false, token_info(out.logits_for_row(row), t), now_ms);
        if (!ended && t_pos + 1 >= n_ctx_slot && !context_shift) {  // as sample(): t would take the last cell
            end_context_full(now_ms);
            ended = true;
        }
        if (ended || !forced_.empty()) {
            // The rest of the draft is dropped: its cells (accepted tokens after t) leave the cache. t is
            // not in it, like any token not yet decoded; a forced token is decoded after it next step.
            eng.rewind(id_, t_pos, 0, cache);
            if (!ended && before && i + 1 < r.tokens.size()) {
                grammar_->restore(*before);
                for (size_t j = 0; j <= i; j++) grammar_->accept(r.tokens[j]);
            }
            return ended;
        }
        // the last token is the bonus (decoded next step), unless the grammar stopped the output there
        if (i + 1 < r.tokens.size() || r.stuck) cache.push_back(t);
    }
    if (r.stuck) end_grammar_stuck(now_ms);  // as sample() when no token fits: after the accepted drafts
    return r.stuck;
}

const std::vector<int32_t>& Slot::capture_layers() const {
    static const std::vector<int32_t> none;
    return spec_ ? spec_->capture_layers() : none;
}

void Slot::observe_target(const Batch& b, const DecodeOutput& out, bool prefill) {
    if (spec_ && step_rows > 0) spec_->observe_target(b, out, step_row0, step_rows, prefill);
}

void Slot::add_drafter(std::unique_ptr<Drafter> d) {
    if (!spec_slot_) bee::fail("slot %d: an extra drafter needs speculative types configured", id_);
    spec_slot_->add_drafter(std::move(d), "extra");
}

std::vector<std::string> Slot::spec_types() const {
    if (spec_ && spec_ == spec_slot_.get()) return slot_types_;
    if (spec_) return task_->params.spec.types;
    return {};
}

}  // namespace bee::runtime
