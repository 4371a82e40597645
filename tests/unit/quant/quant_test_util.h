// tests/unit/quant/quant_test_util: seeded data, row helpers and error measures shared by the quant tests.
#pragma once
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gguf/ggml_type.h"
#include "quant/quant.h"

namespace bee::test {

// n standard Gaussian floats from a fixed seed (Box-Muller over mt19937, so the same on every
// standard library), scaled by `sigma`.
inline std::vector<float> gaussian(size_t n, uint32_t seed, float sigma = 1.0f) {
    std::mt19937 rng(seed);
    auto uniform = [&] { return ((double)rng() + 0.5) / 4294967296.0; };
    std::vector<float> v(n);
    for (size_t i = 0; i < n; i += 2) {
        const double r = std::sqrt(-2.0 * std::log(uniform())), t = 6.283185307179586 * uniform();
        v[i] = (float)(r * std::cos(t)) * sigma;
        if (i + 1 < n) v[i + 1] = (float)(r * std::sin(t)) * sigma;
    }
    return v;
}

// Quantizes n floats to type t with the reference quantizer.
inline std::vector<uint8_t> quantize(GgmlType t, const std::vector<float>& x) {
    std::vector<uint8_t> q(ggml_row_size(t, (int64_t)x.size()));
    quant_traits(t)->quantize_row(x.data(), q.data(), (int64_t)x.size());
    return q;
}

// Dequantizes n values of type t.
inline std::vector<float> dequantize(GgmlType t, const std::vector<uint8_t>& q, size_t n) {
    std::vector<float> x(n);
    quant_traits(t)->dequantize_row(q.data(), x.data(), (int64_t)n);
    return x;
}

// RMS of (a - b) divided by the RMS of a.
inline double relative_rms_error(const std::vector<float>& a, const std::vector<float>& b) {
    double num = 0, den = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)a[i] * a[i];
    }
    return std::sqrt(num / den);
}

inline double dot_double(const std::vector<float>& a, const std::vector<float>& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += (double)a[i] * b[i];
    return s;
}

inline double sum_abs_products(const std::vector<float>& a, const std::vector<float>& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += std::fabs((double)a[i] * b[i]);
    return s;
}

}  // namespace bee::test
