// runtime/slot: one generation lane of the scheduler. A slot owns sequence `id` in the engine's KV cache,
// remembers which tokens that sequence holds (the prompt cache), and runs one task at a time: sampling,
// detokenizing, stop strings, reasoning split, reasoning budget and loop guard, finish bookkeeping.
#pragma once
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chat/loop_guard.h"
#include "model/batch.h"
#include "model/engine.h"
#include "runtime/task.h"
#include "runtime/text_output.h"
#include "sample/grammar.h"
#include "sample/sampler.h"
#include "spec/speculator.h"
#include "tokenizer/tokenizer.h"

namespace bee::runtime {

class Slot {
public:
    enum class State { idle, prefill, generate };

    // `spec`: the process-wide speculative-decoding state (nullptr: no speculation). The slot keeps its
    // own Speculator (drafters and depth policy) across requests.
    Slot(int id, const Tokenizer& tok, int32_t n_vocab, SpecShared* spec);
    Slot(Slot&&) noexcept;
    ~Slot();

    int id() const { return id_; }
    State state() const { return state_; }
    bool idle() const { return state_ == State::idle; }
    const std::shared_ptr<Task>& task() const { return task_; }

    // Tokens whose K/V sit in sequence id() in position order: the prompt cache. The scheduler trims it
    // together with the KV cache (seq_rm) and appends what each decode wrote.
    std::vector<int32_t> cache;
    double t_last_used = 0;  // ms; least-recently-used slot selection

    // Takes a task whose first n_cached prompt tokens are already in `cache` (and in the KV cache).
    // Throws Error (the slot stays idle) for a speculative.type the server was not started with.
    void start(std::shared_ptr<Task> task, int32_t n_cached, double now_ms);
    // Prompt tokens still to prefill.
    int32_t prompt_left() const { return (int32_t)task_->prompt.size() - (int32_t)cache.size(); }
    // Called once the whole prompt is in the cache; returns true if the task is already over (n_predict 0).
    // Streams a prompt_progress event after a prompt chunk, if the request asked for them.
    void report_progress(double now_ms);
    bool prompt_done(double now_ms);
    // The token sampled last, to be decoded next step at position cache.size().
    int32_t last_token() const { return last_; }

    // Samples from the logits of this slot's last row and pushes the resulting events.
    // Returns true if the generation ended (the slot is idle again).
    bool sample(const float* logits, int32_t n_ctx_slot, double now_ms);

    // Ends the task with an error event (the slot becomes idle; its cache stays valid).
    void fail(int http_status, const char* type, const std::string& message);
    // Ends the task without an event (the client is gone).
    void cancel();

    // The rows this slot contributed to the current step (a prefill chunk, [last token], or with
    // speculation [last token] + draft nodes, chain or tree with Batch::parent) and the index of its
    // first logits row (-1: none).
    int32_t step_row0 = -1, step_rows = 0, step_out0 = -1;

