// tests/unit/quant/test_turbo: the TurboQuant and TCQ KV types against specs/kv-turboquant.md: sign
// tables, the rotation, bit-exact block layouts (known input -> known bytes), the trellis stream,
// distortion of unit vectors (spec §10), and serialization through GGUF (type ids 42-46).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/fp16.h"
#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "quant/tcq.h"
#include "quant/turbo.h"

namespace bee {
namespace {

// Spec §2, verbatim: index 0 is the leftmost character, '-' means -1.
const char* const kS1 =
    "-++--+-+--+++++++-+-+--+++-++----++-++-+-++--+-++++-----+-++++-+--+---+---+---+++--+++--++-++-+--++-+-+-++++-+-++-"
    "++-----++-++-+";
const char* const kS2 =
    "++++-++-+---+---++--+-+-+--+-+++++---+------+++-+-+++--+------+++-+----+-+-+--++-+-++-+----+--+-+-+++--+-+-++--+-+"
    "-++-+-+-----+-";

TEST(Turbo, SignTablesMatchSpec) {
    ASSERT_EQ(strlen(kS1), 128u);
    ASSERT_EQ(strlen(kS2), 128u);
    for (int i = 0; i < 128; i++) {
        EXPECT_EQ(turbo_sign(1, i), kS1[i] == '-' ? -1.0f : 1.0f) << "s1 " << i;
        EXPECT_EQ(turbo_sign(2, i), kS2[i] == '-' ? -1.0f : 1.0f) << "s2 " << i;
    }
}

// Forward rotation of e0 is s1[0] * s2 / sqrt(g) (column 0 of H is all ones); the inverse of e0 is
// s2[0] * s1 / sqrt(g). Rotation then inverse is the identity and keeps dot products.
TEST(Turbo, RotationIsTheSpecsOrthogonalTransform) {
    for (int g : {64, 128}) {
        std::vector<float> e(g, 0.0f);
        e[0] = 1.0f;
        turbo_rotate(e.data(), g);
        for (int i = 0; i < g; i++) EXPECT_FLOAT_EQ(e[i], turbo_sign(1, 0) * turbo_sign(2, i) / std::sqrt((float)g));
        std::fill(e.begin(), e.end(), 0.0f);
        e[0] = 1.0f;
        turbo_unrotate(e.data(), g);
        for (int i = 0; i < g; i++) EXPECT_FLOAT_EQ(e[i], turbo_sign(2, 0) * turbo_sign(1, i) / std::sqrt((float)g));
        std::mt19937 rng(g);
        std::normal_distribution<float> nd;
        std::vector<float> a(g), b(g);
        for (int i = 0; i < g; i++) a[i] = nd(rng), b[i] = nd(rng);
        std::vector<float> ra(a), rb(b);
        turbo_rotate(ra.data(), g);
        turbo_rotate(rb.data(), g);
        double d0 = 0, d1 = 0;
        for (int i = 0; i < g; i++) d0 += a[i] * b[i], d1 += ra[i] * rb[i];
        EXPECT_NEAR(d0, d1, 1e-4);
        turbo_unrotate(ra.data(), g);
        for (int i = 0; i < g; i++) EXPECT_NEAR(ra[i], a[i], 1e-5);
    }
}

std::vector<uint8_t> encode(GgmlType t, const std::vector<float>& x) {
    std::vector<uint8_t> out(ggml_row_size(t, (int64_t)x.size()));
    quant_traits(t)->quantize_row(x.data(), out.data(), (int64_t)x.size());
    return out;
}

std::string hex(const uint8_t* p, size_t n) {
    std::string s;
    char b[4];
    for (size_t i = 0; i < n; i++) snprintf(b, sizeof b, "%02x", p[i]), s += b;
    return s;
}

std::string rep(const std::string& unit, int n) {
    std::string s;
    for (int i = 0; i < n; i++) s += unit;
    return s;
}

// Known input -> known bytes (spec §3.1, §4). The input is the inverse rotation of y_j = ±1/√g
// (minus where j % 3 == 0), a unit vector whose rotated coordinates all sit 1/√g from zero: for 128
// values 0.0884 lies above the 2-bit midpoint 0.0867 (index 3 / 0), between the 3-bit centroids
// 0.0657 and 0.1178 (index 5 / 2) and the 4-bit 0.0833 and 0.1111 (index 11 / 4); the 64 group scales
// both sides by √2. The norm is 1 / (√g · c) in fp16. Expected bytes were worked out by hand from the
// spec's packing rules (a short numpy script, not Bee's code).
TEST(Turbo, BlockLayoutBitExact) {
    struct Case {
        GgmlType t;
        const char* hex;
    };
    const std::string t2 = "4c39" + rep("3ccff3", 10) + "3ccf";
    const std::string t3 = "613d" + rep("966559", 10) + "9665" + rep("b66ddb", 5) + "b6";
    const std::string t4 = "3e3c" + rep("b44bbb", 21) + "b4";
    const std::string t3_64 = "613d" + rep("966559", 5) + "96" + "b66ddbb66ddbb66d";
    const Case cases[] = {{GgmlType::TURBO2, t2.c_str()},
                          {GgmlType::TURBO3, t3.c_str()},
                          {GgmlType::TURBO4, t4.c_str()},
                          {GgmlType::TURBO3_64, t3_64.c_str()}};
    for (const Case& c : cases) {
        const int g = (int)ggml_type_info(c.t).block_size;
        std::vector<float> x(g);
        for (int j = 0; j < g; j++) x[j] = (j % 3 == 0 ? -1.0f : 1.0f) / std::sqrt((float)g);
        turbo_unrotate(x.data(), g);
        const std::vector<uint8_t> b = encode(c.t, x);
        ASSERT_EQ(b.size(), ggml_type_info(c.t).type_size);
        EXPECT_EQ(hex(b.data(), b.size()), c.hex) << ggml_type_name(c.t);
    }
    // A zero vector: norm 0, every value on the first positive centroid (0.0 rounds up, spec §4).
    const std::vector<uint8_t> z = encode(GgmlType::TURBO2, std::vector<float>(128, 0.0f));
    EXPECT_EQ(hex(z.data(), z.size()), "0000" + rep("aa", 32));
}

// A trellis path chosen by hand: prefix 0x2a, out_t = (5t + 3) % 8 (3-bit) or (3t + 1) % 4 (2-bit),
// and y_t = the codebook value of each state, so that path costs 0. The Viterbi encoder must find it
// and write its bits LSB first (spec §5 step 7); the sliding window must read the states back.
TEST(Turbo, TcqStreamBitExact) {
    for (int k : {3, 2}) {
        const float* cb = k == 3 ? kTcqCodebook3 : kTcqCodebook2;
        std::vector<int> states(128);
        int prev = 0x2a << k;  // any state whose bits k..k+5 are the prefix
        std::vector<uint8_t> want((6 + 128 * k + 7) / 8, 0);
        auto put = [&want](int bit, int v, int n) {
            for (int i = 0; i < n; i++)
                if ((v >> i) & 1) want[(bit + i) / 8] |= (uint8_t)(1 << ((bit + i) % 8));
        };
        put(0, 0x2a, 6);
        std::vector<float> y(128);
        double sq = 0;
        for (int t = 0; t < 128; t++) {
            const int out = k == 3 ? (5 * t + 3) % 8 : (3 * t + 1) % 4;
            states[t] = (prev >> k) | (out << 6);
            prev = states[t];
            put(6 + k * t, out, k);
            y[t] = cb[states[t]];
            sq += (double)y[t] * y[t];
        }
        std::vector<uint8_t> qs(want.size() + 1, 0xFF);  // +1: must stay untouched
        const float r2 = tcq_encode(y.data(), k, cb, qs.data());
        EXPECT_EQ(qs.back(), 0xFF);
        qs.pop_back();
        EXPECT_EQ(hex(qs.data(), qs.size()), hex(want.data(), want.size())) << "k=" << k;
        for (int t = 0; t < 128; t++) ASSERT_EQ(tcq_state(qs.data(), k, t), states[t]) << t;
        EXPECT_NEAR(r2, sq, 1e-5);
    }
}

// Mean total squared error of unit vectors (Gaussian directions) through encode + decode.
double unit_mse(GgmlType t, int dim, int n_vec, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd;
    std::vector<float> x(dim), y(dim);
    std::vector<uint8_t> blk(ggml_row_size(t, dim));
    double total = 0;
    for (int v = 0; v < n_vec; v++) {
        double n2 = 0;
        for (float& e : x) e = nd(rng), n2 += (double)e * e;
        for (float& e : x) e = (float)(e / std::sqrt(n2));
        quant_traits(t)->quantize_row(x.data(), blk.data(), dim);
        quant_traits(t)->dequantize_row(blk.data(), y.data(), dim);
        for (int i = 0; i < dim; i++) total += (double)(x[i] - y[i]) * (x[i] - y[i]);
    }
    return total / n_vec;
}

// Spec §10 measured 0.1190 / 0.0339 / 0.0092 (scalar 2/3/4-bit) and 0.0803 / 0.0217 (TCQ 2/3-bit) on
// 2000 random unit vectors of R^128; the issue asks TCQ to be >= 30% below scalar of the same bits.
TEST(Turbo, UnitVectorDistortionMatchesSpec) {
    const double t2 = unit_mse(GgmlType::TURBO2, 128, 2000, 1), t3 = unit_mse(GgmlType::TURBO3, 128, 2000, 1);
    const double t4 = unit_mse(GgmlType::TURBO4, 128, 2000, 1);
    const double c2 = unit_mse(GgmlType::TURBO2_TCQ, 128, 2000, 1), c3 = unit_mse(GgmlType::TURBO3_TCQ, 128, 2000, 1);
    const double g2 = unit_mse(GgmlType::TURBO2_64, 64, 2000, 1), g3 = unit_mse(GgmlType::TURBO3_64, 64, 2000, 1);
    const double g4 = unit_mse(GgmlType::TURBO4_64, 64, 2000, 1);
    printf(
        "[ turbo   ] unit-vector MSE d=128: turbo2 %.4f turbo3 %.4f turbo4 %.4f turbo2_tcq %.4f (%.0f%%) "
        "turbo3_tcq %.4f (%.0f%%)\n",
        t2, t3, t4, c2, 100 * (c2 / t2 - 1), c3, 100 * (c3 / t3 - 1));
    printf("[ turbo   ] unit-vector MSE d=64: turbo2_64 %.4f turbo3_64 %.4f turbo4_64 %.4f\n", g2, g3, g4);
    EXPECT_NEAR(t2, 0.1190, 0.006);
    EXPECT_NEAR(t3, 0.0339, 0.002);
    EXPECT_NEAR(t4, 0.0092, 0.0006);
    EXPECT_NEAR(c2, 0.0803, 0.005);
    EXPECT_NEAR(c3, 0.0217, 0.0015);
    EXPECT_LT(c2, 0.7 * t2);
    EXPECT_LT(c3, 0.7 * t3);
    // 64-value groups: the same Lloyd-Max levels scaled by sqrt(2); a 64-dim coordinate is a little
    // less Gaussian, so allow 10% more than the 128 figures.
    EXPECT_LT(g2, 1.1 * 0.1190);
    EXPECT_LT(g3, 1.1 * 0.0339);
    EXPECT_LT(g4, 1.1 * 0.0092);
}

// Norm correction (spec §2 step 6): every decoded group keeps the input's L2 norm (to fp16 rounding).
TEST(Turbo, DecodedGroupKeepsNorm) {
    std::mt19937 rng(5);
    std::normal_distribution<float> nd(0.0f, 3.0f);
    for (GgmlType t : {GgmlType::TURBO2, GgmlType::TURBO3, GgmlType::TURBO4, GgmlType::TURBO2_TCQ, GgmlType::TURBO3_TCQ,
                       GgmlType::TURBO3_64}) {
        const int g = (int)ggml_type_info(t).block_size;
        std::vector<float> x(g), y(g);
        for (float& e : x) e = nd(rng);
        std::vector<uint8_t> b = encode(t, x);
        quant_traits(t)->dequantize_row(b.data(), y.data(), g);
        double nx = 0, ny = 0;
        for (int i = 0; i < g; i++) nx += x[i] * x[i], ny += y[i] * y[i];
        EXPECT_NEAR(std::sqrt(ny) / std::sqrt(nx), 1.0, 1e-3) << ggml_type_name(t);
    }
}

// Type ids, names and sizes as serialized (spec §3.1), and a GGUF write/read round trip of a
// turbo3 tensor keeps every byte.
TEST(Turbo, SerializationRoundTrip) {
    struct Row {
        GgmlType t;
        uint32_t id;
        const char* name;
        size_t bytes;
    };
    const Row rows[] = {{GgmlType::TURBO3, 42, "turbo3", 50},
                        {GgmlType::TURBO4, 43, "turbo4", 66},
                        {GgmlType::TURBO2, 44, "turbo2", 34},
                        {GgmlType::TURBO3_TCQ, 45, "turbo3_tcq", 52},
                        {GgmlType::TURBO2_TCQ, 46, "turbo2_tcq", 36}};
    for (const Row& r : rows) {
        EXPECT_EQ((uint32_t)r.t, r.id);
        EXPECT_STREQ(ggml_type_name(r.t), r.name);
        EXPECT_EQ(ggml_type_info(r.t).type_size, r.bytes);
        EXPECT_EQ(ggml_type_info(r.t).block_size, 128);
        GgmlType parsed;
        ASSERT_TRUE(ggml_type_from_name(r.name, &parsed));
        EXPECT_EQ(parsed, r.t);
    }
    for (GgmlType t : {GgmlType::TURBO3, GgmlType::TURBO3_TCQ}) {
        std::mt19937 rng(9);
        std::normal_distribution<float> nd;
        std::vector<float> x(128 * 6);
        for (float& e : x) e = nd(rng);
        const std::vector<uint8_t> q = encode(t, x);
        GgufWriter w;
        w.set_str("general.architecture", "kv-test");
        w.add_tensor("cache_k_l0", t, {128, 6}, q.data(), q.size());
        const std::vector<uint8_t> img = w.serialize();
        GgufFile f = GgufFile::parse(img.data(), img.size(), "kv.gguf");
        const GgufTensor* tt = f.find_tensor("cache_k_l0");
        ASSERT_NE(tt, nullptr);
        EXPECT_EQ(tt->type, t);
        ASSERT_EQ(tt->nbytes, q.size());
        EXPECT_EQ(0, memcmp(tt->data, q.data(), q.size()));
        std::vector<float> a(x.size()), b(x.size());
        quant_traits(t)->dequantize_row(q.data(), a.data(), (int64_t)x.size());
        quant_traits(t)->dequantize_row(tt->data, b.data(), (int64_t)x.size());
        EXPECT_EQ(0, memcmp(a.data(), b.data(), a.size() * sizeof(float)));
    }
}

}  // namespace
}  // namespace bee
