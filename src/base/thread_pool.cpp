// base/thread_pool: workers spin briefly on the region generation, then sleep on a condition variable;
// tasks are claimed with a compare-and-swap on (generation, next task).
#include "base/thread_pool.h"

#include <immintrin.h>

namespace bee {

namespace {

// note: pause first, then yield. With more runnable threads than cores (a loaded machine, tests run in
// parallel) a thread that only pauses holds the core the thread it waits for needs.
constexpr int kPauseSpins = 1000;
constexpr int kSpinLimit = 5000;  // workers sleep on the condition variable after this many rounds

inline void spin_wait(int spins) {
    if (spins < kPauseSpins) _mm_pause();
    else std::this_thread::yield();
}

inline uint32_t generation_of(uint64_t w) { return (uint32_t)(w >> 32); }

// Next-task value of a closed region: no task index reaches it.
constexpr uint32_t kClosed = 0xFFFFFFFFu;

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
    for (int i = 1; i < n_threads_; i++) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        stop_.store(true);
        work_.fetch_add(uint64_t{1} << 32);  // wakes spinning workers too
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
}

// Claims and runs tasks of region `generation` until none is left (or the region is over).
// note: a successful claim means the region is still open (its task is not done), so fn_ and the
// caller's function are still alive.
void ThreadPool::claim_and_run(uint32_t generation, int thread) {
    uint64_t w = work_.load(std::memory_order_acquire);
    for (;;) {
        if (generation_of(w) != generation || (uint32_t)w >= (uint32_t)n_tasks_.load()) return;
        if (!work_.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
        (*fn_.load(std::memory_order_relaxed))((int)(uint32_t)w, thread);
        done_.fetch_add(1, std::memory_order_release);
        w = work_.load(std::memory_order_acquire);
    }
}

void ThreadPool::worker(int id) {
    uint32_t seen = 0;
    for (;;) {
        // spin a little: decode steps come back to back
        for (int spins = 0; generation_of(work_.load(std::memory_order_acquire)) == seen && spins < kSpinLimit; spins++)
            spin_wait(spins);
        if (generation_of(work_.load(std::memory_order_acquire)) == seen) {
            std::unique_lock<std::mutex> lk(mu_);
            cv_.wait(lk, [&] { return generation_of(work_.load()) != seen; });
        }
        seen = generation_of(work_.load(std::memory_order_acquire));
        if (stop_.load()) return;
        claim_and_run(seen, id);
    }
}

void ThreadPool::run(int n_tasks, const std::function<void(int, int)>& fn) {
    if (n_tasks <= 0) return;
    if (n_threads_ == 1 || n_tasks == 1) {
        for (int t = 0; t < n_tasks; t++) fn(t, 0);
        return;
    }
    // note: close the previous region first. A worker that read its (generation, next) just before it
    // ended could otherwise see the new n_tasks_ and claim "task next" of the old region with the new fn.
    // Once closed, such a claim fails (the word changed) and no index is below kClosed's.
    const uint32_t previous = generation_of(work_.load());
    work_.store(((uint64_t)previous << 32) | kClosed);
    fn_.store(&fn);
    n_tasks_.store(n_tasks);
    done_.store(0);
    const uint32_t generation = previous + 1;
    {
        std::lock_guard<std::mutex> lk(mu_);
        work_.store((uint64_t)generation << 32);
    }
    cv_.notify_all();
    claim_and_run(generation, 0);
    for (int spins = 0; done_.load(std::memory_order_acquire) != n_tasks; spins++) spin_wait(spins);
}

int default_thread_count() {
    unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : (int)n;
}

}  // namespace bee
