// tests/unit/kernels/test_matmul_bench: matmul throughput (n_tok = 1, decode-shaped), a benchmark and not a
// timed test: run with --gtest_also_run_disabled_tests --gtest_filter='*Bench*'.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "kernels/kernels.h"
#include "kernels_test_util.h"

namespace bee {
namespace {

TEST(MatmulBench, DISABLED_DecodeThroughput) {
    struct Shape { int64_t n_out, n_in; };
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K}) {
        for (Shape s : {Shape{896, 4864}, Shape{4864, 896}}) {
            std::vector<float> wf = test::random_floats(s.n_out * s.n_in, 1), x = test::random_floats(s.n_in, 2);
            std::vector<uint8_t> w(ggml_row_size(t, s.n_in) * s.n_out);
            quantize_matrix(t, wf.data(), w.data(), s.n_out, s.n_in);
            std::vector<float> y(s.n_out);
            for (int threads : {1, 2}) {
                ThreadPool pool(threads);
                for (int i = 0; i < 20; i++) matmul(pool, t, w.data(), s.n_out, s.n_in, x.data(), 1, y.data());
                // best of 10 windows of ~50 ms: the machine may be shared, the minimum is the kernel's speed
                double us = 1e30;
                for (int win = 0; win < 10; win++) {
                    int iters = 0;
                    double sec = 0;
                    const auto t0 = std::chrono::steady_clock::now();
                    while (sec < 0.05) {
                        matmul(pool, t, w.data(), s.n_out, s.n_in, x.data(), 1, y.data());
                        iters++;
                        sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                    }
                    us = std::min(us, sec / iters * 1e6);
                }
                printf("[ bench ] %-5s n_out=%-5lld n_in=%-5lld threads=%d: %8.1f us/call  %6.2f GB/s weights  %6.2f GFLOP/s\n",
                       ggml_type_name(t), (long long)s.n_out, (long long)s.n_in, threads, us,
                       (double)w.size() / us * 1e-3, 2.0 * s.n_out * s.n_in / us * 1e-3);
            }
        }
    }
}

}  // namespace
}  // namespace bee
