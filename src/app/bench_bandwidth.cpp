// app/bench_bandwidth: `bee bench --bandwidth` — the memory read bandwidth this machine reaches with
// one thread and with N, the ceiling that tg GB/s figures are judged against.
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "app/bench.h"
#include "base/cpu.h"
#include "base/error.h"
#include "base/thread_pool.h"
#include "base/timer.h"

namespace bee {

namespace {

constexpr int kRepeats = 5;
constexpr size_t kAlign = 64;

// Reference: sum of n 64-bit words.
uint64_t sum_scalar(const uint64_t* p, size_t n) {
    uint64_t a = 0, b = 0, c = 0, d = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        a += p[i];
        b += p[i + 1];
        c += p[i + 2];
        d += p[i + 3];
    }
    for (; i < n; i++) a += p[i];
    return a + b + c + d;
}

// Same sum with 256-bit loads; p is 64-byte aligned.
__attribute__((target("avx2"))) uint64_t sum_avx2(const uint64_t* p, size_t n) {
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a = _mm256_add_epi64(a, _mm256_load_si256((const __m256i*)(p + i)));
        b = _mm256_add_epi64(b, _mm256_load_si256((const __m256i*)(p + i + 4)));
        c = _mm256_add_epi64(c, _mm256_load_si256((const __m256i*)(p + i + 8)));
        d = _mm256_add_epi64(d, _mm256_load_si256((const __m256i*)(p + i + 12)));
    }
    alignas(32) uint64_t lanes[4];
    _mm256_store_si256((__m256i*)lanes, _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d)));
    return lanes[0] + lanes[1] + lanes[2] + lanes[3] + sum_scalar(p + i, n - i);
}

struct FreeDeleter {
    void operator()(uint64_t* p) const { std::free(p); }
};

// Best-of-kRepeats GB/s reading all n words with every thread of the pool on its own slice.
double measure(ThreadPool& pool, const uint64_t* buf, size_t n, bool avx2, uint64_t& sink) {
    const int nt = pool.size();
    std::vector<uint64_t> partial(nt);
    double best_s = 1e30;
    for (int rep = 0; rep < kRepeats; rep++) {
        const int64_t t0 = time_us();
        pool.run(nt, [&](int task, int) {
            const size_t per = (n / nt) & ~(size_t)15;  // keep slices 128-byte aligned
            const size_t lo = per * task, hi = task == nt - 1 ? n : lo + per;
            partial[task] = avx2 ? sum_avx2(buf + lo, hi - lo) : sum_scalar(buf + lo, hi - lo);
        });
        best_s = std::min(best_s, (time_us() - t0) / 1e6);
        for (uint64_t s : partial) sink += s;
    }
    return (double)(n * sizeof(uint64_t)) / std::max(best_s, 1e-9) / 1e9;
}

}  // namespace

void bench_bandwidth(FILE* out, size_t mb, int n_threads) {
    const size_t bytes = mb << 20;
    const size_t n = bytes / sizeof(uint64_t);
    std::unique_ptr<uint64_t, FreeDeleter> buf((uint64_t*)std::aligned_alloc(kAlign, bytes));
    if (!buf) fail("cannot allocate %zu MiB for the bandwidth test", mb);
    const bool avx2 = cpu_isa() >= Isa::avx2;
    ThreadPool pool_n(n_threads);
    // First touch from every thread so pages land near the threads that read them.
    pool_n.run(n_threads, [&](int task, int) {
        const size_t per = n / n_threads, lo = per * task, hi = task == n_threads - 1 ? n : lo + per;
        for (size_t i = lo; i < hi; i++) buf.get()[i] = i;
    });
    uint64_t sink = 0;
    ThreadPool pool_1(1);
    const double gb1 = measure(pool_1, buf.get(), n, avx2, sink);
    const double gbn = measure(pool_n, buf.get(), n, avx2, sink);
    volatile uint64_t keep = sink;  // the sums must be used, or the reads could be dropped
    (void)keep;
    fprintf(out, "read bandwidth: %zu MiB buffer, %s loads, best of %d\n", mb, avx2 ? "avx2" : "scalar", kRepeats);
    fprintf(out, "| threads |      GB/s |\n| ------: | --------: |\n");
    fprintf(out, "| %7d | %9.2f |\n", 1, gb1);
    if (n_threads != 1) fprintf(out, "| %7d | %9.2f |\n", n_threads, gbn);
}

}  // namespace bee
