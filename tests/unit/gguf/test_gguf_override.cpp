// tests/unit/gguf/test_gguf_override: --override-kv specs (llama.cpp's KEY=TYPE:VALUE), their errors, and
// their effect on a parsed file (replace, add, refuse a different kind of value).
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "gguf/gguf_override.h"
#include "gguf/gguf_writer.h"

namespace bee {
namespace {

std::string parse_error(const std::string& spec) {
    try {
        parse_gguf_overrides(spec);
    } catch (const Error& e) {
        return e.what();
    }
    ADD_FAILURE() << "expected an Error for " << spec;
    return "";
}

TEST(GgufOverride, ParsesEachType) {
    const std::vector<GgufOverride> o = parse_gguf_overrides(
        "llama.context_length=int:8192,llama.rope.freq_base=float:5e5,a.b=bool:true,"
        "tokenizer.ggml.pre=str:deepseek-llm");
    ASSERT_EQ(o.size(), 4u);
    EXPECT_EQ(o[0].key, "llama.context_length");
    EXPECT_EQ(o[0].value.type, GgufValueType::INT64);
    EXPECT_EQ(o[0].value.i64, 8192);
    EXPECT_EQ(o[1].value.f64, 5e5);
    EXPECT_EQ(o[2].value.type, GgufValueType::BOOL);
    EXPECT_EQ(o[2].value.u64, 1u);
    EXPECT_EQ(o[3].value.str, "deepseek-llm");
    EXPECT_EQ(parse_gguf_override("k=str:a:b=c").value.str, "a:b=c");  // the value may hold ':' and '='
    EXPECT_EQ(parse_gguf_override("k=int:-3").value.i64, -3);
}

TEST(GgufOverride, BadSpecsSayWhatIsWrong) {
    EXPECT_NE(parse_error("llama.context_length").find("KEY=TYPE:VALUE"), std::string::npos);
    EXPECT_NE(parse_error("=int:3").find("KEY=TYPE:VALUE"), std::string::npos);
    EXPECT_NE(parse_error("k=int").find("no TYPE"), std::string::npos);
    EXPECT_NE(parse_error("k=integer:3").find("unknown TYPE 'integer'"), std::string::npos);
    EXPECT_NE(parse_error("k=int:3.5").find("not an integer"), std::string::npos);
    EXPECT_NE(parse_error("k=int:").find("not an integer"), std::string::npos);
    EXPECT_NE(parse_error("k=float:abc").find("not a finite number"), std::string::npos);
    EXPECT_NE(parse_error("k=float:inf").find("not a finite number"), std::string::npos);
    EXPECT_NE(parse_error("k=bool:1").find("true or false"), std::string::npos);
    EXPECT_NE(parse_error("a=int:1,,b=int:2").find("KEY=TYPE:VALUE"), std::string::npos);
}

TEST(GgufOverride, AppliesToTheMetadata) {
    GgufWriter w;
    w.set_str("general.architecture", "llama");
    w.set_u32("llama.context_length", 2048);
    w.set_f32("llama.rope.freq_base", 10000.0f);
    const std::vector<uint8_t> img = w.serialize();
    GgufFile f = GgufFile::parse(img.data(), img.size(), "o.gguf");
    apply_gguf_overrides(f, parse_gguf_overrides("llama.context_length=int:512,llama.rope.freq_base=float:"
                                                 "500000,llama.rope.scaling.type=str:linear"));
    EXPECT_EQ(f.get_int("llama.context_length"), 512);
    EXPECT_EQ(f.get_float("llama.rope.freq_base"), 500000.0);
    EXPECT_EQ(f.get_str("llama.rope.scaling.type"), "linear");  // added
    EXPECT_EQ(f.metadata().size(), 4u);
    try {
        apply_gguf_overrides(f, parse_gguf_overrides("llama.context_length=str:long"));
        ADD_FAILURE() << "expected an Error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("the file stores"), std::string::npos) << e.what();
    }
    try {
        apply_gguf_overrides(f, parse_gguf_overrides("llama.rope.freq_base=int:5"));  // llama.cpp: a float key
        ADD_FAILURE() << "expected an Error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("llama.rope.freq_base"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace bee
