// base/thread_pool: a fixed set of worker threads running one parallel region at a time.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace bee {

// run(n_tasks, fn) calls fn(task, thread) for every task in [0, n_tasks), spread over the
// calling thread plus n_threads-1 workers, and returns when all are done.
// note: tasks are claimed from one atomic word (region generation, next task), and run() waits for
// finished tasks, not for workers: a worker that is not scheduled in time (more runnable threads than
// cores) simply finds nothing left, instead of holding the caller for a scheduler time slice. The
// result of each task must not depend on which thread runs it (batch invariance, DESIGN.md invariant 2).
class ThreadPool {
public:
    explicit ThreadPool(int n_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return n_threads_; }
    void run(int n_tasks, const std::function<void(int task, int thread)>& fn);

private:
    void worker(int id);
    void claim_and_run(uint32_t generation, int thread);

    int n_threads_;
    std::vector<std::thread> threads_;
    std::mutex mu_;  // guards sleeping (cv_) only
    std::condition_variable cv_;
    std::atomic<const std::function<void(int, int)>*> fn_{nullptr};
    std::atomic<int> n_tasks_{0};
    std::atomic<uint64_t> work_{0};  // (generation << 32) | next unclaimed task of that region
    std::atomic<int> done_{0};       // finished tasks of the current region
    std::atomic<bool> stop_{false};
};

// Default thread count: physical cores as seen by std::thread, at least 1.
int default_thread_count();

}  // namespace bee
