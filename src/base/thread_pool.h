// base/thread_pool: a fixed set of worker threads running one parallel region at a time.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace bee {

// run(n_tasks, fn) calls fn(task, thread) for every task in [0, n_tasks), spread over the
// calling thread plus n_threads-1 workers, and returns when all are done.
// note: the tasks are dealt out in contiguous ranges, one per thread, each in its own cache line: a
// thread claims blocks of its own range's tasks with an uncontended fetch_add (the blocks shrink to
// single tasks as the range empties), and when that is empty takes tasks from the other ranges. One shared counter per region made both threads write the same
// line for every task (about 7% of a server step of 8 rows). run() waits for finished tasks, not for
// workers: a worker that is not scheduled in time (more runnable threads than cores) leaves its range to
// the others. The result of each task must not depend on which thread runs it (batch invariance,
// DESIGN.md invariant 2).
class ThreadPool {
public:
    explicit ThreadPool(int n_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return n_threads_; }
    void run(int n_tasks, const std::function<void(int task, int thread)>& fn);

private:
    // One thread's range of the current region: (end << 32) | next unclaimed task.
    struct alignas(64) Range {
        std::atomic<uint64_t> word{0};
    };
    void worker(int id);
    void claim_and_run(int thread);

    int n_threads_;
    std::vector<std::thread> threads_;
    std::unique_ptr<Range[]> ranges_;
    std::mutex mu_;  // guards sleeping (cv_) only
    std::condition_variable cv_;
    std::atomic<const std::function<void(int, int)>*> fn_{nullptr};
    alignas(64) std::atomic<uint32_t> generation_{0};  // advanced once per region: wakes the workers
    alignas(64) std::atomic<int> done_{0};             // finished tasks of the current region
    alignas(64) std::atomic<int> sleepers_{0};         // workers waiting on cv_ (run() notifies only then)
    std::atomic<bool> stop_{false};
};

// Default thread count: physical cores as seen by std::thread, at least 1.
int default_thread_count();

}  // namespace bee
