// tests/unit/gguf/test_gguf_broken: deliberately broken files; each must throw Error naming the field and byte offset.
#include <gtest/gtest.h>

#include "gguf_test_util.h"

namespace bee {
namespace {

using test::expect_gguf_error;
using test::RawGguf;
using VT = GgufValueType;
constexpr uint32_t kF32 = 0;
constexpr uint32_t kQ4_0 = 2;

// A file with one tensor `w` (F32, `ne`) at `offset` and `data_bytes` of data after the padding.
std::vector<uint8_t> one_tensor(const std::vector<int64_t>& ne, uint32_t type, uint64_t offset, size_t data_bytes,
                                RawGguf::TensorAt* at = nullptr) {
    RawGguf r;
    r.header(3, 1, 0);
    RawGguf::TensorAt t = r.tensor("w", ne, type, offset);
    if (at) *at = t;
    r.pad(32);
    r.zeros(data_bytes);
    return r.b;
}

TEST(GgufBroken, BadMagic) {
    std::vector<uint8_t> img = test::small_sample_file();
    img[3] = 'X';
    expect_gguf_error(img, "magic", 0, "bad magic 47 47 55 58");
}

TEST(GgufBroken, Versions) {
    for (uint32_t v : {0u, 1u, 4u, 0x03000000u}) {
        RawGguf r;
        r.header(v, 0, 0);
        const char* problem = v == 1   ? "version 1 is not supported"
                              : v == 4 ? "unsupported version 4"
                              : v == 0 ? "unsupported version 0"
                                       : "big-endian";
        expect_gguf_error(r.b, "version", 4, problem);
    }
}

TEST(GgufBroken, EveryPrefixThrows) {
    std::vector<uint8_t> img = test::small_sample_file();
    ASSERT_NO_THROW(GgufFile::parse(img.data(), img.size(), "t.gguf"));
    for (size_t len = 0; len < img.size(); len++) {
        std::vector<uint8_t> cut(img.begin(), img.begin() + (long)len);
        std::string msg = test::try_parse(cut);
        ASSERT_FALSE(msg.empty()) << "prefix of " << len << " bytes parsed";
        EXPECT_EQ(msg.rfind("t.gguf: ", 0), 0u) << msg;
        EXPECT_NE(msg.find(" at byte "), std::string::npos) << msg;
    }
}

TEST(GgufBroken, TruncatedHeaderNamesField) {
    std::vector<uint8_t> img = test::small_sample_file();
    expect_gguf_error({img.begin(), img.begin() + 2}, "magic", 0, "truncated: magic needs 4 bytes, only 2 left");
    expect_gguf_error({img.begin(), img.begin() + 10}, "tensor_count", 8, "truncated");
    expect_gguf_error({img.begin(), img.begin() + 20}, "metadata_kv_count", 16, "truncated");
}

TEST(GgufBroken, CountsTooLargeForFile) {
    RawGguf r;
    r.header(3, 1ull << 60, 0);
    expect_gguf_error(r.b, "tensor_count", 8, "cannot fit");
    RawGguf k;
    k.header(3, 0, 1000);
    expect_gguf_error(k.b, "metadata_kv_count", 16, "cannot fit");
}

TEST(GgufBroken, KeyLengthPastEnd) {
    RawGguf r;
    r.header(3, 0, 1);
    size_t at = r.put<uint64_t>(1000);
    r.zeros(20);
    expect_gguf_error(r.b, "metadata key #0", at, "key length 1000 extends past end of file");
}

TEST(GgufBroken, KeyTooLongAndEmpty) {
    RawGguf r;
    r.header(3, 0, 1);
    size_t at = r.put<uint64_t>(1ull << 40);
    r.zeros(20);
    expect_gguf_error(r.b, "metadata key #0", at, "exceeds the limit of 65535 bytes");
    RawGguf e;
    e.header(3, 0, 1);
    size_t eat = e.key("", VT::UINT8);
    e.put<uint8_t>(1);
    e.zeros(8);
    expect_gguf_error(e.b, "metadata key #0", eat, "empty key");
}

TEST(GgufBroken, UnknownValueType) {
    RawGguf r;
    r.header(3, 0, 1);
    r.str("a");
    size_t at = r.put<uint32_t>(13);
    r.zeros(8);
    expect_gguf_error(r.b, "metadata key 'a'", at, "unknown value type 13");
}

TEST(GgufBroken, UnknownArrayElementType) {
    RawGguf r;
    r.header(3, 0, 1);
    r.key("a", VT::ARRAY);
    size_t at = r.put<uint32_t>(99);
    r.put<uint64_t>(0);
    expect_gguf_error(r.b, "metadata key 'a'", at, "unknown value type 99");
}

TEST(GgufBroken, ArrayCountHuge) {
    for (VT et : {VT::UINT8, VT::UINT32, VT::STRING, VT::ARRAY}) {
        RawGguf r;
        r.header(3, 0, 1);
        r.key("a", VT::ARRAY);
        r.put<uint32_t>((uint32_t)et);
        size_t at = r.put<uint64_t>(1ull << 62);
        r.zeros(64);
        expect_gguf_error(r.b, "metadata key 'a'", at, "array count 4611686018427387904");
    }
}

TEST(GgufBroken, TooManyArrayElementsInAll) {
    // Each element becomes a GgufValue of ~100 bytes; the reader caps the total at 2^23 elements.
    RawGguf r;
    r.header(3, 0, 1);
    r.key("a", VT::ARRAY);
    r.put<uint32_t>((uint32_t)VT::UINT8);
    size_t at = r.put<uint64_t>((1ull << 23) + 1);
    r.zeros((1ull << 23) + 1);
    expect_gguf_error(r.b, "metadata key 'a'", at, "array count 8388609 brings the metadata past 8388608");
}

TEST(GgufBroken, StringLengthHuge) {
    RawGguf r;
    r.header(3, 0, 1);
    r.key("a", VT::STRING);
    size_t at = r.put<uint64_t>(1ull << 40);
    r.zeros(64);
    expect_gguf_error(r.b, "metadata key 'a'", at, "string length 1099511627776 exceeds the limit");
    RawGguf p;
    p.header(3, 0, 1);
    p.key("a", VT::STRING);
    size_t pat = p.put<uint64_t>(65);
    p.zeros(64);
    expect_gguf_error(p.b, "metadata key 'a'", pat, "string length 65 extends past end of file");
}

TEST(GgufBroken, StringInArrayNamesElement) {
    RawGguf r;
    r.header(3, 0, 1);
    r.key("tok", VT::ARRAY);
    r.put<uint32_t>((uint32_t)VT::STRING);
    r.put<uint64_t>(3);
    r.str("a");
    r.str("b");
    size_t at = r.put<uint64_t>(100);
    r.zeros(12);
    expect_gguf_error(r.b, "metadata key 'tok'[2]", at, "string length 100 extends past end of file");
}

TEST(GgufBroken, BadBool) {
    RawGguf r;
    r.header(3, 0, 1);
    r.key("b", VT::BOOL);
    size_t at = r.put<uint8_t>(2);
    expect_gguf_error(r.b, "metadata key 'b'", at, "bool value 2, expected 0 or 1");
}

TEST(GgufBroken, ArraysNestedTooDeep) {
    RawGguf r;
    r.header(3, 0, 1);
    r.key("n", VT::ARRAY);
    for (int i = 0; i < 40; i++) {
        r.put<uint32_t>((uint32_t)VT::ARRAY);
        r.put<uint64_t>(1);
    }
    std::string msg = test::parse_error(r.b);
    EXPECT_NE(msg.find("t.gguf: metadata key 'n'[0][0]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("arrays nested more than 8 deep"), std::string::npos) << msg;
}

TEST(GgufBroken, DuplicateKey) {
    RawGguf r;
    r.header(3, 0, 2);
    size_t first = r.key("a", VT::UINT8);
    r.put<uint8_t>(1);
    size_t second = r.key("a", VT::UINT8);
    r.put<uint8_t>(2);
    expect_gguf_error(r.b, "metadata key 'a'", second,
                      "duplicate key (first defined at byte " + std::to_string(first) + ")");
}

TEST(GgufBroken, BadAlignmentValue) {
    for (uint32_t a : {0u, 48u, 3u}) {
        RawGguf r;
        r.header(3, 0, 1);
        r.key("general.alignment", VT::UINT32);
        size_t at = r.put<uint32_t>(a);
        expect_gguf_error(r.b, "metadata key 'general.alignment'", at,
                          "alignment " + std::to_string(a) + " is not a nonzero power of two");
    }
    RawGguf t;
    t.header(3, 0, 1);
    t.key("general.alignment", VT::UINT64);
    size_t at = t.put<uint64_t>(32);
    expect_gguf_error(t.b, "metadata key 'general.alignment'", at, "has type uint64, expected uint32");
}

TEST(GgufBroken, DuplicateTensorName) {
    RawGguf r;
    r.header(3, 2, 0);
    RawGguf::TensorAt a = r.tensor("w", {8}, kF32, 0);
    RawGguf::TensorAt b = r.tensor("w", {8}, kF32, 32);
    r.pad(32);
    r.zeros(64);
    expect_gguf_error(r.b, "tensor 'w' name", b.name,
                      "duplicate tensor name (first defined at byte " + std::to_string(a.name) + ")");
}

TEST(GgufBroken, EmptyTensorName) {
    RawGguf r;
    r.header(3, 1, 0);
    RawGguf::TensorAt t = r.tensor("", {8}, kF32, 0);
    r.pad(32);
    r.zeros(32);
    expect_gguf_error(r.b, "tensor #0 name", t.name, "empty tensor name");
}

TEST(GgufBroken, NDims) {
    RawGguf::TensorAt at;
    std::vector<uint8_t> img = one_tensor({8, 1, 1, 1, 1}, kF32, 0, 32, &at);
    expect_gguf_error(img, "tensor 'w' n_dims", at.n_dims, "n_dims 5, expected 1 to 4");
    img = one_tensor({}, kF32, 0, 32, &at);
    expect_gguf_error(img, "tensor 'w' n_dims", at.n_dims, "n_dims 0, expected 1 to 4");
}

TEST(GgufBroken, ZeroOrNegativeShape) {
    RawGguf::TensorAt at;
    std::vector<uint8_t> img = one_tensor({8, 0}, kF32, 0, 32, &at);
    expect_gguf_error(img, "tensor 'w' shape", at.ne[1], "ne[1] = 0, expected a positive size");
    img = one_tensor({-8}, kF32, 0, 32, &at);
    expect_gguf_error(img, "tensor 'w' shape", at.ne[0], "ne[0] = -8, expected a positive size");
}

TEST(GgufBroken, OverflowingShape) {
    RawGguf::TensorAt at;
    std::vector<uint8_t> img = one_tensor({1ll << 32, 1ll << 32}, kF32, 0, 32, &at);
    expect_gguf_error(img, "tensor 'w' shape", at.ne[1], "shape overflows: ne[1] = 4294967296");
    img = one_tensor({1, 1ll << 20, 1ll << 20, 1ll << 24}, kF32, 0, 32, &at);
    expect_gguf_error(img, "tensor 'w' shape", at.ne[3], "shape overflows: ne[3]");
    // 2^62 elements fit int64, but 2^64 bytes of f32 do not fit the byte count.
    img = one_tensor({1ll << 62}, kF32, 0, 32, &at);
    expect_gguf_error(img, "tensor 'w' shape", at.type, "overflow the byte count");
}

TEST(GgufBroken, UnknownTensorType) {
    for (uint32_t type : {4u, 31u, 1000u}) {
        RawGguf::TensorAt at;
        std::vector<uint8_t> img = one_tensor({32}, type, 0, 128, &at);
        expect_gguf_error(img, "tensor 'w' type", at.type, "unknown ggml type id " + std::to_string(type));
    }
}

TEST(GgufBroken, NeZeroNotMultipleOfBlock) {
    RawGguf::TensorAt at;
    std::vector<uint8_t> img = one_tensor({33, 2}, kQ4_0, 0, 128, &at);
    expect_gguf_error(img, "tensor 'w' shape", at.ne[0],
                      "ne[0] = 33 is not a multiple of the block size 32 of type q4_0");
}

TEST(GgufBroken, OffsetMisaligned) {
    RawGguf::TensorAt at;
    std::vector<uint8_t> img = one_tensor({8}, kF32, 4, 64, &at);
    expect_gguf_error(img, "tensor 'w' offset", at.offset, "offset 4 is not a multiple of the alignment 32");
}

TEST(GgufBroken, DataPastEnd) {
    std::vector<uint8_t> img = one_tensor({16}, kF32, 0, 32);  // needs 64 bytes, has 32
    size_t start = img.size() - 32;
    expect_gguf_error(img, "tensor 'w' data", start,
                      "range [" + std::to_string(start) + ", " + std::to_string(start + 64) +
                          ") extends past end of file (size " + std::to_string(img.size()) + ")");
    img = one_tensor({8}, kF32, 1ull << 63, 32);
    std::string msg = test::parse_error(img);
    EXPECT_NE(msg.find("tensor 'w' data at byte"), std::string::npos) << msg;
    img = one_tensor({8}, kF32, ~31ull, 32);  // data offset + offset wraps around
    expect_gguf_error(img, "tensor 'w' data", 64, "overflows");
}

TEST(GgufBroken, OddNamesAreEscapedInMessages) {
    RawGguf r;
    r.header(3, 0, 1);
    r.key("a\nb", VT::BOOL);
    size_t at = r.put<uint8_t>(7);
    expect_gguf_error(r.b, "metadata key 'a\\x0ab'", at, "bool value 7");
}

TEST(GgufBroken, EmptyAndMissingFiles) {
    expect_gguf_error({}, "magic", 0, "truncated");
    try {
        GgufFile::open("/nonexistent-dir/m.gguf");
        FAIL() << "expected Error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/m.gguf"), std::string::npos) << e.what();
    }
}

TEST(GgufBroken, OverlappingTensorData) {
    // Two F32 tensors of 16 floats: `b` starts inside `a` (offset 32 of a's 64 bytes).
    RawGguf r;
    r.header(3, 2, 0);
    r.tensor("a", {16}, kF32, 0);
    r.tensor("b", {16}, kF32, 32);
    r.pad(32);
    r.zeros(96);
    const size_t data_at = r.b.size() - 96;
    expect_gguf_error(r.b, "tensor 'b' data", data_at + 32, "overlaps tensor 'a' at [0, 64)");
    // Side by side is fine.
    RawGguf ok;
    ok.header(3, 2, 0);
    ok.tensor("a", {16}, kF32, 0);
    ok.tensor("b", {16}, kF32, 64);
    ok.pad(32);
    ok.zeros(128);
    EXPECT_NO_THROW(GgufFile::parse(ok.b.data(), ok.b.size(), "t.gguf"));
}

}  // namespace
}  // namespace bee