    // Speculative decoding (server/slot_spec.cpp), in two phases so that several slots can draft in one
    // pass. plan_draft() starts the step's draft of a generating slot whose task speculates (at most
    // `room` rows: the tree must fit one ubatch and the free cells; `timed`: no other slot shares the
    // decode; other_rows / other_tokens: what the other slots decode and emit in it, DraftLimits;
    // may_queue: a drafter may queue it for SpecShared::draft_queued()) and returns false when this step
    // must be an ordinary one (no speculation for the task, or a forced token is next). planned_rows():
    // the rows it expects to add (the depth cap while queued). add_draft_rows() then finishes the draft
    // within `room` rows now (queued_ms: this slot's share of the shared pass) and appends [last token] +
    // draft rows to `b`; false, adding nothing, if nothing was planned.
    bool plan_draft(int32_t n_ctx_slot, int room, bool timed, int other_rows, int other_tokens, bool may_queue);
    int planned_rows() const;
    bool draft_queued() const { return planned_ && queued_; }
    bool add_draft_rows(Batch& b, int room, double queued_ms);
    bool drafting() const { return drafting_; }  // add_draft_rows added rows this step
    // After the decode of a drafting step: verifies with this slot's sampler, commits the KV cache,
    // extends `cache`, and emits the accepted tokens one by one through the per-token path exactly as
    // if each had been sampled alone — tokens after a stop, n_predict, a full context or a forced
    // token are dropped and their cells removed. Returns true if the generation ended.
    bool verify_draft(const Batch& b, const DecodeOutput& out, Engine& eng, int32_t n_ctx_slot, double now_ms);
    void log_draft(int32_t pos) const;
    // --context-shift: with it a slot that fills its context keeps generating (the scheduler drops tokens
    // from its cache, then calls context_shifted()); without it, or when nothing can be dropped, the slot
    // ends with truncated: true (end_context_full).
    bool context_shift = false;
    // The engine's memory cannot decode draft trees (recurrent layers): drafts are cut to chains.
    bool chains_only = false;
    void context_shifted();
    void end_context_full(double now_ms);
    // Hidden-state layers this slot's drafters read (empty: none), and the hand-over of the rows the
    // target decoded for this slot in the current step (prompt chunk or plain generation row; drafting
    // steps hand theirs over inside verify_draft).
    const std::vector<int32_t>& capture_layers() const;
    void observe_target(const Batch& b, const DecodeOutput& out, bool prefill);
    // Tests: one more drafter in the slot's own Speculator (the server's types must be configured).
    void add_drafter(std::unique_ptr<Drafter> d);
    // The speculative types this slot's current task uses (empty: none).
    std::vector<std::string> spec_types() const;

    int32_t n_predicted() const { return n_predicted_; }
    void count_decode() { fin_.n_decodes++; }  // a generation step of this task was decoded
    // The last task's finish record (valid after it ended, until the next start()).
    const FinishInfo& finish_info() const { return fin_; }
    // Called when a task ends, before its done event is sent (the scheduler's metrics).
    std::function<void(const FinishInfo&)> on_finish;

private:
    bool accept(int32_t id, bool forced, TokenInfo info, double now_ms);
    void queue_close_reasoning();
    // A prompt_progress event (return_progress) with `processed` prompt tokens in the cache; with
    // timings_per_token it carries the prompt's timings so far.
    void push_progress(int32_t processed, double elapsed_ms);
    void finish(StopType type, double now_ms);
    void release();
    TokenInfo token_info(const float* logits, int32_t id, bool forced = false) const;
    bool may_draft() const;
    void end_grammar_stuck(double now_ms);

    int id_;
    const Tokenizer& tok_;
    int32_t n_vocab_;
    State state_ = State::idle;
    std::shared_ptr<Task> task_;

    // Per-task state, reset by start().
    std::unique_ptr<Sampler> sampler_;
    std::unique_ptr<StreamDecoder> decoder_;
    std::unique_ptr<TextOutput> output_;
    std::unique_ptr<chat::LoopGuard> guard_;
    std::unique_ptr<GrammarConstraint> grammar_;  // the task's grammar (null: unconstrained)
    std::deque<int32_t> forced_;                  // tokens injected instead of sampling (forced end of reasoning)
    FinishInfo fin_;
    int32_t last_ = -1;
    int32_t n_predicted_ = 0;
    bool has_new_line_ = false;  // the generated text holds a newline (t_max_predict_ms)
    // n_indent: at the start of a line after the first, its spaces and tabs wait here until the line's
    // first other character shows whether it is indented enough.
    bool at_line_start_ = false;
    std::string indent_pending_;
    bool gate_indent(const std::string& text, std::string& out);
    double t_start_ = 0, t_prompt_end_ = 0;

    // Speculation: the slot's own Speculator for the server's types this slot may use (slot_types_: a kind
    // may be limited to the first slots), or one made for a request that picked a subset (speculative.type);
    // spec_ points at the one the task uses (nullptr: none).
    SpecShared* spec_shared_ = nullptr;
    std::vector<std::string> slot_types_;
    std::unique_ptr<Speculator> spec_slot_, spec_task_;
    Speculator* spec_ = nullptr;
    bool drafting_ = false;
    bool planned_ = false, queued_ = false;  // plan_draft() .. add_draft_rows()
    std::vector<int32_t> generated_;         // the task's tokens (Speculator::end feeds cross-request drafters)
};

}  // namespace bee::runtime
