// tests/unit/gguf/test_gguf_roundtrip: writer -> reader for every value type, nested arrays, tensor types; getters.
#include <gtest/gtest.h>

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdio>
#include <functional>
#include <unistd.h>

#include "../common/error_of.h"
#include "gguf_test_util.h"

namespace bee {
namespace {

using test::add_pattern_tensor;
using test::error_of;
using test::pattern_bytes;
using VT = GgufValueType;

// Field-by-field comparison of what the writer was given and what the reader produced.
void expect_same_value(const GgufValue& want, const GgufValue& got, const std::string& where) {
    ASSERT_EQ(want.type, got.type) << where;
    switch (want.type) {
        case VT::UINT8:
        case VT::UINT16:
        case VT::UINT32:
        case VT::UINT64:
        case VT::BOOL: EXPECT_EQ(want.u64, got.u64) << where; break;
        case VT::INT8:
        case VT::INT16:
        case VT::INT32:
        case VT::INT64: EXPECT_EQ(want.i64, got.i64) << where; break;
        case VT::FLOAT32: EXPECT_EQ((float)want.f64, (float)got.f64) << where; break;
        case VT::FLOAT64: EXPECT_EQ(want.f64, got.f64) << where; break;
        case VT::STRING: EXPECT_EQ(want.str, got.str) << where; break;
        case VT::ARRAY:
            EXPECT_EQ(want.arr_type, got.arr_type) << where;
            ASSERT_EQ(want.arr.size(), got.arr.size()) << where;
            for (size_t i = 0; i < want.arr.size(); i++)
                expect_same_value(want.arr[i], got.arr[i], where + "[" + std::to_string(i) + "]");
            break;
    }
}

// One value of every scalar type at its edges, arrays of every element type, nested arrays.
std::vector<std::pair<std::string, GgufValue>> every_value() {
    std::vector<std::pair<std::string, GgufValue>> kv = {
        {"t.u8", GgufValue::make_uint(VT::UINT8, 255)},
        {"t.i8", GgufValue::make_int(VT::INT8, -128)},
        {"t.u16", GgufValue::make_uint(VT::UINT16, 65535)},
        {"t.i16", GgufValue::make_int(VT::INT16, -32768)},
        {"t.u32", GgufValue::make_uint(VT::UINT32, UINT32_MAX)},
        {"t.i32", GgufValue::make_int(VT::INT32, INT32_MIN)},
        {"t.f32", GgufValue::make_float(VT::FLOAT32, -1.5)},
        {"t.bool_t", GgufValue::make_bool(true)},
        {"t.bool_f", GgufValue::make_bool(false)},
        {"t.str", GgufValue::make_str(std::string("h\xc3\xa9llo\0world", 12))},
        {"t.str_empty", GgufValue::make_str("")},
        {"t.u64", GgufValue::make_uint(VT::UINT64, UINT64_MAX)},
        {"t.i64", GgufValue::make_int(VT::INT64, INT64_MIN)},
        {"t.f64", GgufValue::make_float(VT::FLOAT64, 3.141592653589793)},
    };
    size_t n_scalars = kv.size();
    for (size_t i = 0; i < n_scalars; i++) {
        const GgufValue& s = kv[i].second;
        kv.push_back({kv[i].first + "_arr", GgufValue::make_array(s.type, {s, s, s})});
    }
    kv.push_back({"t.empty_arr", GgufValue::make_array(VT::FLOAT32, {})});
    GgufValue inner_u8 = GgufValue::make_array(VT::UINT8, {GgufValue::make_uint(VT::UINT8, 1)});
    GgufValue inner_str = GgufValue::make_array(VT::STRING, {GgufValue::make_str("x"), GgufValue::make_str("yz")});
    GgufValue inner_empty = GgufValue::make_array(VT::INT64, {});
    GgufValue arr2 = GgufValue::make_array(VT::ARRAY, {inner_u8, inner_str, inner_empty});
    kv.push_back({"t.arr_of_arr", arr2});
    kv.push_back({"t.arr3", GgufValue::make_array(VT::ARRAY, {arr2, GgufValue::make_array(VT::BOOL, {})})});
    return kv;
}

TEST(GgufRoundTrip, EveryValueType) {
    GgufWriter w;
    auto kv = every_value();
    for (const auto& [k, v] : kv) w.set(k, v);
    std::vector<uint8_t> img = w.serialize();
    GgufFile f = GgufFile::parse(img.data(), img.size(), "mem.gguf");
    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(f.alignment(), 32u);
    EXPECT_EQ(f.path(), "mem.gguf");
    EXPECT_EQ(f.file_size(), img.size());
    ASSERT_EQ(f.metadata().size(), kv.size());
    for (size_t i = 0; i < kv.size(); i++) {
        EXPECT_EQ(f.metadata()[i].first, kv[i].first);  // file order is kept
        expect_same_value(kv[i].second, f.metadata()[i].second, kv[i].first);
        ASSERT_NE(f.find(kv[i].first), nullptr);
    }
    EXPECT_TRUE(f.tensors().empty());
    EXPECT_EQ(f.find("t.missing"), nullptr);
}

TEST(GgufRoundTrip, ReaderFillsSignedAndUnsignedFields) {
    GgufWriter w;
    w.set("u", GgufValue::make_uint(VT::UINT16, 7));
    w.set("i", GgufValue::make_int(VT::INT8, -3));
    std::vector<uint8_t> img = w.serialize();
    GgufFile f = GgufFile::parse(img.data(), img.size(), "m");
    EXPECT_EQ(f.find("u")->i64, 7);
    EXPECT_EQ(f.find("i")->i64, -3);
    EXPECT_TRUE(f.find("u")->is_integer());
    EXPECT_FALSE(f.find("u")->is_float());
}

struct TensorCase {
    const char* name;
    GgmlType type;
    std::vector<int64_t> ne;
};

const std::vector<TensorCase> kTensorCases = {
    {"f32", GgmlType::F32, {8, 3}},
    {"f16", GgmlType::F16, {4, 2}},
    {"q4_0", GgmlType::Q4_0, {64, 2}},
    {"q8_0", GgmlType::Q8_0, {32}},
    {"q4_k", GgmlType::Q4_K, {256, 2}},
    {"q6_k", GgmlType::Q6_K, {256}},
    {"bf16", GgmlType::BF16, {2, 2, 2, 2}},
    {"iq2_xxs", GgmlType::IQ2_XXS, {256}},  // known, no kernel
    {"i32", GgmlType::I32, {5}},
    {"q4_1", GgmlType::Q4_1, {32, 1, 3}},
};

void check_tensors(const GgufFile& f, const uint8_t* base, uint64_t alignment) {
    ASSERT_EQ(f.tensors().size(), kTensorCases.size());
    EXPECT_EQ(f.data_offset() % alignment, 0u);
    for (size_t i = 0; i < kTensorCases.size(); i++) {
        const TensorCase& c = kTensorCases[i];
        const GgufTensor& t = f.tensors()[i];
        EXPECT_EQ(t.name, c.name);
        EXPECT_EQ(f.find_tensor(c.name), &t);
        EXPECT_EQ(t.type, c.type);
        ASSERT_EQ(t.n_dims, (int)c.ne.size());
        int64_t rows = 1;
        for (int d = 0; d < 4; d++) {
            EXPECT_EQ(t.ne[d], d < t.n_dims ? c.ne[d] : 1) << c.name << " ne[" << d << "]";
            if (d > 0) rows *= t.ne[d];
        }
        size_t nbytes = ggml_row_size(c.type, c.ne[0]) * (size_t)rows;
        EXPECT_EQ(t.nbytes, nbytes) << c.name;
        EXPECT_EQ(t.offset % alignment, 0u) << c.name;
        EXPECT_EQ(t.data, base + f.data_offset() + t.offset) << c.name;
        std::vector<uint8_t> want = pattern_bytes(nbytes, (uint32_t)i);
        EXPECT_EQ(std::memcmp(t.data, want.data(), nbytes), 0) << c.name;
    }
    EXPECT_EQ(f.find_tensor("nope"), nullptr);
}

GgufWriter tensor_writer(uint64_t alignment) {
    GgufWriter w(alignment);
    w.set_str("general.architecture", "test");
    for (size_t i = 0; i < kTensorCases.size(); i++)
        add_pattern_tensor(w, kTensorCases[i].name, kTensorCases[i].type, kTensorCases[i].ne, (uint32_t)i);
    return w;
}

TEST(GgufRoundTrip, TensorsDefaultAlignment) {
    std::vector<uint8_t> img = tensor_writer(32).serialize();
    GgufFile f = GgufFile::parse(img.data(), img.size(), "mem");
    EXPECT_EQ(f.alignment(), 32u);
    EXPECT_FALSE(f.has("general.alignment"));
    check_tensors(f, img.data(), 32);
}

TEST(GgufRoundTrip, TensorsCustomAlignment) {
    std::vector<uint8_t> img = tensor_writer(64).serialize();
    GgufFile f = GgufFile::parse(img.data(), img.size(), "mem");
    EXPECT_EQ(f.alignment(), 64u);
    EXPECT_EQ(f.get_int("general.alignment"), 64);
    EXPECT_EQ(img.size() % 64, 0u);  // every tensor, the last included, is padded
    check_tensors(f, img.data(), 64);
}

TEST(GgufRoundTrip, VersionTwoReads) {
    std::vector<uint8_t> img = tensor_writer(32).serialize();
    img[4] = 2;
    GgufFile f = GgufFile::parse(img.data(), img.size(), "mem");
    EXPECT_EQ(f.version(), 2u);
    check_tensors(f, img.data(), 32);
}

TEST(GgufRoundTrip, MetadataOnlyFileMayEndBeforeDataSection) {
    test::RawGguf r;
    r.header(3, 0, 1);
    r.key("a", VT::UINT8);
    r.put<uint8_t>(9);
    GgufFile f = GgufFile::parse(r.b.data(), r.b.size(), "mem");
    EXPECT_EQ(f.get_int("a"), 9);
    EXPECT_EQ(f.data_offset(), 64u);
}

TEST(GgufWriter, Deterministic) {
    std::vector<uint8_t> a = tensor_writer(32).serialize();
    std::vector<uint8_t> b = tensor_writer(32).serialize();
    EXPECT_EQ(a, b);
    EXPECT_EQ(tensor_writer(32).serialize(), tensor_writer(32).serialize());
}

TEST(GgufWriter, SetReplacesInPlace) {
    GgufWriter w;
    w.set_u32("a", 1);
    w.set_u32("b", 2);
    w.set_str("a", "x");
    std::vector<uint8_t> img = w.serialize();
    GgufFile f = GgufFile::parse(img.data(), img.size(), "mem");
    ASSERT_EQ(f.metadata().size(), 2u);
    EXPECT_EQ(f.metadata()[0].first, "a");
    EXPECT_EQ(f.get_str("a"), "x");
}

TEST(GgufWriter, WriteAndOpen) {
    std::string path = testing::TempDir() + "bee_gguf_rt_" + std::to_string(getpid()) + ".gguf";
    GgufWriter w = tensor_writer(32);
    w.write(path);
    std::vector<uint8_t> img = w.serialize();
    {
        GgufFile f = GgufFile::open(path);
        EXPECT_EQ(f.path(), path);
        EXPECT_EQ(f.file_size(), img.size());
        EXPECT_EQ(std::memcmp(f.tensors()[0].data - f.data_offset() - f.tensors()[0].offset, img.data(), img.size()),
                  0);
        EXPECT_EQ((uintptr_t)(f.tensors()[0].data) % 32, 0u);  // mmap base is page aligned
        check_tensors(f, f.tensors()[0].data - f.data_offset() - f.tensors()[0].offset, 32);
        GgufFile copy = f;  // copies share the mapping
        EXPECT_EQ(copy.tensors()[1].data, f.tensors()[1].data);
    }
    std::remove(path.c_str());
}

TEST(GgufWriter, WriteFailureNamesPath) {
    try {
        tensor_writer(32).write("/nonexistent-dir/x.gguf");
        FAIL() << "expected Error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/x.gguf: cannot write: No such file"), std::string::npos)
            << e.what();
    }
}

