// tests/unit/quant/test_quant_blocks: block sizes, the traits table, and hand-built blocks with known floats.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "quant/blocks.h"
#include "quant/quant.h"

namespace bee {
namespace {

TEST(QuantTraits, BlockStructsMatchTypeTable) {
    struct Row {
        GgmlType t;
        size_t size;
        int64_t block;
    };
    const Row rows[] = {
        {GgmlType::Q4_0, sizeof(BlockQ4_0), QK4_0}, {GgmlType::Q4_1, sizeof(BlockQ4_1), QK4_1},
        {GgmlType::Q5_0, sizeof(BlockQ5_0), QK5_0}, {GgmlType::Q5_1, sizeof(BlockQ5_1), QK5_1},
        {GgmlType::Q8_0, sizeof(BlockQ8_0), QK8_0}, {GgmlType::Q8_1, sizeof(BlockQ8_1), QK8_1},
        {GgmlType::Q2_K, sizeof(BlockQ2_K), QK_K},  {GgmlType::Q3_K, sizeof(BlockQ3_K), QK_K},
        {GgmlType::Q4_K, sizeof(BlockQ4_K), QK_K},  {GgmlType::Q5_K, sizeof(BlockQ5_K), QK_K},
        {GgmlType::Q6_K, sizeof(BlockQ6_K), QK_K},  {GgmlType::Q8_K, sizeof(BlockQ8_K), QK_K},
    };
    for (const Row& r : rows) {
        EXPECT_EQ(ggml_type_info(r.t).type_size, r.size) << ggml_type_name(r.t);
        EXPECT_EQ(ggml_type_info(r.t).block_size, r.block) << ggml_type_name(r.t);
    }
}

TEST(QuantTraits, TableRows) {
    struct Row {
        GgmlType t;
        GgmlType dot_type;
        bool has_dot;
    };
    const Row rows[] = {
        {GgmlType::F32, GgmlType::F32, true},    {GgmlType::F16, GgmlType::F32, true},
        {GgmlType::BF16, GgmlType::F32, true},   {GgmlType::Q4_0, GgmlType::Q8_0, true},
        {GgmlType::Q4_1, GgmlType::Q8_1, true},  {GgmlType::Q5_0, GgmlType::Q8_0, true},
        {GgmlType::Q5_1, GgmlType::Q8_1, true},  {GgmlType::Q8_0, GgmlType::Q8_0, true},
        {GgmlType::Q2_K, GgmlType::Q8_K, true},  {GgmlType::Q3_K, GgmlType::Q8_K, true},
        {GgmlType::Q4_K, GgmlType::Q8_K, true},  {GgmlType::Q5_K, GgmlType::Q8_K, true},
        {GgmlType::Q6_K, GgmlType::Q8_K, true},  {GgmlType::Q8_1, GgmlType::Q8_1, false},
        {GgmlType::Q8_K, GgmlType::Q8_K, false},
    };
    for (const Row& r : rows) {
        const QuantTraits* tr = quant_traits(r.t);
        ASSERT_NE(tr, nullptr) << ggml_type_name(r.t);
        EXPECT_EQ(tr->type, r.t);
        EXPECT_NE(tr->dequantize_row, nullptr);
        EXPECT_NE(tr->quantize_row, nullptr);
        EXPECT_EQ(tr->vec_dot_type, r.dot_type) << ggml_type_name(r.t);
        EXPECT_EQ(tr->vec_dot != nullptr, r.has_dot) << ggml_type_name(r.t);
    }
    EXPECT_EQ(quant_traits(GgmlType::IQ2_XXS), nullptr);
    EXPECT_EQ(quant_traits(GgmlType::IQ4_NL), nullptr);
    EXPECT_EQ(quant_traits(GgmlType::TQ1_0), nullptr);
    EXPECT_EQ(quant_traits(GgmlType::I32), nullptr);
}

std::vector<float> dequant(GgmlType t, const void* block) {
    std::vector<float> y((size_t)ggml_type_info(t).block_size);
    quant_traits(t)->dequantize_row(block, y.data(), (int64_t)y.size());
    return y;
}

TEST(QuantKnownBlocks, Q4_0) {
    // d = 0.5 (fp16 0x3800); byte j: low nibble (j + 8) % 16 -> element j, high nibble j -> element j + 16
    const uint8_t bytes[18] = {0x00, 0x38, 0x08, 0x19, 0x2A, 0x3B, 0x4C, 0x5D, 0x6E,
                               0x7F, 0x80, 0x91, 0xA2, 0xB3, 0xC4, 0xD5, 0xE6, 0xF7};
    const float expected[32] = {0,  0.5,  1,  1.5,  2,  2.5,  3,  3.5,  -4, -3.5, -3, -2.5, -2, -1.5, -1, -0.5,
                                -4, -3.5, -3, -2.5, -2, -1.5, -1, -0.5, 0,  0.5,  1,  1.5,  2,  2.5,  3,  3.5};
    const std::vector<float> y = dequant(GgmlType::Q4_0, bytes);
    for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], expected[i]) << i;
}

