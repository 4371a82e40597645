// runtime/slot: per-task sampling and output for one scheduler slot.
#include "runtime/slot.h"

#include <algorithm>
#include <cmath>

namespace bee::runtime {

Slot::Slot(int id, const Tokenizer& tok, int32_t n_vocab, SpecShared* spec)
    : id_(id), tok_(tok), n_vocab_(n_vocab), spec_shared_(spec) {
    if (!spec) return;
    slot_types_ = spec_types_for_slot(spec->params(), spec->params().types, id);  // e.g. --spec-dflash-max-slots
    if (!slot_types_.empty()) spec_slot_ = std::make_unique<Speculator>(*spec, slot_types_);
}

Slot::Slot(Slot&&) noexcept = default;
Slot::~Slot() = default;

void Slot::start(std::shared_ptr<Task> task, int32_t n_cached, double now_ms) {
    task_ = std::move(task);
    const GenParams& gp = task_->params;
    sampler_ = std::make_unique<Sampler>(gp.sampling, n_vocab_);
    for (int32_t t : task_->prompt) sampler_->accept(t);  // penalties see the prompt, as in llama.cpp
    decoder_ = std::make_unique<StreamDecoder>(tok_, gp.special, gp.shown_tokens);
    output_ =
        std::make_unique<TextOutput>(gp.stop, gp.reasoning, gp.think_open, gp.think_close, gp.starts_in_reasoning);
    guard_.reset();
    grammar_.reset();
    if (gp.grammar) grammar_ = std::make_unique<GrammarConstraint>(*gp.grammar);
    if (gp.reasoning && gp.loop_guard.mode != chat::LoopGuardMode::Off)
        guard_ = std::make_unique<chat::LoopGuard>(gp.loop_guard);
    forced_.clear();
    fin_ = FinishInfo{};
    fin_.id_slot = id_;
    fin_.n_prompt = (int32_t)task_->prompt.size();
    fin_.n_cached = n_cached;
    n_predicted_ = 0;
    last_ = -1;
    t_start_ = now_ms;
    t_prompt_end_ = now_ms;
    // Speculation: the slot's Speculator, one for the request's subset of types, or none.
    spec_task_.reset();
    spec_ = nullptr;
    generated_.clear();
    has_new_line_ = false;
    at_line_start_ = false;
    indent_pending_.clear();
    // post-sampling probabilities are read from the sampler row by row; a grammar cuts the drafts and
    // verification samples under it (spec/draft_grammar.h, spec/verify.h)
    if (spec_shared_ && spec_shared_->params().enabled() && gp.spec.n_max != 0 && !gp.post_sampling_probs) {
        const std::vector<std::string> types =
            gp.spec.types_given ? spec_types_for_slot(spec_shared_->params(), gp.spec.types, id_) : slot_types_;
        if (!gp.spec.fresh && types == slot_types_ && spec_slot_) {
            spec_ = spec_slot_.get();
        } else if (!types.empty()) {
            spec_task_ = std::make_unique<Speculator>(*spec_shared_, types);
            spec_ = spec_task_.get();
        }
    }
    if (gp.reasoning && gp.starts_in_reasoning && gp.reasoning_budget == 0) queue_close_reasoning();
    state_ = State::prefill;  // last: if anything above throws, the slot stays idle
}

bool Slot::prompt_done(double now_ms) {
    state_ = State::generate;
    t_prompt_end_ = now_ms;
    fin_.prompt_ms = now_ms - t_start_;
    if (spec_) spec_->begin(task_->prompt);
    if (task_->params.n_predict == 0) {
        finish(StopType::limit, now_ms);
        return true;
    }
    return false;
}

// log-softmax of the raw logits (the model's distribution before the sampler chain, as llama.cpp
// reports by default), the chosen token's logprob and the n_probs most likely alternatives; with
// post_sampling_probs, the probabilities of the sampler's last distribution instead (a forced token: 1).
TokenInfo Slot::token_info(const float* logits, int32_t id, bool forced) const {
    TokenInfo info;
    info.id = id;
    const GenParams& gp = task_->params;
    if (!gp.want_logprobs && gp.n_probs <= 0) return info;
    if (gp.post_sampling_probs) {
        info.post = true;
        if (forced) {
            info.logprob = 1.0f;
            return info;
        }
        info.logprob = sampler_->prob_of(id);
        std::vector<bee::TokenProb> cand = sampler_->candidates();
        if (!sampler_->candidates_sorted())
            std::stable_sort(cand.begin(), cand.end(),
                             [](const bee::TokenProb& a, const bee::TokenProb& b) { return a.p > b.p; });
        for (size_t i = 0; i < cand.size() && (int32_t)i < gp.n_probs; i++) info.top.push_back({cand[i].id, cand[i].p});
        return info;
    }
    float mx = -INFINITY;
    for (int32_t i = 0; i < n_vocab_; i++) mx = std::max(mx, logits[i]);
    double sum = 0;
    for (int32_t i = 0; i < n_vocab_; i++) sum += std::exp((double)logits[i] - mx);
    const float lse = mx + (float)std::log(sum);
    info.logprob = logits[id] - lse;
    if (gp.n_probs > 0) {
        std::vector<int32_t> idx(n_vocab_);
        for (int32_t i = 0; i < n_vocab_; i++) idx[i] = i;
        const int32_t k = std::min(gp.n_probs, n_vocab_);
        std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int32_t a, int32_t b) {
            return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
        });
        for (int32_t i = 0; i < k; i++) info.top.push_back({idx[i], logits[idx[i]] - lse});
    }
    return info;
}

