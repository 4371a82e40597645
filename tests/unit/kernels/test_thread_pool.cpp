// tests/unit/kernels/test_thread_pool: ThreadPool::run covers each task exactly once; pools come and go.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <vector>

#include "base/thread_pool.h"

namespace bee {
namespace {

TEST(ThreadPool, EveryTaskExactlyOnce) {
    for (int n_threads : {1, 2, 3, 4, 8}) {
        ThreadPool pool(n_threads);
        EXPECT_EQ(pool.size(), n_threads);
        for (int n_tasks : {0, 1, 2, 3, 7, 8, 64, 1000, 4097}) {
            std::vector<std::atomic<int>> hits(n_tasks);
            std::atomic<int> bad_thread{0};
            pool.run(n_tasks, [&](int task, int thread) {
                hits[task].fetch_add(1);
                if (thread < 0 || thread >= n_threads) bad_thread.fetch_add(1);
            });
            for (int t = 0; t < n_tasks; t++) ASSERT_EQ(hits[t].load(), 1) << "task " << t << " threads " << n_threads;
            EXPECT_EQ(bad_thread.load(), 0);
        }
    }
}

TEST(ThreadPool, ManyRegionsBackToBack) {
    ThreadPool pool(3);
    std::atomic<int64_t> sum{0};
    for (int r = 0; r < 2000; r++) pool.run(r % 11, [&](int task, int) { sum.fetch_add(task + 1); });
    int64_t want = 0;
    for (int r = 0; r < 2000; r++) want += (int64_t)(r % 11) * (r % 11 + 1) / 2;
    EXPECT_EQ(sum.load(), want);
}

// More workers than cores: late workers must find their region closed (never run a task twice, never
// take a task of the next region as their own), and run() must return with every task done.
TEST(ThreadPool, OversubscribedRegionsLoseAndRepeatNothing) {
    ThreadPool pool(8);
    std::atomic<int64_t> sum{0};
    int64_t want = 0;
    for (int r = 0; r < 20000; r++) {
        const int n = 1 + r % 5;
        pool.run(n, [&](int task, int) { sum.fetch_add((int64_t)r * 8 + task + 1); });
        for (int t = 0; t < n; t++) want += (int64_t)r * 8 + t + 1;
        if (r % 997 == 0) {
            ASSERT_EQ(sum.load(), want) << "after region " << r;
        }
    }
    EXPECT_EQ(sum.load(), want);
}

TEST(ThreadPool, CreateAndDestroyRepeatedly) {
    for (int i = 0; i < 200; i++) {
        auto pool = std::make_unique<ThreadPool>(1 + i % 4);
        if (i % 3 != 0) {  // some pools are destroyed without ever running a region
            std::atomic<int> n{0};
            pool->run(5 + i % 7, [&](int, int) { n.fetch_add(1); });
            ASSERT_EQ(n.load(), 5 + i % 7);
        }
    }
}

TEST(ThreadPool, ZeroAndNegativeThreadCountsMeanOne) {
    ThreadPool a(0), b(-3);
    EXPECT_EQ(a.size(), 1);
    EXPECT_EQ(b.size(), 1);
    int n = 0;
    a.run(4, [&](int, int thread) { n += thread == 0; });
    EXPECT_EQ(n, 4);
    EXPECT_GE(default_thread_count(), 1);
}

}  // namespace
}  // namespace bee
