// tests/unit/quant/test_turbo_isa: the vectorized turbo / TCQ encoders write exactly the bytes of the
// scalar encoder, on every ISA this CPU runs (random groups, near-ties, zeros, huge and tiny norms).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "../common/isa.h"
#include "quant/quant.h"
#include "quant/tcq.h"
#include "quant/turbo.h"

namespace bee {
namespace {

// Rows of 4 groups of 128 (or 8 of 64) that exercise the encoders' corners.
std::vector<std::vector<float>> test_rows() {
    std::mt19937 rng(7);
    std::normal_distribution<float> nd;
    std::vector<std::vector<float>> rows;
    for (int r = 0; r < 40; r++) {
        std::vector<float> x(512);
        for (float& e : x) e = nd(rng) * (r % 3 == 0 ? 30.0f : 1.0f);
        if (r % 5 == 1)  // heavy outliers, as in real K rows
            for (int i = 0; i < 512; i += 37) x[i] *= 20.0f;
        rows.push_back(x);
    }
    rows.push_back(std::vector<float>(512, 0.0f));
    rows.push_back(std::vector<float>(512, 1e-30f));
    std::vector<float> one_hot(512, 0.0f);  // after the rotation: all coordinates +/- 1/sqrt(g), full ties
    one_hot[0] = one_hot[128] = one_hot[256] = one_hot[384] = 1.0f;
    rows.push_back(one_hot);
    std::vector<float> ramp(512);
    for (int i = 0; i < 512; i++) ramp[i] = (float)(i % 16) - 7.5f;
    rows.push_back(ramp);
    return rows;
}

TEST(TurboIsa, EncodersAreByteIdenticalToScalar) {
    const GgmlType types[] = {GgmlType::TURBO2,    GgmlType::TURBO3,    GgmlType::TURBO4,     GgmlType::TURBO2_64,
                              GgmlType::TURBO3_64, GgmlType::TURBO4_64, GgmlType::TURBO2_TCQ, GgmlType::TURBO3_TCQ};
    const std::vector<std::vector<float>> rows = test_rows();
    for (GgmlType t : types) {
        const size_t bytes = ggml_row_size(t, 512);
        std::vector<std::vector<uint8_t>> want;
        {
            test::IsaScope scope(Isa::scalar);
            for (const auto& x : rows) {
                want.emplace_back(bytes);
                quant_traits(t)->quantize_row(x.data(), want.back().data(), 512);
            }
        }
        for (Isa isa : test::all_isas()) {
            test::IsaScope scope(isa);
            for (size_t r = 0; r < rows.size(); r++) {
                std::vector<uint8_t> got(bytes);
                quant_traits(t)->quantize_row(rows[r].data(), got.data(), 512);
                ASSERT_EQ(got, want[r]) << ggml_type_name(t) << " " << isa_name(isa) << " row " << r;
            }
        }
    }
}

// The forward pass alone, on rotated-domain inputs that sit exactly on codebook values (cost ties
// between paths) and on a constant input (every state of a tail ties).
TEST(TurboIsa, TcqTiesResolveLikeScalar) {
    for (int k : {2, 3}) {
        const float* cb = k == 3 ? kTcqCodebook3 : kTcqCodebook2;
        std::vector<std::vector<float>> inputs;
        std::vector<float> y(kTcqGroup);
        for (int t = 0; t < kTcqGroup; t++) y[t] = cb[(t * 37) % (1 << (6 + k))];
        inputs.push_back(y);
        inputs.push_back(std::vector<float>(kTcqGroup, 0.05f));
        inputs.push_back(std::vector<float>(kTcqGroup, 0.0f));
        const int n_bytes = (6 + kTcqGroup * k + 7) / 8;
        for (const auto& in : inputs) {
            std::vector<uint8_t> want(n_bytes);
            float want_r2;
            {
                test::IsaScope scope(Isa::scalar);
                want_r2 = tcq_encode(in.data(), k, cb, want.data());
            }
            for (Isa isa : test::all_isas()) {
                test::IsaScope scope(isa);
                std::vector<uint8_t> got(n_bytes);
                EXPECT_EQ(tcq_encode(in.data(), k, cb, got.data()), want_r2);
                EXPECT_EQ(got, want) << "k=" << k << " " << isa_name(isa);
            }
        }
    }
}

// The rotation (also used by the attention kernels on queries and outputs) gives the same bits on
// every ISA, forward and inverse, for both group sizes.
TEST(TurboIsa, RotationIsBitIdenticalToScalar) {
    std::mt19937 rng(3);
    std::normal_distribution<float> nd;
    for (int g : {64, 128})
        for (int r = 0; r < 50; r++) {
            std::vector<float> x(g);
            for (float& e : x) e = nd(rng) * (r % 2 ? 100.0f : 0.01f);
            std::vector<float> want_f = x, want_i = x;
            {
                test::IsaScope scope(Isa::scalar);
                turbo_rotate(want_f.data(), g);
                turbo_unrotate(want_i.data(), g);
            }
            for (Isa isa : test::all_isas()) {
                test::IsaScope scope(isa);
                std::vector<float> f = x, i = x;
                turbo_rotate(f.data(), g);
                turbo_unrotate(i.data(), g);
                ASSERT_EQ(0, memcmp(f.data(), want_f.data(), g * sizeof(float))) << g << " " << isa_name(isa);
                ASSERT_EQ(0, memcmp(i.data(), want_i.data(), g * sizeof(float))) << g << " " << isa_name(isa);
            }
        }
}

}  // namespace
}  // namespace bee
