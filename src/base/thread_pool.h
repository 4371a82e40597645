// base/thread_pool: a fixed set of worker threads running one parallel region at a time.
#pragma once
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace bee {

// run(n_tasks, fn) calls fn(task, thread) for every task in [0, n_tasks), spread over the
// calling thread plus n_threads-1 workers, and returns when all are done.
// note: tasks are handed out by an atomic counter; the result of each task must not depend
// on which thread runs it (batch invariance, DESIGN.md invariant 2).
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
    void work(int thread);

    int n_threads_;
    std::vector<std::thread> threads_;
    std::mutex mu_;
    std::condition_variable cv_;
    const std::function<void(int, int)>* fn_ = nullptr;
    int n_tasks_ = 0;
    std::atomic<int> next_{0};
    std::atomic<int> pending_{0};       // workers still inside the current region
    std::atomic<uint64_t> generation_{0};
    bool stop_ = false;
};

// Default thread count: physical cores as seen by std::thread, at least 1.
int default_thread_count();

}  // namespace bee
