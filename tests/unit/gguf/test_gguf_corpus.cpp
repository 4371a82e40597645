// tests/unit/gguf/test_gguf_corpus: generates the fuzz seeds (tests/data/tiny_fuzz_corpus); checks the stored copy matches.
// Regenerate with: BEE_WRITE_FUZZ_CORPUS=1 ./test_gguf --gtest_filter='GgufFuzzCorpus.*'
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "gguf_test_util.h"

namespace bee {
namespace {

using VT = GgufValueType;

std::vector<uint8_t> seed_metadata_only() {
    GgufWriter w;
    w.set("u8", GgufValue::make_uint(VT::UINT8, 200));
    w.set("i8", GgufValue::make_int(VT::INT8, -100));
    w.set("u16", GgufValue::make_uint(VT::UINT16, 60000));
    w.set("i16", GgufValue::make_int(VT::INT16, -30000));
    w.set_u32("u32", 4000000000u);
    w.set_i32("i32", -2000000000);
    w.set_f32("f32", 0.5f);
    w.set_bool("bool", true);
    w.set_str("str", "text");
    w.set_u64("u64", 1ull << 40);
    w.set("i64", GgufValue::make_int(VT::INT64, -(1ll << 40)));
    w.set("f64", GgufValue::make_float(VT::FLOAT64, 0.125));
    w.set_f32_array("f32s", {1.0f, 2.0f});
    w.set_i32_array("i32s", {1, -1});
    w.set_str_array("strs", {"a", "", "bc"});
    return w.serialize();
}

std::vector<uint8_t> seed_align64_v2() {
    GgufWriter w(64);
    w.set_str("general.architecture", "llama");
    test::add_pattern_tensor(w, "a", GgmlType::Q8_0, {32, 2}, 7);
    test::add_pattern_tensor(w, "b", GgmlType::Q4_K, {256}, 8);
    std::vector<uint8_t> img = w.serialize();
    img[4] = 2;  // version 2 has the same little-endian layout
    return img;
}

std::vector<uint8_t> seed_nested() {
    GgufValue leaf = GgufValue::make_array(VT::UINT16, {GgufValue::make_uint(VT::UINT16, 1)});
    GgufValue mid = GgufValue::make_array(VT::ARRAY, {leaf, GgufValue::make_array(VT::STRING, {})});
    GgufWriter w;
    w.set("nested", GgufValue::make_array(VT::ARRAY, {mid, mid}));
    w.set_bool("flag", false);
    test::add_pattern_tensor(w, "t", GgmlType::F16, {4, 2, 2}, 9);
    return w.serialize();
}

const std::vector<std::pair<std::string, std::vector<uint8_t> (*)()>> kSeeds = {
    {"small.gguf", test::small_sample_file},
    {"metadata_only.gguf", seed_metadata_only},
    {"align64_v2.gguf", seed_align64_v2},
    {"nested.gguf", seed_nested},
};

TEST(GgufFuzzCorpus, SeedsMatchGenerator) {
    bool write = std::getenv("BEE_WRITE_FUZZ_CORPUS") != nullptr;
    for (const auto& [name, gen] : kSeeds) {
        std::vector<uint8_t> img = gen();
        EXPECT_LT(img.size(), 10000u) << name;
        ASSERT_NO_THROW(GgufFile::parse(img.data(), img.size(), name)) << name;
        std::string path = std::string(BEE_SOURCE_DIR "/tests/data/tiny_fuzz_corpus/") + name;
        if (write) {
            std::ofstream(path, std::ios::binary).write((const char*)img.data(), (std::streamsize)img.size());
            continue;
        }
        std::ifstream in(path, std::ios::binary);
        ASSERT_TRUE(in.good()) << path << " is missing; regenerate with BEE_WRITE_FUZZ_CORPUS=1 test_gguf "
                               << "--gtest_filter='GgufFuzzCorpus.*'";
        std::vector<uint8_t> stored((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        EXPECT_EQ(stored, img) << path << " differs from the generator; regenerate it (see the file header)";
    }
}

}  // namespace
}  // namespace bee
