// runtime/task: the typed work item a request becomes at the edge (no JSON past this point), and the
// channel the scheduler streams its results back through.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "chat/loop_guard.h"
#include "sample/grammar.h"
#include "sample/sampler.h"
#include "spec/stats.h"

namespace bee {
class Engine;
class SeqMemory;
}  // namespace bee

namespace bee::runtime {

// How a generation should run: everything a slot needs, already validated.
struct GenParams {
    SamplingParams sampling;
    int32_t n_predict = -1;         // -1: until end of generation or the slot's context is full
    std::vector<std::string> stop;  // stop strings (never part of the output)
    bool ignore_eos = false;
    bool special = false;              // control tokens rendered in the text (-sp)
    int32_t n_probs = 0;               // top alternatives reported per token (0: none)
    bool want_logprobs = false;        // report each generated token's logprob
    bool post_sampling_probs = false;  // report probabilities after the sampler chain instead (never speculates)
    bool timings_per_token = false;    // every stream chunk carries the timings so far
    double t_max_predict_ms = 0;       // > 0: stop once generation has run this long and produced a newline
    bool return_progress = false;      // stream prompt_progress chunks while the prompt is processed
    int32_t n_indent = 0;              // > 0: stop at a line (after the first) indented less than this
    std::vector<std::string> response_fields;  // non-empty: /completion returns only these paths ("a/b")
    int32_t n_keep = 0;                        // --context-shift: tokens kept at the start (after BOS; -1: the prompt)
    int32_t n_discard = 0;                     // --context-shift: tokens dropped after them (0: half of the rest)
    bool cache_prompt = true;                  // reuse the slot's cached prefix
    int32_t n_cache_reuse = 0;  // also reuse cached chunks of at least this many tokens (KV shift; 0: off)
    int32_t id_slot = -1;       // pin to a slot (-1: pick one)
    // Reasoning (think-tag) handling; `reasoning` false means the text is passed through untouched.
    bool reasoning = false;
    bool starts_in_reasoning = false;  // the prompt already opened the span
    std::string think_open = "<think>", think_close = "</think>";
    int32_t reasoning_budget = -1;  // -1: unlimited; N: force the close tag after N reasoning tokens
    std::string reasoning_budget_message;
    chat::LoopGuardParams loop_guard;  // mode Off: no guard
    // Control tokens decoded as their text: the markers the reply parsers read (Mistral's [TOOL_CALLS],
    // think tags where the vocabulary has them as control tokens). Others are dropped from the text.
    std::vector<int32_t> shown_tokens;
    // Per-request speculative decoding (speculative.* fields); -1 / unset: the server's settings.
    struct Spec {
        int32_t n_max = -1;              // 0: no drafting for this request; > 0 caps the draft depth
        int32_t n_min = -1;              // drafts shorter than this are dropped
        float p_min = -1;                // draft model's confidence floor (< 0: --spec-draft-p-min)
        bool types_given = false;        // speculative.type: a subset of the server's --spec-type
        std::vector<std::string> types;  // empty with types_given: none
        bool fresh = false;              // a new Speculator for this task (no depth state kept from earlier ones)
    } spec;
    // Constrained sampling (grammar, json_schema, response_format, tool_choice "required"); null: none.
    // Prepared by the request handler (parsed, its start scanned); each slot starts from a copy. A
    // constrained request never speculates.
    std::shared_ptr<const GrammarConstraint> grammar;
    // LoRA scales, one per adapter the engine loaded (model/lora.h); empty: the engine's own
    // (Engine::lora_default). A slot whose cache was computed under other scales starts from an empty one.
    std::vector<float> lora;
};

struct TokenLogprob {
    int32_t id = 0;
    float logprob = 0;
};

// One generated token as reported to the client (logprobs mode). With `post` (post_sampling_probs) the
// logprob fields hold probabilities after the sampler chain instead of the model's log-probabilities.
struct TokenInfo {
    int32_t id = 0;
    float logprob = 0;
    std::vector<TokenLogprob> top;  // best alternatives, most likely first
    bool post = false;
};

enum class StopType { none, eos, limit, word };

// Filled when a generation ends.
struct FinishInfo {
    StopType stop_type = StopType::none;
    std::string stopping_word;
    bool truncated = false;    // stopped because the slot's context is full
    std::string stop_detail;   // "loop_guard", "grammar" (no token fits) or "grammar_budget"
    std::string stop_message;  // with "grammar_budget": which budget and how to simplify the grammar
    std::string loop_guard_action, loop_guard_reason;
    int32_t id_slot = -1;
    int32_t n_prompt = 0;  // prompt tokens in total
    int32_t n_cached = 0;  // of which reused from the slot's cache (timings.cache_n)
    int32_t n_predicted = 0;
    int32_t n_reasoning = 0;  // predicted tokens spent inside the reasoning span
    double prompt_ms = 0, predicted_ms = 0;
    int64_t draft_n = 0;              // draft tokens proposed (timings.draft_n, only when > 0)
    int64_t draft_n_accepted = 0;     // of which the target accepted
    int64_t draft_n_grammar_cut = 0;  // draft tokens the request's grammar rejected before verification
    int32_t n_decodes = 0;            // generation steps (target decodes after the prompt) this task took part in
    // The task's Speculator when it ended (null: no speculation): its statistics (cumulative over the
    // tasks that share a slot's Speculator) and depth policy, for the command-line reports.
    std::shared_ptr<const SpecStats> spec_stats;
    std::string spec_policy;
};

// What the scheduler sends back; a task ends with exactly one `done` or `error` event.
struct TaskEvent {
    enum Kind { delta, done, error } kind = delta;
    std::string content;            // visible text released by this event
    std::string reasoning;          // reasoning text released by this event
    std::vector<TokenInfo> tokens;  // tokens generated in this step (ids always, logprobs if asked)
    FinishInfo finish;              // kind == done; a delta with has_timings: the timings so far
    bool has_timings = false;       // timings_per_token
    bool has_progress = false;      // a prompt_progress event (return_progress); no text or tokens
    struct Progress {
        int32_t total = 0, cache = 0, processed = 0;
        double time_ms = 0;
    } progress;
    int http_status = 500;  // kind == error
    std::string error_type, error_message;
};

// Producer: the scheduler thread. Consumer: the HTTP handler. Cancelling (client gone) tells the
// scheduler to drop the task at its next step.
class TaskChannel {
public:
    void push(TaskEvent ev) {
        {
            std::lock_guard<std::mutex> lk(mu_);
            events_.push_back(std::move(ev));
        }
        cv_.notify_one();
    }
    // Moves every pending event into `out`; waits up to timeout_ms for one. Returns false on timeout.
    bool pop_all(std::vector<TaskEvent>& out, int timeout_ms) {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait_for(lk, std::chrono::milliseconds(timeout_ms), [&] { return !events_.empty(); });
        if (events_.empty()) return false;
        for (TaskEvent& e : events_) out.push_back(std::move(e));
        events_.clear();
        return true;
    }
    void cancel() { cancelled_.store(true); }
    bool cancelled() const { return cancelled_.load(); }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<TaskEvent> events_;
    std::atomic<bool> cancelled_{false};
};

struct Task {
    uint64_t id = 0;
    std::vector<int32_t> prompt;  // token ids, never empty (except for a slot action)
    GenParams params;
    // A slot action (save/restore/erase, server/slot_save) instead of a generation: the scheduler runs
    // it on the inference thread once slot params.id_slot is idle, with that slot's KV sequence and
    // token cache; it pushes the task's done event itself, and an exception becomes a 400 error event.
    std::function<void(SeqMemory& mem, std::vector<int32_t>& slot_cache, int32_t n_ctx_slot)> slot_action;
    // An engine action instead of a generation (embeddings and reranking, runtime/embed): run like a
    // slot action, in an idle slot picked as for a generation (pinned, best cached prefix, else least
    // recently used), with the engine, that slot's sequence id and token cache; `prompt` holds the tokens it will decode (the scheduler
    // makes room for them in a unified cache). It pushes the done event itself; an exception becomes a
    // 500 error event.
    std::function<void(Engine& eng, int32_t seq, std::vector<int32_t>& slot_cache)> engine_action;
    std::shared_ptr<TaskChannel> channel = std::make_shared<TaskChannel>();
};

}  // namespace bee::runtime
