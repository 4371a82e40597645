// app/bench_spec_cost: the verify cost curve behind `bee bench spec --cost-curve K` — how long one target
// decode of 1 + k rows (the last sampled token plus k draft tokens, every row returning logits, as a
// verify batch does) takes after a real prompt, relative to an ordinary one-row decode. Speculation pays
// only when the accepted tokens per decode exceed this ratio, so the curve is what a depth choice is
// weighed against. Depths alternate within each repetition (the machine is noisy) and the median is kept.
// Each timed decode follows kSteady untimed decodes of the same rows, as in a loop at a constant depth:
// how fast a decode runs depends on how long ago the previous one read the weights (on a shared-L3 host
// the model's cache lines decay within milliseconds; docs/PERFORMANCE-LOG.md, 2026-11-23), so timing k = 0
// right after a wide decode would overstate a plain decode and understate every ratio.
#include "app/bench_spec_cost.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "base/error.h"
#include "base/timer.h"

namespace bee {

double process_cpu_ms() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

namespace {

constexpr int kSteady = 8;  // untimed decodes of the same rows before each timed one

double median_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::vector<VerifyCost> measure_verify_cost(Engine& eng, const std::vector<int32_t>& prompt, int k_max, int reps) {
    if (prompt.empty()) fail("--cost-curve: the first prompt of the set is empty");
    const int n_ctx = eng.params().n_ctx, n_ubatch = eng.params().n_ubatch;
    if ((int)prompt.size() + k_max + 1 > n_ctx)
        fail("--cost-curve %d: the first prompt (%zu tokens) plus %d rows does not fit the context of %d (raise -c)",
             k_max, prompt.size(), k_max + 1, n_ctx);
    if (k_max + 1 > n_ubatch)
        fail("--cost-curve %d: %d rows exceed the micro-batch of %d (raise -ub)", k_max, k_max + 1, n_ubatch);
    eng.memory().clear_all();
    Batch b;
    DecodeOutput out;
    const int32_t pos = (int32_t)prompt.size();
    for (size_t i = 0; i < prompt.size(); i += 512) {  // prefill (chunked like a default -b)
        b.clear();
        const size_t end = std::min(prompt.size(), i + 512);
        for (size_t j = i; j < end; j++) b.add(prompt[j], (int32_t)j, 0, j + 1 == prompt.size());
        eng.decode(b, out);
    }
    std::vector<std::vector<double>> ms(k_max + 1), cpu(k_max + 1);
    for (int rep = 0; rep < reps + 1; rep++) {  // repetition 0 warms caches and is dropped
        for (int k = 0; k <= k_max; k++) {
            b.clear();
            for (int i = 0; i <= k; i++) b.add(prompt[(size_t)i % prompt.size()], pos + i, 0, true);
            for (int s = 0; s < kSteady; s++) {
                eng.decode(b, out);
                eng.memory().cut(0, pos);
            }
            const double t0 = time_ms(), c0 = process_cpu_ms();
            eng.decode(b, out);
            const double dt = time_ms() - t0, dc = process_cpu_ms() - c0;
            eng.memory().cut(0, pos);
            if (rep > 0) {
                ms[k].push_back(dt);
                cpu[k].push_back(dc);
            }
        }
    }
    std::vector<VerifyCost> curve;
    for (int k = 0; k <= k_max; k++) curve.push_back({k, median_of(ms[k]), median_of(cpu[k])});
    eng.memory().clear_all();
    return curve;
}

void print_verify_cost(FILE* f, const std::vector<VerifyCost>& curve, size_t prompt_tokens, int reps) {
    fprintf(f, "verify cost curve: one decode of 1 + k rows after a %zu-token prompt, median of %d\n\n", prompt_tokens,
            reps);
    fprintf(f,
            "ratio = decode time / one-row decode time = tokens per decode needed to break even\n\n"
            "| k (draft rows) | wall ms | ratio | CPU ms (all threads) | CPU ratio |\n"
            "| ---: | ---: | ---: | ---: | ---: |\n");
    const double base = curve.empty() ? 0 : curve[0].ms, cbase = curve.empty() ? 0 : curve[0].cpu_ms;
    for (const VerifyCost& c : curve)
        fprintf(f, "| %d | %.2f | %.2f | %.2f | %.2f |\n", c.k, c.ms, base > 0 ? c.ms / base : 0.0, c.cpu_ms,
                cbase > 0 ? c.cpu_ms / cbase : 0.0);
    fprintf(f, "\n");
}

}  // namespace bee