TEST(GgufWriter, RejectsBadInput) {
    GgufWriter w;
    float f[8] = {};
    w.add_tensor("a", GgmlType::F32, {8}, f, sizeof(f));
    EXPECT_THROW(w.add_tensor("a", GgmlType::F32, {8}, f, sizeof(f)), Error);       // duplicate
    EXPECT_THROW(w.add_tensor("b", GgmlType::F32, {8}, f, 16), Error);              // wrong byte count
    EXPECT_THROW(w.add_tensor("c", GgmlType::Q4_0, {8}, f, 4), Error);              // ne[0] not whole blocks
    EXPECT_THROW(w.add_tensor("d", GgmlType::F32, {8, 0}, f, 0), Error);            // zero dim
    EXPECT_THROW(w.add_tensor("e", GgmlType::F32, {1, 1, 1, 1, 8}, f, 32), Error);  // 5 dims
    EXPECT_THROW(w.add_tensor("f", (GgmlType)4, {8}, f, 32), Error);                // unknown type
    EXPECT_THROW(w.add_tensor("", GgmlType::F32, {8}, f, sizeof(f)), Error);        // empty name
    EXPECT_THROW(w.set_u32("", 1), Error);

    GgufWriter range;
    range.set("x", GgufValue::make_uint(VT::UINT8, 256));
    EXPECT_THROW(range.serialize(), Error);
    GgufWriter mixed;
    mixed.set("x", GgufValue::make_array(VT::UINT8, {GgufValue::make_str("s")}));
    EXPECT_THROW(mixed.serialize(), Error);
    EXPECT_THROW(GgufWriter(48).serialize(), Error);
    GgufWriter disagree(64);
    disagree.set_u32("general.alignment", 32);
    EXPECT_THROW(disagree.serialize(), Error);
    GgufWriter agree(64);
    agree.set_u32("general.alignment", 64);
    EXPECT_NO_THROW(agree.serialize());
}

