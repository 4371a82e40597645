// server/slot: one generation lane of the scheduler. A slot owns sequence `id` in the engine's KV cache,
// remembers which tokens that sequence holds (the prompt cache), and runs one task at a time: sampling,
// detokenizing, stop strings, reasoning split, reasoning budget and loop guard, finish bookkeeping.
#pragma once
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chat/loop_guard.h"
#include "sample/sampler.h"
#include "server/task.h"
#include "server/text_output.h"
#include "tokenizer/tokenizer.h"

namespace bee::server {

class Slot {
public:
    enum class State { idle, prefill, generate };

    Slot(int id, const Tokenizer& tok, int32_t n_vocab) : id_(id), tok_(tok), n_vocab_(n_vocab) {}

    int id() const { return id_; }
    State state() const { return state_; }
    bool idle() const { return state_ == State::idle; }
    const std::shared_ptr<Task>& task() const { return task_; }

    // Tokens whose K/V sit in sequence id() in position order: the prompt cache. The scheduler trims it
    // together with the KV cache (seq_rm) and appends what each decode wrote.
    std::vector<int32_t> cache;
    double t_last_used = 0;  // ms; least-recently-used slot selection

    // Takes a task whose first n_cached prompt tokens are already in `cache` (and in the KV cache).
    void start(std::shared_ptr<Task> task, int32_t n_cached, double now_ms);
    // Prompt tokens still to prefill.
    int32_t prompt_left() const { return (int32_t)task_->prompt.size() - (int32_t)cache.size(); }
    // Called once the whole prompt is in the cache; returns true if the task is already over (n_predict 0).
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

    // Extension point for speculative decoding: the rows this slot contributed to the current step
    // ([last token] today; later [last token] + draft tokens, chain or tree with Batch::parent) and the
    // index of its first logits row. With drafts, spec/'s verify samples with this slot's sampler and
    // may accept several tokens in one step; each accepted token then goes through accept() (the
    // per-token emit/stop path below, to be made public for that) instead of sample().
    int32_t step_row0 = -1, step_rows = 0, step_out0 = -1;

    int32_t n_predicted() const { return n_predicted_; }
    // The last task's finish record (valid after it ended, until the next start()).
    const FinishInfo& finish_info() const { return fin_; }

private:
    bool accept(int32_t id, bool forced, TokenInfo info, double now_ms);
    void queue_close_reasoning();
    void finish(StopType type, double now_ms);
    void release();
    TokenInfo token_info(const float* logits, int32_t id) const;

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
    std::deque<int32_t> forced_;  // tokens injected instead of sampling (forced end of reasoning)
    FinishInfo fin_;
    int32_t last_ = -1;
    int32_t n_predicted_ = 0;
    double t_start_ = 0, t_prompt_end_ = 0;
};

}  // namespace bee::server
