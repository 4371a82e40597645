// runtime/scheduler: the one inference thread. Tasks wait in a queue, are given a slot (pinned, best
// cached-prefix match, or least recently used), and every step builds ONE batch from all busy slots —
// one decode row per generating slot plus prefill chunks of new prompts, within the logical batch size —
// decodes it and samples each slot's next token (continuous batching). With speculative decoding a
// generating slot adds [last token + draft rows] instead of one row; several slots draft in one step.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "model/engine.h"
#include "runtime/prompt_cache.h"
#include "runtime/slot.h"
#include "runtime/task.h"
#include "spec/registry.h"

namespace bee::runtime {

struct SchedulerParams {
    int32_t n_parallel = 4;                // slots = KV sequences 0..n_parallel-1
    bool kv_unified = false;               // every slot may use the whole context (shared cells)
    int32_t n_batch = 2048;                // rows per step (the engine splits them into ubatches)
    float slot_prompt_similarity = 0.10f;  // min cached-prefix share of the prompt to prefer a slot
    size_t cache_ram_bytes = 0;            // --cache-ram: host-RAM prompt cache size (0: off)
    SpecParams spec;                       // --spec-*: speculative decoding for every slot (types empty: off)
    bool context_shift = false;            // --context-shift: a full slot drops tokens after n_keep instead of ending
    // Tests: a drafter added to each slot's Speculator after the configured ones (needs spec.types).
    std::function<std::unique_ptr<Drafter>(int slot)> extra_drafter;
};

// Counters for /metrics (llama.cpp names in server/routes_metrics.cpp).
struct SchedulerMetrics {
    uint64_t prompt_tokens_total = 0;         // prompt tokens evaluated (cache hits excluded)
    uint64_t prompt_tokens_cached_total = 0;  // prompt tokens reused from the KV cache
    double prompt_seconds_total = 0;
    uint64_t tokens_predicted_total = 0;
    double tokens_predicted_seconds_total = 0;
    uint64_t n_decode_total = 0;      // engine decode calls
    uint64_t n_busy_slots_total = 0;  // busy slots summed over decode calls
    uint64_t n_tokens_max = 0;        // largest sequence length seen
    uint64_t n_drafted_total = 0;     // draft tokens proposed (finished requests)
    uint64_t n_drafted_accepted_total = 0;
    uint64_t n_draft_rounds_total = 0;         // drafts verified (finished requests)
    uint64_t n_drafted_grammar_cut_total = 0;  // draft tokens a grammar cut before verification
    uint64_t requests_processing = 0;          // gauges
    uint64_t requests_deferred = 0;
    // Since the previous metrics() call (for the throughput gauges).
    uint64_t bucket_prompt_tokens = 0, bucket_predicted_tokens = 0;
    double bucket_prompt_seconds = 0, bucket_predicted_seconds = 0;
};

struct SlotSnapshot {
    int id = 0;
    bool processing = false;
    bool prefilling = false;
    uint64_t task_id = 0;
    int32_t n_ctx = 0;
    int32_t n_cached = 0;  // tokens in the slot's KV sequence
    int32_t n_prompt = 0;
    int32_t n_predicted = 0;
    std::vector<std::string> spec_types;  // speculative types of the running task (empty: none)
};

class Scheduler {
public:
    // Starts the inference thread. The engine must have n_seq_max >= n_parallel.
    Scheduler(Engine& engine, const SchedulerParams& params);
    ~Scheduler();  // shutdown()
    // Stops the inference thread; unfinished and later tasks get a 503 error event.
    void shutdown();

    void submit(std::shared_ptr<Task> task);
    int32_t n_ctx_slot() const { return n_ctx_slot_; }
    int32_t n_parallel() const { return params_.n_parallel; }
    const SpecParams& spec_params() const { return params_.spec; }
    std::vector<SlotSnapshot> slots() const;
    // A copy of the counters; `reset_bucket` starts a new throughput bucket.
    SchedulerMetrics metrics(bool reset_bucket);
    // Seeds the counters (a scheduler rebuilt after the server slept goes on counting where it stopped).
    void restore_metrics(const SchedulerMetrics& m);
    // No task queued, waiting or running (as last published by the inference thread).
    bool idle() const;

private:
    void run();
    void admit(double now);
    int pick_slot(const Task& t) const;
    void start_on_slot(Slot& s, std::shared_ptr<Task> t, double now);
    void run_engine_action(Slot& s, Task& t, double now);
    const std::vector<float>& task_lora(const Task& t) const;
    void use_lora(Slot& s, const std::vector<float>& lora);
    static constexpr int32_t kCheckpointTail = 4;  // llama-server's offset of a checkpoint before the prompt end
    void checkpoint_prompt_end(Slot& s);
    void learn_step_cost(double ms);
    static constexpr size_t kRamMinTokens = 32;
    void save_to_ram(Slot& s);
    size_t restore_from_ram(Slot& s, const std::vector<int32_t>& prompt, const std::vector<float>& lora, size_t n_past);
    size_t reuse_chunks(Slot& s, const std::vector<int32_t>& prompt, size_t n_past, int32_t min_chunk);
    bool build_batch();
    void set_capture();
    void drafting_failed(Slot& s, const char* what);
    void make_room(int rows_needed);
    bool shift_context(Slot& s);
    void decode_step();
    void on_finished(const FinishInfo& f);  // a slot's task ended (Slot::on_finish)
    void publish();

    Engine& eng_;
    SchedulerParams params_;
    int32_t n_ctx_slot_ = 0;
    std::unique_ptr<SpecShared> spec_;  // null without --spec-type; declared before the slots using it
    int step_cost_rows_ = 0;            // rows of this step if it is a shared generation step (learn_step_cost)
    int32_t step_cost_pos_ = 0;         // its deepest context
    double step_draft_ms_ = 0;          // the slots' drafting time in this step
    std::vector<Slot> slots_;
    std::unique_ptr<PromptCacheRam> ram_;        // null without --cache-ram
    std::deque<std::shared_ptr<Task>> waiting_;  // scheduler thread only
    Batch batch_;
    DecodeOutput out_;

    mutable std::mutex mu_;  // guards incoming_, stop_, snapshot_, metrics_
    std::condition_variable cv_;
    std::deque<std::shared_ptr<Task>> incoming_;
    bool stop_ = false;
    std::vector<SlotSnapshot> snapshot_;
    SchedulerMetrics metrics_;
    std::thread thread_;
};

}  // namespace bee::runtime
