// tests/unit/quant/test_quant_dot: scalar reference vec_dot of every weight type with its vec_dot_type.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "quant/blocks.h"
#include "quant_test_util.h"

namespace bee {
namespace {

using test::dequantize;
using test::dot_double;
using test::gaussian;
using test::quantize;
using test::sum_abs_products;

const GgmlType kWeightTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0, GgmlType::Q4_1,
                                 GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q2_K, GgmlType::Q3_K,
                                 GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

struct DotCase {
    std::vector<float> w, a;    // float weights and activations
    std::vector<float> wd, ad;  // dequantized weights and activations
    double s_correction = 0;    // Q8_1 only: sum over blocks of m * (s - sum of dequantized a)
    float result = 0;           // vec_dot on the quantized rows
};

// The _1 types apply their min through Q8_1's s = fp16(d * sum q), which is not exactly the sum of
// the dequantized activations; vec_dot is exact with respect to s, so the tight check adds this.
double q8_1_s_correction(const std::vector<uint8_t>& wq, const std::vector<uint8_t>& aq, const std::vector<float>& ad,
                         size_t weight_block_bytes) {
    double corr = 0;
    const BlockQ8_1* ab = (const BlockQ8_1*)aq.data();
    for (size_t b = 0; b < ad.size() / QK8_1; ++b) {
        fp16_t m;  // Q4_1 and Q5_1 both keep m at byte 2
        memcpy(&m, wq.data() + b * weight_block_bytes + 2, 2);
        double sum_a = 0;
        for (int j = 0; j < QK8_1; ++j) sum_a += ad[b * QK8_1 + j];
        corr += (double)fp16_to_fp32(m) * ((double)fp16_to_fp32(ab[b].s) - sum_a);
    }
    return corr;
}

DotCase run_dot(GgmlType t, size_t n, uint32_t seed) {
    DotCase c;
    c.w = gaussian(n, seed);
    c.a = gaussian(n, seed + 1000, 2.0f);
    const QuantTraits* tr = quant_traits(t);
    const std::vector<uint8_t> wq = quantize(t, c.w);
    const std::vector<uint8_t> aq = quantize(tr->vec_dot_type, c.a);
    c.wd = dequantize(t, wq, n);
    c.ad = dequantize(tr->vec_dot_type, aq, n);
    if (tr->vec_dot_type == GgmlType::Q8_1)
        c.s_correction = q8_1_s_correction(wq, aq, c.ad, ggml_type_info(t).type_size);
    tr->vec_dot((int64_t)n, wq.data(), aq.data(), &c.result);
    return c;
}

// Against the double-precision dot of exactly what vec_dot sees (dequantized weights and
// activations, and Q8_1's stored s): only the float combination per block may differ, so the bound
// is tight — 1e-7 of sum |w_i a_i| (measured <= 3e-8: float rounding of the per-block terms).
TEST(QuantDot, MatchesDequantizedDotTightly) {
    const size_t n = 16 * QK_K;
    for (GgmlType t : kWeightTypes) {
        double worst = 0;
        for (uint32_t seed : {1u, 2u, 3u}) {
            const DotCase c = run_dot(t, n, seed);
            const double ref = dot_double(c.wd, c.ad) + c.s_correction;
            const double scale = sum_abs_products(c.wd, c.ad);
            EXPECT_NEAR(c.result, ref, 1e-7 * scale) << ggml_type_name(t) << " seed " << seed;
            worst = std::max(worst, std::fabs(c.result - ref) / scale);
        }
        std::printf("  %-5s |dot - exact| / sum|w a| = %.1e (bound 1e-7)\n", ggml_type_name(t), worst);
    }
}

// Against the float activation: adds the activation quantization error. Bound: 1e-3 of
// sum |w_i a_i| for 8-bit activations (measured <= 2e-4), 1e-8 where activations stay F32.
TEST(QuantDot, MatchesFloatActivationLoosely) {
    const size_t n = 16 * QK_K;
    for (GgmlType t : kWeightTypes) {
        const DotCase c = run_dot(t, n, 7);
        const double ref = dot_double(c.wd, c.a);
        const double scale = sum_abs_products(c.wd, c.a);
        const bool f32_act = quant_traits(t)->vec_dot_type == GgmlType::F32;
        EXPECT_NEAR(c.result, ref, (f32_act ? 1e-8 : 1e-3) * scale) << ggml_type_name(t);
        std::printf("  %-5s |dot - float-activation dot| / sum|w a| = %.1e (bound %.0e)\n", ggml_type_name(t),
                    std::fabs(c.result - ref) / scale, f32_act ? 1e-8 : 1e-3);
    }
}

// The F16/BF16 dots keep the activation in F32: a value that F16 cannot hold still counts exactly.
TEST(QuantDot, HalfWeightsUseFloatActivations) {
    std::vector<float> w(32, 0.0f), a(32, 0.0f);
    w[3] = 1.0f;
    a[3] = 1.0f + 1.0f / 4096;  // not representable in fp16 or bf16
    for (GgmlType t : {GgmlType::F16, GgmlType::BF16}) {
        const std::vector<uint8_t> wq = quantize(t, w);
        float r = 0;
        quant_traits(t)->vec_dot(32, wq.data(), a.data(), &r);
        EXPECT_EQ(r, a[3]) << ggml_type_name(t);
    }
}

TEST(QuantDot, ZeroActivationsGiveZero) {
    const size_t n = 2 * QK_K;
    const std::vector<float> w = gaussian(n, 3), a(n, 0.0f);
    for (GgmlType t : kWeightTypes) {
        const QuantTraits* tr = quant_traits(t);
        const std::vector<uint8_t> wq = quantize(t, w), aq = quantize(tr->vec_dot_type, a);
        float r = 1;
        tr->vec_dot((int64_t)n, wq.data(), aq.data(), &r);
        EXPECT_EQ(r, 0.0f) << ggml_type_name(t);
    }
}

// Block order and block-local integer sums: the dot of a row equals the float sum, in order, of
// the per-block dots (what a kernel that splits rows by whole blocks must reproduce).
TEST(QuantDot, RowDotIsOrderedSumOfBlockDots) {
    const size_t n = 8 * QK_K;
    for (GgmlType t : kWeightTypes) {
        const QuantTraits* tr = quant_traits(t);
        if (tr->vec_dot_type == GgmlType::F32) continue;  // the float dots accumulate in double
        const std::vector<float> w = gaussian(n, 5), a = gaussian(n, 6);
        const std::vector<uint8_t> wq = quantize(t, w), aq = quantize(tr->vec_dot_type, a);
        const GgmlTypeInfo wi = ggml_type_info(t), ai = ggml_type_info(tr->vec_dot_type);
        float sum = 0;
        for (size_t b = 0; b < n / (size_t)wi.block_size; ++b) {
            float part = 0;
            tr->vec_dot(wi.block_size, wq.data() + b * wi.type_size, aq.data() + b * ai.type_size, &part);
            sum += part;
        }
        float whole = 0;
        tr->vec_dot((int64_t)n, wq.data(), aq.data(), &whole);
        EXPECT_EQ(whole, sum) << ggml_type_name(t);
    }
}

}  // namespace
}  // namespace bee
