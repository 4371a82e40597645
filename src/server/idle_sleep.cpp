// server/idle_sleep: one watcher thread per model; the phase, the count of holds and the idle clock are
// guarded by one mutex, and the model is freed or reloaded only while no hold exists.
#include "server/idle_sleep.h"

#include <chrono>

#include "base/log.h"
#include "server/context.h"
#include "server/http_util.h"
#include "server/routes.h"
#include "server/server.h"

namespace bee::server {

namespace {

int64_t steady_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

}  // namespace

ServerContext::ServerContext() = default;

ServerContext::~ServerContext() {
    if (sleep) sleep->stop();
}

void ServerContext::shutdown() {
    if (sleep) sleep->stop();
    if (scheduler) scheduler->shutdown();
    if (streams) streams->close_all();
}

IdleSleep::IdleSleep(ServerContext& ctx, int32_t idle_seconds)
    : ctx_(ctx), idle_ms_(idle_seconds < 0 ? -1 : (int64_t)idle_seconds * 1000), last_ms_(steady_ms()) {
    if (idle_ms_ >= 0) thread_ = std::thread([this] { watch(); });
}

IdleSleep::~IdleSleep() { stop(); }

void IdleSleep::stop() {
    {
        std::unique_lock<std::mutex> lk(mu_);
        stop_ = true;
        cv_.notify_all();
        cv_.wait(lk, [&] { return phase_ == Phase::awake || phase_ == Phase::asleep; });
    }
    if (thread_.joinable()) thread_.join();
}

bool IdleSleep::sleeping() const {
    std::lock_guard<std::mutex> lk(mu_);
    return phase_ != Phase::awake;
}

IdleSleep::Hold IdleSleep::hold() {
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
        if (stop_) throw HttpError(503, "unavailable_error", "the server is shutting down");
        if (phase_ == Phase::awake) break;
        if (phase_ == Phase::asleep) wake(lk);  // returns awake, or throws
        else cv_.wait(lk);
    }
    active_++;
    return Hold(this, [](IdleSleep* s) { s->release(true); });
}

IdleSleep::Hold IdleSleep::peek() {
    std::lock_guard<std::mutex> lk(mu_);
    if (phase_ != Phase::awake) return nullptr;
    active_++;
    return Hold(this, [](IdleSleep* s) { s->release(false); });
}

void IdleSleep::release(bool restart_clock) {
    std::lock_guard<std::mutex> lk(mu_);
    active_--;
    if (restart_clock) last_ms_ = steady_ms();
    cv_.notify_all();
}

void IdleSleep::watch() {
    std::unique_lock<std::mutex> lk(mu_);
    while (!stop_) {
        if (phase_ != Phase::awake || active_ > 0) {
            cv_.wait(lk);
            continue;
        }
        const int64_t now = steady_ms(), due = last_ms_ + idle_ms_;
        // note: a task whose client left may still be finishing in the scheduler after its hold is gone
        if (now >= due && ctx_.scheduler->idle()) {
            fall_asleep(lk);
            continue;
        }
        cv_.wait_for(lk, std::chrono::milliseconds(std::max<int64_t>(due - now, 50)));
    }
}

// Called with the lock held, no hold out and the phase awake. The replies are kept first, under the lock,
// so a read-only request never sees the phase asleep without them; new holds wait until the phase is asleep.
void IdleSleep::fall_asleep(std::unique_lock<std::mutex>& lk) {
    props_ = props_json(ctx_, true);
    models_ = model_list_json(ctx_);
    metrics_ = ctx_.scheduler->metrics(false);
    phase_ = Phase::falling_asleep;
    lk.unlock();
    BEE_LOG_INFO("idle for %lld s: the server is going to sleep (the model is unloaded)", (long long)idle_ms_ / 1000);
    unload_model_weights(ctx_);
    lk.lock();
    phase_ = Phase::asleep;
    cv_.notify_all();
}

// Called with the lock held and the phase asleep; returns with it held and the phase awake, or throws.
void IdleSleep::wake(std::unique_lock<std::mutex>& lk) {
    phase_ = Phase::waking;
    const runtime::SchedulerMetrics metrics = metrics_;
    lk.unlock();
    BEE_LOG_INFO("a request woke the server: reloading the model");
    std::string error;
    try {
        load_model_weights(ctx_);
        ctx_.scheduler->restore_metrics(metrics);
    } catch (const std::exception& e) {
        error = e.what();
        unload_model_weights(ctx_);
    }
    lk.lock();
    phase_ = error.empty() ? Phase::awake : Phase::asleep;
    last_ms_ = steady_ms();
    cv_.notify_all();
    if (!error.empty()) {
        BEE_LOG_ERROR("reloading the model after sleep failed: %s", error.c_str());
        throw HttpError(500, "server_error", "reloading the model after sleep failed: " + error);
    }
}

Json IdleSleep::cached_props() const {
    std::lock_guard<std::mutex> lk(mu_);
    return props_;
}

Json IdleSleep::cached_models() const {
    std::lock_guard<std::mutex> lk(mu_);
    return models_;
}

runtime::SchedulerMetrics IdleSleep::take_cached_metrics() {
    std::lock_guard<std::mutex> lk(mu_);
    runtime::SchedulerMetrics m = metrics_;
    metrics_.bucket_prompt_tokens = metrics_.bucket_predicted_tokens = 0;
    metrics_.bucket_prompt_seconds = metrics_.bucket_predicted_seconds = 0;
    return m;
}

}  // namespace bee::server
