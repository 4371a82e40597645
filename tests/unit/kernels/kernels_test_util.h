// tests/unit/kernels/kernels_test_util: shared helpers of the kernels tests: seeded random data, ISA loops.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "base/cpu.h"
#include "../common/isa.h"

namespace bee::test {

// n uniform floats in [lo, hi) from a fixed seed.
inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

}  // namespace bee::test
