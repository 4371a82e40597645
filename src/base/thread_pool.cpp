// base/thread_pool: workers spin briefly on a generation counter, then sleep on a condition variable.
#include "base/thread_pool.h"

#include <immintrin.h>

namespace bee {

namespace {

// note: pause first, then yield. With more runnable threads than cores (a loaded machine, tests run in
// parallel) a thread that only pauses holds the core the thread it waits for needs: a region then
// costs a scheduler time slice (measured ~2 ms instead of ~10 us with 2 threads on 2 busy cores).
constexpr int kPauseSpins = 1000;
constexpr int kSpinLimit = 5000;  // workers sleep on the condition variable after this many rounds

inline void spin_wait(int spins) {
    if (spins < kPauseSpins) _mm_pause();
    else std::this_thread::yield();
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
    for (int i = 1; i < n_threads_; i++) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        stop_ = true;
        generation_.fetch_add(1);
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
}

void ThreadPool::work(int thread) {
    for (;;) {
        int t = next_.fetch_add(1, std::memory_order_relaxed);
        if (t >= n_tasks_) break;
        (*fn_)(t, thread);
    }
}

void ThreadPool::worker(int id) {
    uint64_t seen = 0;
    for (;;) {
        // spin a little: decode steps come back to back
        for (int spins = 0; generation_.load(std::memory_order_acquire) == seen && spins < kSpinLimit; spins++)
            spin_wait(spins);
        if (generation_.load(std::memory_order_acquire) == seen) {
            std::unique_lock<std::mutex> lk(mu_);
            cv_.wait(lk, [&] { return generation_.load() != seen; });
        }
        seen = generation_.load(std::memory_order_acquire);
        if (stop_) return;
        work(id);
        pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
}

void ThreadPool::run(int n_tasks, const std::function<void(int, int)>& fn) {
    if (n_tasks <= 0) return;
    if (n_threads_ == 1 || n_tasks == 1) {
        for (int t = 0; t < n_tasks; t++) fn(t, 0);
        return;
    }
    {
        std::lock_guard<std::mutex> lk(mu_);
        fn_ = &fn;
        n_tasks_ = n_tasks;
        next_.store(0);
        pending_.store(n_threads_ - 1);
        generation_.fetch_add(1, std::memory_order_acq_rel);
    }
    cv_.notify_all();
    work(0);
    for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; spins++) spin_wait(spins);
    fn_ = nullptr;
}

int default_thread_count() {
    unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : (int)n;
}

}  // namespace bee
