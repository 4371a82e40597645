// tests/unit/quant/test_quant_roundtrip: reference quantizers — error bounds, zero/constant blocks,
// activation-type rounding and bsums, quantize_matrix.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "base/fp16.h"
#include "quant/blocks.h"
#include "quant_test_util.h"

namespace bee {
namespace {

using test::dequantize;
using test::gaussian;
using test::quantize;
using test::relative_rms_error;

// Relative RMS error bound per type on N(0, 1) data, 64 K-blocks (16384 values). The bounds sit
// ~15% above the measured error (printed by the test), so a real regression in a quantizer fails.
struct RmsBound {
    GgmlType type;
    double max_rel_rms;
};
const RmsBound kRmsBounds[] = {
    // measured: f32 0, f16 2.07e-4, bf16 1.67e-3, q8_0/q8_1 5.38e-3, q8_k 7.00e-3, q6_k 1.78e-2,
    // q5_0 4.27e-2, q5_1 3.77e-2, q5_k 3.61e-2, q4_0 8.69e-2, q4_1 7.78e-2, q4_k 7.08e-2,
    // q3_k 1.50e-1, q2_k 2.93e-1
    {GgmlType::F32, 0.0},      {GgmlType::F16, 2.4e-4},   {GgmlType::BF16, 1.9e-3},  {GgmlType::Q8_0, 6.2e-3},
    {GgmlType::Q8_1, 6.2e-3},  {GgmlType::Q8_K, 8.0e-3},  {GgmlType::Q6_K, 2.05e-2}, {GgmlType::Q5_0, 4.9e-2},
    {GgmlType::Q5_1, 4.35e-2}, {GgmlType::Q5_K, 4.15e-2}, {GgmlType::Q4_0, 1.0e-1},  {GgmlType::Q4_1, 8.9e-2},
    {GgmlType::Q4_K, 8.15e-2}, {GgmlType::Q3_K, 1.72e-1}, {GgmlType::Q2_K, 3.37e-1},
};

TEST(QuantRoundTrip, GaussianRmsErrorWithinBound) {
    const std::vector<float> x = gaussian(64 * QK_K, 1234);
    for (const RmsBound& b : kRmsBounds) {
        const std::vector<float> y = dequantize(b.type, quantize(b.type, x), x.size());
        const double err = relative_rms_error(x, y);
        std::printf("  %-5s relative RMS error %.3e (bound %.2e)\n", ggml_type_name(b.type), err, b.max_rel_rms);
        EXPECT_LE(err, b.max_rel_rms) << ggml_type_name(b.type);
    }
}

// The K-quant searches must not be worse on scaled or shifted data than the plain legacy types of
// the same bit width (a broken search usually shows up here first).
TEST(QuantRoundTrip, KQuantsBeatLegacyOnShiftedData) {
    std::vector<float> x = gaussian(64 * QK_K, 99, 0.02f);
    for (size_t i = 0; i < x.size(); ++i) x[i] += 0.01f * (float)((i / 32) % 5);
    auto err = [&](GgmlType t) { return relative_rms_error(x, dequantize(t, quantize(t, x), x.size())); };
    EXPECT_LT(err(GgmlType::Q4_K), err(GgmlType::Q4_0));
    EXPECT_LT(err(GgmlType::Q5_K), err(GgmlType::Q5_0));
    EXPECT_LT(err(GgmlType::Q6_K), err(GgmlType::Q5_1));
}

TEST(QuantRoundTrip, AllZeroBlocksStayZero) {
    const std::vector<float> x(2 * QK_K, 0.0f);
    for (const RmsBound& b : kRmsBounds) {
        const std::vector<float> y = dequantize(b.type, quantize(b.type, x), x.size());
        for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], 0.0f) << ggml_type_name(b.type) << " at " << i;
    }
}

