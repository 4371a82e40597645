// tests/unit/quant/test_quant_fixtures: our dequantize/quantize against gguf-py and ggml, bit for bit
// (fixtures in tests/data/quant/ from tests/reference/make_quant_fixtures.py and ggml_quant_golden.c).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "quant/quant.h"

namespace bee {
namespace {

struct Fixture {
    uint32_t kind = 0;  // 0: raw blocks -> floats; 1: floats -> raw blocks
    GgmlType type = GgmlType::F32;
    uint32_t n_blocks = 0;
    std::vector<uint8_t> raw;
    std::vector<float> floats;
};

// Reads one fixture (layout in make_quant_fixtures.py); fails the test if it is missing or malformed.
Fixture load_fixture(const std::string& name) {
    const std::string path = std::string(BEE_SOURCE_DIR) + "/tests/data/quant/" + name;
    Fixture fx;
    FILE* f = fopen(path.c_str(), "rb");
    EXPECT_NE(f, nullptr) << "missing fixture " << path << " (run tests/reference/make_quant_fixtures.py)";
    if (!f) return fx;
    char magic[4];
    uint32_t h[5];
    const bool ok = fread(magic, 1, 4, f) == 4 && fread(h, 4, 5, f) == 5 && memcmp(magic, "BQFX", 4) == 0 && h[0] == 1;
    EXPECT_TRUE(ok) << path << ": bad header";
    if (ok) {
        fx.kind = h[1];
        fx.type = (GgmlType)h[2];
        fx.n_blocks = h[3];
        const GgmlTypeInfo info = ggml_type_info(fx.type);
        EXPECT_EQ(info.type_size, h[4]) << path;
        fx.raw.resize((size_t)fx.n_blocks * info.type_size);
        fx.floats.resize((size_t)fx.n_blocks * info.block_size);
        size_t got = 0;
        if (fx.kind == 0) {
            got += fread(fx.raw.data(), 1, fx.raw.size(), f);
            got += fread(fx.floats.data(), 4, fx.floats.size(), f) * 4;
        } else {
            got += fread(fx.floats.data(), 4, fx.floats.size(), f) * 4;
            got += fread(fx.raw.data(), 1, fx.raw.size(), f);
        }
        EXPECT_EQ(got, fx.raw.size() + fx.floats.size() * 4) << path << ": truncated";
    }
    fclose(f);
    return fx;
}

class DequantFixture : public testing::TestWithParam<const char*> {};

TEST_P(DequantFixture, MatchesGgufPyBitExact) {
    const Fixture fx = load_fixture(std::string("deq_") + GetParam() + ".bqf");
    ASSERT_FALSE(fx.floats.empty());
    ASSERT_EQ(fx.kind, 0u);
    const QuantTraits* tr = quant_traits(fx.type);
    ASSERT_NE(tr, nullptr);
    std::vector<float> y(fx.floats.size());
    tr->dequantize_row(fx.raw.data(), y.data(), (int64_t)y.size());
    int mismatches = 0;
    for (size_t i = 0; i < y.size(); ++i) {
        if (memcmp(&y[i], &fx.floats[i], 4) != 0 && ++mismatches <= 5)
            ADD_FAILURE() << GetParam() << " element " << i << ": ours " << y[i] << " gguf-py " << fx.floats[i];
    }
    EXPECT_EQ(mismatches, 0) << "of " << y.size();
}

INSTANTIATE_TEST_SUITE_P(Types, DequantFixture,
                         testing::Values("f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_k", "q3_k", "q4_k",
                                         "q5_k", "q6_k"),
                         [](const testing::TestParamInfo<const char*>& p) { return std::string(p.param); });

// Quantizes the fixture's floats and compares the bytes with the stored ones.
void check_quantize_fixture(const std::string& file, const char* label) {
    const Fixture fx = load_fixture(file);
    ASSERT_FALSE(fx.floats.empty());
    ASSERT_EQ(fx.kind, 1u) << file;
    const QuantTraits* tr = quant_traits(fx.type);
    ASSERT_NE(tr, nullptr);
    std::vector<uint8_t> q(fx.raw.size());
    tr->quantize_row(fx.floats.data(), q.data(), (int64_t)fx.floats.size());
    const size_t bs = ggml_type_info(fx.type).type_size;
    int mismatches = 0;
    for (size_t i = 0; i < q.size(); ++i) {
        if (q[i] != fx.raw[i] && ++mismatches <= 5)
            ADD_FAILURE() << label << " block " << i / bs << " byte " << i % bs << ": ours " << (int)q[i]
                          << " expected " << (int)fx.raw[i];
    }
    EXPECT_EQ(mismatches, 0) << "of " << q.size();
}

class QuantizeFixture : public testing::TestWithParam<const char*> {};

TEST_P(QuantizeFixture, MatchesGgufPyBytes) {
    check_quantize_fixture(std::string("quant_") + GetParam() + ".bqf", GetParam());
}

INSTANTIATE_TEST_SUITE_P(Types, QuantizeFixture, testing::Values("f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0"),
                         [](const testing::TestParamInfo<const char*>& p) { return std::string(p.param); });

// ggml's own C reference quantizers (tests/reference/ggml_quant_golden.c) for the K-quants and Q8_K,
// which gguf-py cannot quantize: our quantizers write the same bytes.
class GgmlGoldenFixture : public testing::TestWithParam<const char*> {};

TEST_P(GgmlGoldenFixture, MatchesGgmlReferenceBytes) {
    check_quantize_fixture(std::string("ggml_") + GetParam() + ".bqf", GetParam());
}

INSTANTIATE_TEST_SUITE_P(Types, GgmlGoldenFixture, testing::Values("q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "q8_k"),
                         [](const testing::TestParamInfo<const char*>& p) { return std::string(p.param); });

}  // namespace
}  // namespace bee