bool Slot::sample(const float* logits, int32_t n_ctx_slot, double now_ms) {
    int32_t id;
    const bool forced = !forced_.empty();
    if (forced) {
        id = forced_.front();
        forced_.pop_front();
    } else if (grammar_) {
        id = grammar_->sample(*sampler_, logits);
        if (id < 0) {
            end_grammar_stuck(now_ms);
            return true;
        }
    } else {
        id = sampler_->sample(logits);
    }
    if (grammar_) grammar_->accept(id);  // forced tokens too (false for them is not an error)
    sampler_->accept(id);
    last_ = id;
    if (accept(id, forced, token_info(logits, id, forced), now_ms)) return true;
    // As llama-server, a slot without context shift ends when the sampled token would take its last cell
    // (position cache.size() == n_ctx_slot - 1): a prompt of n tokens gets n_ctx_slot - n generated tokens.
    if ((int32_t)cache.size() + 1 >= n_ctx_slot && !context_shift) {
        end_context_full(now_ms);
        return true;
    }
    return false;
}

// No token of the vocabulary can continue the grammar (or a matcher budget refused them).
void Slot::end_grammar_stuck(double now_ms) {
    const bool budget = grammar_->budget_hit() != nullptr;
    fin_.stop_detail = budget ? "grammar_budget" : "grammar";
    fin_.stop_message = grammar_->budget_message();
    finish(budget ? StopType::limit : StopType::eos, now_ms);
}

void Slot::end_context_full(double now_ms) {
    fin_.truncated = true;
    finish(StopType::limit, now_ms);
}

// The cache lost tokens from its middle: drafters that index positions start over from what is left.
void Slot::context_shifted() {
    fin_.truncated = true;
    if (spec_) spec_->begin(cache);
}

// Emits one token's text and applies every stop condition; returns true if the task ended.
bool Slot::accept(int32_t id, bool forced, TokenInfo info, double now_ms) {
    const GenParams& gp = task_->params;
    n_predicted_++;
    generated_.push_back(id);
    TaskEvent ev;
    ev.tokens.push_back(std::move(info));
    if (!gp.ignore_eos && tok_.is_eog(id)) {
        task_->channel->push(std::move(ev));
        finish(StopType::eos, now_ms);
        return true;
    }
    const bool in_reasoning = output_->in_reasoning();
    if (in_reasoning && !forced) fin_.n_reasoning++;  // the injected close sequence is not reasoning
    std::string hit;
    std::string text = decoder_->push(id);
    if (text.find('\n') != std::string::npos) has_new_line_ = true;
    bool under_indented = false;
    if (gp.n_indent > 0) {
        std::string shown;
        under_indented = !gate_indent(text, shown);
        text = std::move(shown);
    }
    TextDelta d = output_->feed(text, &hit);
    ev.content = std::move(d.content);
    ev.reasoning = std::move(d.reasoning);
    if (gp.timings_per_token) {
        ev.has_timings = true;
        ev.finish = fin_;
        ev.finish.n_predicted = n_predicted_;
        ev.finish.predicted_ms = now_ms - t_prompt_end_;
    }
    task_->channel->push(std::move(ev));
    if (under_indented) {
        finish(StopType::limit, now_ms);
        return true;
    }
    if (!hit.empty()) {
        fin_.stopping_word = hit;
        finish(StopType::word, now_ms);
        return true;
    }
    if (guard_ && !forced) {
        const chat::LoopVerdict v = guard_->observe(id, in_reasoning);
        if (v.triggered()) {
            fin_.loop_guard_reason = v.reason;
            const bool can_close = v.action == chat::LoopAction::ForceClose && in_reasoning;
            fin_.loop_guard_action = can_close ? "force-close" : "stop";
            if (can_close) {
                queue_close_reasoning();
            } else {
                fin_.stop_detail = "loop_guard";
                finish(StopType::limit, now_ms);
                return true;
            }
        }
    }
    if (in_reasoning && output_->in_reasoning() && forced_.empty() && gp.reasoning_budget >= 0 &&
        fin_.n_reasoning >= gp.reasoning_budget)
        queue_close_reasoning();
    if (gp.n_predict >= 0 && n_predicted_ >= gp.n_predict) {
        finish(StopType::limit, now_ms);
        return true;
    }
    // llama.cpp's t_max_predict_ms (for code infill): a time limit that applies once a line has ended
    if (gp.t_max_predict_ms > 0 && has_new_line_ && now_ms - t_prompt_end_ > gp.t_max_predict_ms) {
        finish(StopType::limit, now_ms);
        return true;
    }
    return false;
}