// A constant block comes back as the constant up to the fp16 rounding of the scale(s) and the
// 6-bit (Q4_K/Q5_K) or 4-bit (Q2_K) rounding of the sub-block scale against the largest.
TEST(QuantRoundTrip, ConstantBlocks) {
    // (values large enough that the fp16 super-block scales stay normal numbers)
    for (float c : {0.75f, -3.0f, 0.4f, 250.0f}) {
        const std::vector<float> x(2 * QK_K, c);
        for (const RmsBound& b : kRmsBounds) {
            const std::vector<float> y = dequantize(b.type, quantize(b.type, x), x.size());
            for (size_t i = 0; i < y.size(); ++i)
                ASSERT_NEAR(y[i], c, std::fabs(c) * 2e-3) << ggml_type_name(b.type) << " c=" << c << " at " << i;
        }
    }
}

TEST(QuantRoundTrip, QuantizerIsDeterministicAndRowLocal) {
    const std::vector<float> x = gaussian(4 * QK_K, 7);
    for (const RmsBound& b : kRmsBounds) {
        const std::vector<uint8_t> whole = quantize(b.type, x);
        EXPECT_EQ(whole, quantize(b.type, x)) << ggml_type_name(b.type);
        // quantizing the second half alone gives the second half of the bytes
        const std::vector<float> half(x.begin() + 2 * QK_K, x.end());
        const std::vector<uint8_t> q = quantize(b.type, half);
        EXPECT_TRUE(std::equal(q.begin(), q.end(), whole.begin() + (long)(whole.size() / 2))) << ggml_type_name(b.type);
    }
}

// NaN, inf and huge values must not crash or reach undefined behaviour (the sanitizer build checks
// that), and they stay inside their block: the finite blocks around them quantize as if alone.
TEST(QuantRoundTrip, NonFiniteValuesStayInTheirBlock) {
    std::vector<float> x = gaussian(3 * QK_K, 17);
    const float specials[] = {NAN, INFINITY, -INFINITY, 3e38f, -3e38f, 1e-45f};
    for (int i = 0; i < QK_K; i += 7) x[(size_t)(QK_K + i)] = specials[(i / 7) % 6];
    for (const RmsBound& b : kRmsBounds) {
        const std::vector<uint8_t> q = quantize(b.type, x);
        (void)dequantize(b.type, q, x.size());
        const std::vector<float> first(x.begin(), x.begin() + QK_K), last(x.end() - QK_K, x.end());
        const std::vector<uint8_t> q_first = quantize(b.type, first), q_last = quantize(b.type, last);
        EXPECT_TRUE(std::equal(q_first.begin(), q_first.end(), q.begin())) << ggml_type_name(b.type);
        EXPECT_TRUE(std::equal(q_last.begin(), q_last.end(), q.end() - (long)q_last.size())) << ggml_type_name(b.type);
    }
}

TEST(QuantActivations, Q8_0RoundsHalfAwayFromZero) {
    std::vector<float> x(QK8_0, 0.0f);
    x[0] = 127.0f;  // d = 1 exactly
    x[1] = 2.5f;
    x[2] = -2.5f;
    x[3] = 3.5f;
    x[4] = 0.49f;
    const std::vector<uint8_t> q = quantize(GgmlType::Q8_0, x);
    const BlockQ8_0* b = (const BlockQ8_0*)q.data();
    EXPECT_EQ(fp16_to_fp32(b->d), 1.0f);
    EXPECT_EQ(b->qs[0], 127);
    EXPECT_EQ(b->qs[1], 3);
    EXPECT_EQ(b->qs[2], -3);
    EXPECT_EQ(b->qs[3], 4);
    EXPECT_EQ(b->qs[4], 0);
}

TEST(QuantActivations, Q8_1SumField) {
    const std::vector<float> x = gaussian(8 * QK8_1, 5);
    const std::vector<uint8_t> q = quantize(GgmlType::Q8_1, x);
    const BlockQ8_1* b = (const BlockQ8_1*)q.data();
    for (int i = 0; i < 8; ++i) {
        int sum = 0;
        float amax = 0;
        for (int j = 0; j < QK8_1; ++j) {
            sum += b[i].qs[j];
            amax = std::max(amax, std::fabs(x[(size_t)(i * QK8_1 + j)]));
        }
        // s uses the float d before its fp16 rounding, as ggml does
        EXPECT_EQ(b[i].s, fp32_to_fp16((float)sum * (amax / 127))) << i;
    }
    // Q8_1 quants are the Q8_0 quants
    const std::vector<uint8_t> q0 = quantize(GgmlType::Q8_0, x);
    const BlockQ8_0* b0 = (const BlockQ8_0*)q0.data();
    for (int i = 0; i < 8; ++i) EXPECT_EQ(memcmp(b[i].qs, b0[i].qs, QK8_0), 0) << i;
}