TEST(QuantKnownBlocks, Q8_0) {
    // d = 0.25 (fp16 0x3400); qs = 0, 1, -1, 2, -2, ..., and the extremes 127 and -128 at the end
    uint8_t bytes[34] = {0x00, 0x34};
    for (int j = 0; j < 30; ++j) bytes[2 + j] = (uint8_t)(int8_t)((j % 2 ? 1 : -1) * ((j + 1) / 2));
    bytes[32] = 127;
    bytes[33] = 0x80;
    const std::vector<float> y = dequant(GgmlType::Q8_0, bytes);
    EXPECT_EQ(y[0], 0.0f);
    EXPECT_EQ(y[1], 0.25f);
    EXPECT_EQ(y[2], -0.25f);
    EXPECT_EQ(y[29], 3.75f);
    EXPECT_EQ(y[30], 31.75f);
    EXPECT_EQ(y[31], -32.0f);
}

TEST(QuantKnownBlocks, Q5_0) {
    // d = 1; low nibbles all 0xF; qh bit j set for even j only -> q = 31 (even j) or 15 (odd j)
    uint8_t bytes[22] = {0x00, 0x3C, 0x55, 0x55, 0x55, 0x55};
    for (int j = 0; j < 16; ++j) bytes[6 + j] = 0xFF;
    const std::vector<float> y = dequant(GgmlType::Q5_0, bytes);
    for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], j % 2 == 0 ? 15.0f : -1.0f) << j;
}

TEST(QuantKnownBlocks, Q4_K) {
    BlockQ4_K b;
    b.d = 0x3C00;     // 1.0
    b.dmin = 0x3800;  // 0.5
    const uint8_t scales[12] = {0x41, 0x02, 0x03, 0x04, 0x85, 0x06, 0x07, 0x08, 0x21, 0x43, 0x65, 0x87};
    memcpy(b.scales, scales, 12);
    // (scale, min) of the 8 sub-blocks decoded by hand from the 12 bytes above
    const int sc[8] = {1, 2, 3, 4, 17, 3, 5, 7};
    const int mn[8] = {5, 6, 7, 8, 34, 4, 6, 8};
    for (int j = 0; j < 8; ++j) {
        uint8_t s, m;
        k_scale_min(j, b.scales, &s, &m);
        EXPECT_EQ(s, sc[j]) << j;
        EXPECT_EQ(m, mn[j]) << j;
    }
    // byte l of each 32-byte group: low nibble l % 16 (even sub-block), high nibble 15 - l % 16 (odd)
    for (int g = 0; g < 4; ++g)
        for (int l = 0; l < 32; ++l) b.qs[32 * g + l] = (uint8_t)((l % 16) | ((15 - l % 16) << 4));
    const std::vector<float> y = dequant(GgmlType::Q4_K, &b);
    EXPECT_EQ(y[0], -2.5f);     // 1 * 0 - 0.5 * 5
    EXPECT_EQ(y[15], 12.5f);    // 1 * 15 - 2.5
    EXPECT_EQ(y[32], 27.0f);    // 2 * 15 - 3
    EXPECT_EQ(y[142], 221.0f);  // 17 * 14 - 0.5 * 34
    EXPECT_EQ(y[255], -4.0f);   // 7 * 0 - 0.5 * 8
    for (int e = 0; e < 256; ++e) {
        const int s = e / 32, l = e % 32;
        const int q = s % 2 == 0 ? l % 16 : 15 - l % 16;
        EXPECT_EQ(y[e], (float)(sc[s] * q) - 0.5f * (float)mn[s]) << e;
    }
}

