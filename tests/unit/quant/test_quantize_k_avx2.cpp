// tests/unit/quant/test_quantize_k_avx2: the Q4_K / Q5_K quantizers give the same bytes on the AVX2 path
// (8 sub-block fits side by side, quant/quant_k_fit_avx2.cpp) as on the scalar path, for ordinary rows
// and for the corner cases of the fit (constant, zero, all-positive, tiny, huge, NaN and inf sub-blocks).
// The ggml golden fixtures (test_quant_fixtures) run on the default path, so both paths meet ggml.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "../common/isa.h"
#include "quant/quant.h"

namespace bee {
namespace {

// 64 super-blocks of 256 values; super-block b gets a different kind of content.
std::vector<float> tricky_rows(uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const int n = 64 * 256;
    std::vector<float> x(n);
    for (int b = 0; b < 64; ++b) {
        float* s = x.data() + 256 * b;
        const float scale = std::ldexp(1.0f, (b % 13) * 4 - 30);  // 2^-30 .. 2^18
        for (int i = 0; i < 256; ++i) s[i] = normal(rng) * scale;
        switch (b % 8) {
            case 1:
                for (int i = 0; i < 32; ++i) s[i] = 0.25f;
                break;  // one constant sub-block
            case 2:
                for (int i = 0; i < 256; ++i) s[i] = std::fabs(s[i]);
                break;  // no negative values
            case 3:
                for (int i = 64; i < 96; ++i) s[i] = 0.0f;
                break;  // one zero sub-block
            case 4:
                s[5] = std::numeric_limits<float>::quiet_NaN();
                s[200] = NAN;
                break;
            case 5: s[0] = NAN; break;  // NaN first in a sub-block
            case 6: s[77] = std::numeric_limits<float>::infinity(); break;
            case 7:
                for (int i = 0; i < 256; i += 17) s[i] *= 50.0f;
                break;  // outliers
            default: break;
        }
    }
    return x;
}

TEST(QuantizeKAvx2, SameBytesAsScalar) {
    if (cpu_isa_max() < Isa::avx2) GTEST_SKIP() << "no AVX2 on this CPU";
    for (GgmlType t : {GgmlType::Q4_K, GgmlType::Q5_K}) {
        for (uint32_t seed : {1u, 2u, 3u}) {
            const std::vector<float> x = tricky_rows(seed);
            const int64_t n = (int64_t)x.size();
            std::vector<uint8_t> scalar(ggml_row_size(t, n)), avx2(ggml_row_size(t, n));
            {
                test::IsaScope isa(Isa::scalar);
                quant_traits(t)->quantize_row(x.data(), scalar.data(), n);
            }
            {
                test::IsaScope isa(Isa::avx2);
                quant_traits(t)->quantize_row(x.data(), avx2.data(), n);
            }
            const size_t blk = ggml_type_info(t).type_size;
            for (size_t b = 0; b < scalar.size() / blk; ++b)
                ASSERT_EQ(0, memcmp(scalar.data() + b * blk, avx2.data() + b * blk, blk))
                    << ggml_type_name(t) << " seed " << seed << " super-block " << b;
        }
    }
}

}  // namespace
}  // namespace bee
