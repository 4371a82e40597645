// tests/unit/model/engine_test_util: helpers shared by the engine tests (decode loops, exact and close compares).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "base/cpu.h"
#include "model/engine.h"
#include "../common/isa.h"

namespace bee::test {

// Decodes tokens[i] at pos0 + i of sequence `seq` in batches of `chunk` rows (every row wants logits);
// returns (n, n_vocab) logits in row order.
inline std::vector<float> decode_chunks(Engine& eng, const std::vector<int32_t>& tokens, int32_t pos0, int seq,
                                        int chunk) {
    std::vector<float> all;
    Batch b;
    DecodeOutput out;
    for (size_t i0 = 0; i0 < tokens.size(); i0 += chunk) {
        b.clear();
        for (size_t i = i0; i < std::min(tokens.size(), i0 + chunk); i++)
            b.add(tokens[i], pos0 + (int32_t)i, seq, true);
        eng.decode(b, out);
        EXPECT_EQ(out.rows.size(), (size_t)b.size());
        all.insert(all.end(), out.logits.begin(), out.logits.end());
    }
    return all;
}

inline EngineParams engine_params(int n_threads, int n_ubatch = 512, int n_seq_max = 1,
                                  GgmlType kv_type = GgmlType::F16, int n_ctx = 128) {
    EngineParams p;
    p.n_ctx = n_ctx;
    p.n_ubatch = n_ubatch;
    p.n_threads = n_threads;
    p.n_seq_max = n_seq_max;
    p.type_k = kv_type;
    p.type_v = kv_type;
    return p;
}

// Bit-exact comparison of logits; names the first differing element.
inline ::testing::AssertionResult same_bits(const float* a, const float* b, size_t n) {
    if (memcmp(a, b, n * sizeof(float)) == 0) return ::testing::AssertionSuccess();
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof(float)) != 0)
            return ::testing::AssertionFailure()
                   << "first difference at element " << i << ": " << a[i] << " vs " << b[i] << " (diff "
                   << a[i] - b[i] << ")";
    return ::testing::AssertionFailure();
}
inline ::testing::AssertionResult same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size())
        return ::testing::AssertionFailure() << "sizes differ: " << a.size() << " vs " << b.size();
    return same_bits(a.data(), b.data(), a.size());
}

inline double max_abs(const std::vector<float>& v) {
    double m = 0;
    for (float x : v) m = std::max(m, (double)std::fabs(x));
    return m;
}
inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double m = 0;
    for (size_t i = 0; i < a.size(); i++) m = std::max(m, (double)std::fabs(a[i] - b[i]));
    return m;
}

}  // namespace bee::test
