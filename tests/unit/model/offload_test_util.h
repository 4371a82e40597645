// tests/unit/model/offload_test_util: what the -ngl / -ot / -nkvo tests share: engine parameters with a
// device, the skip-or-fail rule, and the comparison of device logits with the CPU's.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "engine_test_util.h"

namespace bee::test {

inline EngineParams offload_params(int ngl, int n_seq_max = 1, int n_ctx = 128) {
    EngineParams p = engine_params(1, 512, n_seq_max, GgmlType::F16, n_ctx);
    p.offload.n_gpu_layers = ngl;
    const char* dev = getenv("BEE_GPU_DEVICE");
    p.offload.device = dev ? dev : "0";  // by index: without --device a CPU implementation (llvmpipe) is skipped
    return p;
}

// An engine with `ngl` layers offloaded, or nullptr (the test skips) when no device opens.
inline std::unique_ptr<Engine> device_engine(const Model& m, const EngineParams& p) {
    auto eng = std::make_unique<Engine>(m, p);
    if (!eng->offload()) return nullptr;
    return eng;
}
// Skips, saying why — or fails under BEE_REQUIRE_GPU=1, which `make test` sets (it installs Mesa's software
// driver and the models, so a missing device or model there is a broken install).
#define OFFLOAD_SKIP_OR_FAIL(why)                                                      \
    do {                                                                               \
        if (getenv("BEE_REQUIRE_GPU")) FAIL() << "BEE_REQUIRE_GPU is set but " << why; \
        GTEST_SKIP() << why;                                                           \
    } while (0)
#define DEVICE_ENGINE_OR_SKIP(var, model, params)               \
    std::unique_ptr<Engine> var = device_engine(model, params); \
    if (!var) OFFLOAD_SKIP_OR_FAIL("no Vulkan device (or no Vulkan in this build)");

// Largest |a - b| over the largest |b|, and whether every row's greedy token agrees where the CPU's top two
// are further apart than twice the largest difference (near-ties may flip).
struct Compare {
    double rel = 0;
    int greedy_mismatch = 0, near_ties = 0;
};
inline Compare compare_logits(const std::vector<float>& dev, const std::vector<float>& cpu, int nv) {
    Compare c;
    double max_diff = 0, max_abs = 0;
    for (size_t i = 0; i < cpu.size(); i++) {
        max_diff = std::max(max_diff, (double)std::fabs(dev[i] - cpu[i]));
        max_abs = std::max(max_abs, (double)std::fabs(cpu[i]));
    }
    c.rel = max_diff / std::max(max_abs, 1e-30);
    for (size_t r = 0; r < cpu.size() / (size_t)nv; r++) {
        const float* a = &dev[r * nv];
        const float* b = &cpu[r * nv];
        const int ta = (int)(std::max_element(a, a + nv) - a), tb = (int)(std::max_element(b, b + nv) - b);
        float second = -INFINITY;
        for (int v = 0; v < nv; v++)
            if (v != tb) second = std::max(second, b[v]);
        if (b[tb] - second <= 2 * max_diff) c.near_ties++;
        else if (ta != tb) c.greedy_mismatch++;
    }
    return c;
}

// The tolerance of a weight type: the CPU quantizes activations to 8 bits for quantized weights, the device
// keeps them in f32.
inline double tolerance(GgmlType t) { return t == GgmlType::F32 ? 2e-4 : 3e-2; }

// The sequence-memory script the offload tests run on the CPU and on a device: decode 10 tokens, save,
// clear, load, drop positions 2 and 3 (the rest moves down, K re-rotated), decode the rest token by token.
inline std::vector<float> seq_memory_script(Engine& eng, const std::vector<int32_t>& toks) {
    std::vector<float> logits = decode_chunks(eng, std::vector<int32_t>(toks.begin(), toks.begin() + 10), 0, 0, 10);
    const SeqState st = eng.memory().save(0);
    eng.memory().clear(0);
    EXPECT_TRUE(eng.memory().load(0, st));
    eng.memory().move_down(0, 2, 4, 10);
    std::vector<float> more = decode_chunks(eng, std::vector<int32_t>(toks.begin() + 10, toks.end()), 8, 0, 1);
    logits.insert(logits.end(), more.begin(), more.end());
    return logits;
}

// One prefill of `toks` capturing the input of layers 0..3 (3: the final hidden state), logits of the last.
inline DecodeOutput decode_capturing(Engine& eng, const std::vector<int32_t>& toks) {
    Batch b;
    for (size_t i = 0; i < toks.size(); i++) b.add(toks[i], (int32_t)i, 0, i + 1 == toks.size());
    b.capture_layers = {0, 1, 2, 3};
    DecodeOutput out;
    eng.decode(b, out);
    return out;
}

}  // namespace bee::test