TEST(QuantKnownBlocks, Q6_K) {
    BlockQ6_K b;
    b.d = 0x3C00;  // 1.0
    for (int s = 0; s < 16; ++s) b.scales[s] = (int8_t)(s - 8);
    for (int h = 0; h < 2; ++h) {
        for (int l = 0; l < 32; ++l) {
            b.ql[64 * h + l] = 0x21;       // quarters 0 (low nibble 1) and 2 (high nibble 2)
            b.ql[64 * h + 32 + l] = 0x43;  // quarters 1 (low nibble 3) and 3 (high nibble 4)
            b.qh[32 * h + l] = 0xE4;       // top bits 0, 1, 2, 3 for quarters 0..3
        }
    }
    // quarter k of each half: q = -31, -13, 2, 20
    const std::vector<float> y = dequant(GgmlType::Q6_K, &b);
    EXPECT_EQ(y[0], 248.0f);    // scale -8, q -31
    EXPECT_EQ(y[40], 78.0f);    // scale -6, q -13
    EXPECT_EQ(y[67], -8.0f);    // scale -4, q 2
    EXPECT_EQ(y[100], -40.0f);  // scale -2, q 20
    EXPECT_EQ(y[160], -26.0f);  // scale 2, q -13
    EXPECT_EQ(y[255], 140.0f);  // scale 7, q 20
    const int quarter_q[4] = {-31, -13, 2, 20};
    for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], (float)((e / 16 - 8) * quarter_q[(e % 128) / 32])) << e;
}

TEST(QuantKnownBlocks, Q3_K) {
    BlockQ3_K b;
    memset(&b, 0, sizeof(b));
    b.d = 0x3800;  // 0.5
    // scale j = 33 + j (signed 1 + j): low nibbles in bytes 0-7, high 2 bits in bytes 8-11
    for (int j = 0; j < 16; ++j) {
        const int v = 33 + j;
        if (j < 8) b.scales[j] |= (uint8_t)(v & 0xF);
        else b.scales[j - 8] |= (uint8_t)((v & 0xF) << 4);
        b.scales[8 + j % 4] |= (uint8_t)((v >> 4) << (2 * (j / 4)));
    }
    for (int j = 0; j < 16; ++j) EXPECT_EQ(q3k_scale(j, b.scales), 33 + j);
    for (int i = 0; i < 64; ++i) b.qs[i] = 0xE4;     // low 2 bits: 0, 1, 2, 3 for the four 32-groups
    for (int i = 0; i < 32; ++i) b.hmask[i] = 0x0F;  // no -4 offset for elements 0..127
    const std::vector<float> y = dequant(GgmlType::Q3_K, &b);
    for (int e = 0; e < 256; ++e) {
        const int q = ((e % 128) / 32) - (e < 128 ? 0 : 4);
        EXPECT_EQ(y[e], 0.5f * (float)(1 + e / 16) * (float)q) << e;
    }
}

}  // namespace
}  // namespace bee