TEST(QuantActivations, Q8_KRoundsToEvenAndMapsMaxTo127) {
    std::vector<float> x(QK_K, 0.0f);
    x[0] = -127.0f;  // the largest magnitude is negative: iscale = 1, d = 1
    x[1] = 2.5f;
    x[2] = 3.5f;
    x[3] = -2.5f;
    x[4] = 126.6f;
    const std::vector<uint8_t> q = quantize(GgmlType::Q8_K, x);
    const BlockQ8_K* b = (const BlockQ8_K*)q.data();
    EXPECT_EQ(b->d, 1.0f);  // q = -127 * x / max, d = 1 / iscale
    EXPECT_EQ(b->qs[0], -127);
    EXPECT_EQ(b->qs[1], 2);  // ties go to even (ggml's nearest_int), unlike Q8_0's roundf
    EXPECT_EQ(b->qs[2], 4);
    EXPECT_EQ(b->qs[3], -2);
    EXPECT_EQ(b->qs[4], 127);
    // a positive largest value flips the sign of d and of the quants
    x[0] = 127.0f;
    const std::vector<uint8_t> q2 = quantize(GgmlType::Q8_K, x);
    const BlockQ8_K* b2 = (const BlockQ8_K*)q2.data();
    EXPECT_EQ(b2->d, -1.0f);
    EXPECT_EQ(b2->qs[0], -127);
    EXPECT_EQ(b2->qs[1], -2);
}

TEST(QuantActivations, Q8_KBsums) {
    const std::vector<float> x = gaussian(16 * QK_K, 11, 3.0f);
    const std::vector<uint8_t> q = quantize(GgmlType::Q8_K, x);
    const BlockQ8_K* b = (const BlockQ8_K*)q.data();
    for (int i = 0; i < 16; ++i) {
        int amax = 0;
        for (int g = 0; g < QK_K / 16; ++g) {
            int sum = 0;
            for (int l = 0; l < 16; ++l) {
                sum += b[i].qs[16 * g + l];
                amax = std::max(amax, std::abs((int)b[i].qs[16 * g + l]));
            }
            EXPECT_EQ(b[i].bsums[g], sum) << "block " << i << " group " << g;
        }
        EXPECT_EQ(amax, 127) << i;
    }
    const std::vector<uint8_t> z = quantize(GgmlType::Q8_K, std::vector<float>(QK_K, 0.0f));
    const BlockQ8_K* bz = (const BlockQ8_K*)z.data();
    EXPECT_EQ(bz->d, 0.0f);
    for (int g = 0; g < QK_K / 16; ++g) EXPECT_EQ(bz->bsums[g], 0);
}

TEST(QuantMatrix, RowsAreQuantizedIndependently) {
    const int64_t rows = 3, cols = 2 * QK_K;
    const std::vector<float> x = gaussian((size_t)(rows * cols), 21);
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::F16}) {
        std::vector<uint8_t> m(ggml_row_size(t, cols) * rows);
        quantize_matrix(t, x.data(), m.data(), rows, cols);
        EXPECT_EQ(m, quantize(t, x)) << ggml_type_name(t);
    }
}

TEST(QuantMatrix, RejectsBadShapesAndTypes) {
    std::vector<float> x(64, 1.0f);
    std::vector<uint8_t> out(1024);
    EXPECT_THROW(quantize_matrix(GgmlType::Q4_K, x.data(), out.data(), 1, 64), Error);
    EXPECT_THROW(quantize_matrix(GgmlType::Q4_0, x.data(), out.data(), 1, 48), Error);
    EXPECT_THROW(quantize_matrix(GgmlType::IQ4_NL, x.data(), out.data(), 1, 32), Error);
    EXPECT_NO_THROW(quantize_matrix(GgmlType::Q4_0, x.data(), out.data(), 2, 32));
}

}  // namespace
}  // namespace bee
