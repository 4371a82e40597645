// server/idle_sleep: --sleep-idle-seconds. After N seconds without a request that needs the model, the
// model, engine (KV cache) and scheduler are freed and the server "sleeps"; /health, GET /props, GET
// /models and /metrics answer from what was kept just before, without waking it. Any other request
// reloads the model on its own thread (the others wait) and is then served as usual.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "chat/template.h"
#include "runtime/scheduler.h"

namespace bee::server {

struct ServerContext;
using Json = chat::Json;

class IdleSleep {
public:
    // A request's claim on the loaded model: the model is not put to sleep while one is held.
    using Hold = std::shared_ptr<void>;

    // idle_seconds < 0: the model never sleeps (holds are only counted). The watcher thread starts here.
    IdleSleep(ServerContext& ctx, int32_t idle_seconds);
    ~IdleSleep();  // stop()

    // For a request that needs the model: wakes it when asleep (reloading it on this thread; requests
    // arriving meanwhile wait) and restarts the idle clock when released. Throws HttpError 503 after stop(),
    // 500 when the reload fails (the model stays asleep; the next request tries again).
    Hold hold();
    // For a read-only endpoint: a hold while the model is awake, which neither wakes it nor restarts the idle
    // clock; null while it sleeps (answer from the cached replies then).
    Hold peek();
    bool sleeping() const;
    // Stops the watcher; later holds get 503. Waits for a sleep or wake-up in progress to end.
    void stop();

    // Replies kept from just before sleeping.
    Json cached_props() const;
    Json cached_models() const;
    // The counters as they were when the model went to sleep; the throughput bucket is reported by the first
    // call only (later calls and the woken scheduler see it emptied, as after a scrape while awake).
    runtime::SchedulerMetrics take_cached_metrics();

private:
    enum class Phase { awake, falling_asleep, asleep, waking };
    void watch();
    void fall_asleep(std::unique_lock<std::mutex>& lk);
    void wake(std::unique_lock<std::mutex>& lk);
    void release(bool restart_clock);

    ServerContext& ctx_;
    const int64_t idle_ms_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    Phase phase_ = Phase::awake;
    int active_ = 0;
    int64_t last_ms_ = 0;  // steady clock, when the last hold was released
    bool stop_ = false;
    Json props_, models_;
    runtime::SchedulerMetrics metrics_;
    std::thread thread_;
};

}  // namespace bee::server