// ---- typed getters ----

GgufFile getter_file(std::vector<uint8_t>& img) {
    GgufWriter w;
    w.set_str("s", "hello");
    w.set_u32("u32", 42);
    w.set("u64big", GgufValue::make_uint(VT::UINT64, UINT64_MAX));
    w.set("i8", GgufValue::make_int(VT::INT8, -5));
    w.set_f32("f", 0.25f);
    w.set_bool("b", true);
    w.set_str_array("sa", {"x", "y"});
    w.set_f32_array("fa", {1.0f, -2.5f});
    w.set_i32_array("ia", {7, -8});
    w.set("u8a", GgufValue::make_array(VT::UINT8, {GgufValue::make_uint(VT::UINT8, 3)}));
    img = w.serialize();
    return GgufFile::parse(img.data(), img.size(), "g.gguf");
}

TEST(GgufGetters, Values) {
    std::vector<uint8_t> img;
    GgufFile f = getter_file(img);
    EXPECT_EQ(f.get_str("s"), "hello");
    EXPECT_EQ(f.get_str("nope", "dflt"), "dflt");
    EXPECT_EQ(f.get_int("u32"), 42);
    EXPECT_EQ(f.get_int("i8"), -5);
    EXPECT_EQ(f.get_int("nope", -1), -1);
    EXPECT_EQ(f.get_float("f"), 0.25);
    EXPECT_EQ(f.get_float("u32"), 42.0);  // integers accepted
    EXPECT_EQ(f.get_float("i8"), -5.0);
    EXPECT_EQ(f.get_float("nope", 1.5), 1.5);
    EXPECT_TRUE(f.get_bool("b", false));
    EXPECT_FALSE(f.get_bool("nope", false));
    EXPECT_EQ(f.get_str_array("sa"), (std::vector<std::string>{"x", "y"}));
    EXPECT_EQ(f.get_float_array("fa"), (std::vector<float>{1.0f, -2.5f}));
    EXPECT_EQ(f.get_float_array("ia"), (std::vector<float>{7.0f, -8.0f}));
    EXPECT_EQ(f.get_int_array("ia"), (std::vector<int64_t>{7, -8}));
    EXPECT_EQ(f.get_int_array("u8a"), (std::vector<int64_t>{3}));
}

