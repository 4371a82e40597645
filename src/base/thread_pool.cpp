// base/thread_pool: workers spin briefly on the region generation, then sleep on a condition variable;
// tasks are claimed from per-thread ranges (see thread_pool.h).
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

inline uint64_t range_word(uint32_t begin, uint32_t end) { return ((uint64_t)end << 32) | begin; }

}  // namespace

ThreadPool::ThreadPool(int n_threads)
    : n_threads_(n_threads < 1 ? 1 : n_threads), ranges_(std::make_unique<Range[]>((size_t)n_threads_)) {
    for (int i = 1; i < n_threads_; i++) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        stop_.store(true);
        generation_.fetch_add(1);  // wakes spinning workers too
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
}

// Claims and runs tasks, own range first, then the others', until every range is empty. Tasks are
// claimed in blocks of a fraction of what the range has left (guided scheduling): a region of n tasks
// costs each thread O(log n) atomic claims instead of n, and the blocks shrink to single tasks at the end,
// where the threads balance.
// note: a claim is valid exactly for the fetched values below the range's `end`, whichever region the
// caller of this function thought it was in: ranges are rewritten only when a region starts, after the
// previous one finished, so an empty range of an old region yields nothing and a task of a newer region
// is a real task of it, with fn_ already set (it is stored before the ranges), and that region cannot
// finish (nor fn_ change) before the task is done. The block size comes from a plain load that may be
// stale; it only sizes the claim. A failed claim moves `next` past `end` by at most one block (at most
// once per thread and range per region), far from the end field of the 64-bit word.
void ThreadPool::claim_and_run(int thread) {
    int done = 0;
    const uint32_t share = (uint32_t)(2 * n_threads_);
    for (int k = 0; k < n_threads_; k++) {
        std::atomic<uint64_t>& range = ranges_[(thread + k) % n_threads_].word;
        for (;;) {
            const uint64_t seen = range.load(std::memory_order_relaxed);
            const uint32_t left = (uint32_t)(seen >> 32) - (uint32_t)seen;
            const uint32_t block = (int32_t)left > (int32_t)share ? left / share : 1;
            const uint64_t w = range.fetch_add(block, std::memory_order_acq_rel);
            const uint32_t first = (uint32_t)w, end = (uint32_t)(w >> 32);
            if (first >= end) break;
            const uint32_t last = end - first < block ? end : first + block;
            const auto* fn = fn_.load(std::memory_order_acquire);
            for (uint32_t task = first; task < last; task++) (*fn)((int)task, thread);
            done += (int)(last - first);
        }
    }
    if (done > 0) done_.fetch_add(done, std::memory_order_release);
}

void ThreadPool::worker(int id) {
    uint32_t seen = 0;
    for (;;) {
        // spin a little: decode steps come back to back
        for (int spins = 0; generation_.load(std::memory_order_acquire) == seen && spins < kSpinLimit; spins++)
            spin_wait(spins);
        if (generation_.load(std::memory_order_acquire) == seen) {
            // note: sleepers_ is raised before the predicate is checked under the lock, and run() bumps
            // the generation before it reads sleepers_ (both seq_cst): either run() sees a sleeper and
            // notifies under the lock, or this thread sees the new generation and does not sleep.
            sleepers_.fetch_add(1);
            {
                std::unique_lock<std::mutex> lk(mu_);
                cv_.wait(lk, [&] { return generation_.load() != seen; });
            }
            sleepers_.fetch_sub(1);
        }
        seen = generation_.load(std::memory_order_acquire);
        if (stop_.load()) return;
        claim_and_run(id);
    }
}

void ThreadPool::run(int n_tasks, const std::function<void(int, int)>& fn) {
    if (n_tasks <= 0) return;
    if (n_threads_ == 1 || n_tasks == 1) {
        for (int t = 0; t < n_tasks; t++) fn(t, 0);
        return;
    }
    // The previous region is finished (every task done), so nothing reads fn_ or the ranges now.
    fn_.store(&fn, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    for (int t = 0; t < n_threads_; t++)
        ranges_[t].word.store(range_word((uint32_t)((int64_t)n_tasks * t / n_threads_),
                                         (uint32_t)((int64_t)n_tasks * (t + 1) / n_threads_)),
                              std::memory_order_release);
    generation_.fetch_add(1);    // seq_cst: ordered before the sleepers_ load below (see worker())
    if (sleepers_.load() > 0) {  // the lock and the wake-up only when a worker went to sleep
        { std::lock_guard<std::mutex> lk(mu_); }
        cv_.notify_all();
    }
    claim_and_run(0);
    for (int spins = 0; done_.load(std::memory_order_acquire) != n_tasks; spins++) spin_wait(spins);
}

int default_thread_count() {
    unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : (int)n;
}

}  // namespace bee