// Forces the end of the reasoning span: the budget message (if any) and the close tag are fed as the
// next tokens instead of sampled ones.
void Slot::queue_close_reasoning() {
    const GenParams& gp = task_->params;
    std::string text = gp.reasoning_budget_message;
    text += gp.think_close;
    text += "\n";
    for (int32_t t : tok_.encode(text, false, true)) forced_.push_back(t);
}

// llama.cpp's n_indent (code infill: stop where the generated block's indentation ends). Copies `text` to
// `out`, holding back the spaces and tabs that open a line; the first other character of a line after
// the first one releases them if there are at least n_indent, else returns false: the line is cut there
// (its indentation is kept, as llama.cpp keeps it).
bool Slot::gate_indent(const std::string& text, std::string& out) {
    const int32_t need = task_->params.n_indent;
    for (char c : text) {
        if (at_line_start_) {
            if (c == ' ' || c == '\t') {
                indent_pending_ += c;
                continue;
            }
            const bool enough = (int32_t)indent_pending_.size() >= need;
            out += indent_pending_;
            indent_pending_.clear();
            at_line_start_ = false;
            if (!enough) return false;
        }
        out += c;
        if (c == '\n') at_line_start_ = true;
    }
    return true;
}

void Slot::report_progress(double now_ms) {
    if (!task_->params.return_progress) return;
    TaskEvent ev;
    ev.has_progress = true;
    ev.progress.total = (int32_t)task_->prompt.size();
    ev.progress.cache = fin_.n_cached;
    ev.progress.processed = (int32_t)cache.size();
    ev.progress.time_ms = now_ms - t_start_;
    task_->channel->push(std::move(ev));
}

void Slot::finish(StopType type, double now_ms) {
    if (!indent_pending_.empty()) {  // a line's indentation that nothing followed
        std::string hit;
        TextDelta d = output_->feed(indent_pending_, &hit);
        indent_pending_.clear();
        if (!d.content.empty() || !d.reasoning.empty()) {
            TaskEvent ev;
            ev.content = std::move(d.content);
            ev.reasoning = std::move(d.reasoning);
            task_->channel->push(std::move(ev));
        }
    }
    TextDelta rest = output_->flush();
    if (type != StopType::word) {
        // The decoder may still hold an incomplete UTF-8 sequence; release it.
        std::string tail = decoder_->flush();
        if (!tail.empty()) {
            std::string hit;
            TextDelta d = output_->feed(tail, &hit);
            TextDelta r = output_->flush();
            rest.content += d.content + r.content;
            rest.reasoning += d.reasoning + r.reasoning;
        }
    }
    if (!rest.content.empty() || !rest.reasoning.empty()) {
        TaskEvent ev;
        ev.content = std::move(rest.content);
        ev.reasoning = std::move(rest.reasoning);
        task_->channel->push(std::move(ev));
    }
    fin_.stop_type = type;
    fin_.n_predicted = n_predicted_;
    fin_.predicted_ms = state_ == State::generate ? now_ms - t_prompt_end_ : 0;
    if (spec_) {
        fin_.spec_stats = std::make_shared<const SpecStats>(spec_->stats());
        fin_.spec_policy = spec_->policy_name();
    }
    if (on_finish) on_finish(fin_);  // before the done event: whoever sees the end sees its metrics
    TaskEvent done;
    done.kind = TaskEvent::done;
    done.finish = fin_;
    task_->channel->push(std::move(done));
    if (spec_) spec_->end(generated_);
    release();
}

void Slot::fail(int http_status, const char* type, const std::string& message) {
    TaskEvent ev;
    ev.kind = TaskEvent::error;
    ev.http_status = http_status;
    ev.error_type = type;
    ev.error_message = message;
    task_->channel->push(std::move(ev));
    release();
}

void Slot::cancel() { release(); }

void Slot::release() {
    state_ = State::idle;
    task_.reset();
    sampler_.reset();
    decoder_.reset();
    output_.reset();
    guard_.reset();
    grammar_.reset();
    forced_.clear();
    spec_ = nullptr;
    spec_task_.reset();
    drafting_ = false;
}

}  // namespace bee::runtime
