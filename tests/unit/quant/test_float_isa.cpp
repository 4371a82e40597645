// tests/unit/quant/test_float_isa: F16 rows (every f16 KV write and read) convert to the same bits on every
// ISA: round to nearest even at ties, subnormals, overflow to inf, signed zeros, NaNs, ragged tails.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "../common/isa.h"
#include "base/fp16.h"
#include "quant/quant.h"

namespace bee {
namespace {

std::vector<float> corner_values() {
    std::vector<float> x = {0.0f,
                            -0.0f,
                            1.0f,
                            -1.0f,
                            65504.0f,
                            65520.0f,
                            -65520.0f,
                            1e9f,
                            -1e9f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            -std::numeric_limits<float>::quiet_NaN(),
                            6e-8f,
                            3e-8f,
                            2.9e-8f,
                            -6e-5f,
                            1e-40f};
    for (uint32_t m = 0; m < 16; m++) {  // halfway between two f16 values: ties go to even
        uint32_t bits = 0x3F800000u | (m << 13) | 0x1000u;
        float f;
        memcpy(&f, &bits, 4);
        x.push_back(f);
        x.push_back(-f);
    }
    uint32_t nan_payload = 0x7F812345u;  // a signalling NaN with a payload
    float f;
    memcpy(&f, &nan_payload, 4);
    x.push_back(f);
    std::mt19937 rng(5);
    std::normal_distribution<float> nd;
    for (int i = 0; i < 200; i++) x.push_back(nd(rng) * (i % 3 == 0 ? 1e4f : i % 3 == 1 ? 1e-5f : 1.0f));
    return x;
}

TEST(FloatIsa, F16RowsAreBitIdenticalToScalar) {
    const QuantTraits* tr = quant_traits(GgmlType::F16);
    const std::vector<float> x = corner_values();
    for (int64_t n : {(int64_t)x.size(), (int64_t)x.size() - 3, (int64_t)7, (int64_t)1}) {
        std::vector<uint16_t> want(n), got(n);
        std::vector<float> back_want(n), back_got(n);
        {
            test::IsaScope scope(Isa::scalar);
            tr->quantize_row(x.data(), want.data(), n);
            tr->dequantize_row(want.data(), back_want.data(), n);
        }
        for (int64_t i = 0; i < n; i++) ASSERT_EQ(want[i], fp32_to_fp16(x[i])) << i;
        for (Isa isa : test::all_isas()) {
            test::IsaScope scope(isa);
            tr->quantize_row(x.data(), got.data(), n);
            tr->dequantize_row(got.data(), back_got.data(), n);
            for (int64_t i = 0; i < n; i++)
                ASSERT_EQ(got[i], want[i]) << "value " << x[i] << " at " << i << " " << isa_name(isa);
            ASSERT_EQ(0, memcmp(back_got.data(), back_want.data(), n * sizeof(float))) << isa_name(isa);
        }
    }
}

}  // namespace
}  // namespace bee