TEST(GgufGetters, Errors) {
    std::vector<uint8_t> img;
    GgufFile f = getter_file(img);
    EXPECT_EQ(error_of([&] { f.get_int("nope"); }), "g.gguf: metadata key 'nope': missing");
    EXPECT_EQ(error_of([&] { f.get_int("s"); }), "g.gguf: metadata key 's': has type string, expected integer");
    EXPECT_EQ(error_of([&] { f.get_int("s", 3); }), "g.gguf: metadata key 's': has type string, expected integer");
    EXPECT_EQ(error_of([&] { f.get_str("u32"); }), "g.gguf: metadata key 'u32': has type uint32, expected string");
    EXPECT_EQ(error_of([&] { f.get_float("b"); }), "g.gguf: metadata key 'b': has type bool, expected float");
    EXPECT_EQ(error_of([&] { f.get_bool("u32", true); }), "g.gguf: metadata key 'u32': has type uint32, expected bool");
    EXPECT_EQ(error_of([&] { f.get_str_array("ia"); }),
              "g.gguf: metadata key 'ia': has type array of int32, expected array of string");
    EXPECT_EQ(error_of([&] { f.get_int_array("fa"); }),
              "g.gguf: metadata key 'fa': has type array of float32, expected array of integer");
    EXPECT_EQ(error_of([&] { f.get_float_array("s"); }),
              "g.gguf: metadata key 's': has type string, expected array of float or integer");
    EXPECT_EQ(error_of([&] { f.get_str_array("nope"); }), "g.gguf: metadata key 'nope': missing");
    EXPECT_NE(error_of([&] { f.get_int("u64big"); }).find("does not fit int64"), std::string::npos);
}

}  // namespace
}  // namespace bee
