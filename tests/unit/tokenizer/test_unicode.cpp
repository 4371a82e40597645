// tests/unit/tokenizer/test_unicode: UTF-8 validation and U+FFFD policy, the GPT-2 byte table, and
// the regex splitter (matches and gaps kept, empty matches cut).
#include <gtest/gtest.h>

#include "tokenizer/pretokenize.h"
#include "tokenizer/unicode.h"

namespace bee {
namespace {

std::vector<std::string> pieces(const RegexSplitter& s, const std::string& text) {
    std::vector<std::string> out;
    for (const TextRange& r : s.split(text)) out.push_back(text.substr(r.start, r.len));
    return out;
}

TEST(Unicode, Utf8Decode) {
    uint32_t cp = 0;
    size_t bad = 0;
    EXPECT_EQ(utf8_decode("\xF0\x9F\xA6\x99", 4, &cp), 4);
    EXPECT_EQ(cp, 0x1F999u);
    EXPECT_EQ(utf8_decode("\xF0\x9F", 2, &cp), -1);  // truncated
    EXPECT_EQ(utf8_decode("\xF0\x9F"
                          "A",
                          3, &cp, &bad),
              0);  // broken: maximal subpart is 2 bytes
    EXPECT_EQ(bad, 2u);
    EXPECT_EQ(utf8_decode("\xC0\xAF", 2, &cp, &bad), 0);  // overlong
    EXPECT_EQ(utf8_decode("\xED\xA0\x80", 3, &cp), 0);    // surrogate
    EXPECT_TRUE(utf8_is_valid("caf\xC3\xA9"));
    EXPECT_FALSE(utf8_is_valid("caf\xC3"));
    EXPECT_EQ(utf8_sanitize("a\xF0\x9F"
                            "b\xFF"),
              "a\xEF\xBF\xBD"
              "b\xEF\xBF\xBD");
}

TEST(Unicode, Gpt2ByteTable) {
    EXPECT_EQ(gpt2_byte_to_utf8(' '), "\xC4\xA0");   // Ġ
    EXPECT_EQ(gpt2_byte_to_utf8('\n'), "\xC4\x8A");  // Ċ
    EXPECT_EQ(gpt2_byte_to_utf8('a'), "a");
    for (int b = 0; b < 256; ++b) {
        uint32_t cp = 0;
        const std::string& s = gpt2_byte_to_utf8((uint8_t)b);
        ASSERT_GT(utf8_decode(s.data(), s.size(), &cp), 0);
        EXPECT_EQ(gpt2_cp_to_byte(cp), b);
    }
    EXPECT_EQ(gpt2_cp_to_byte(0x2581), -1);
}

TEST(PreTokenizer, Gpt2Pattern) {
    RegexSplitter s(find_pre_tokenizer("gpt-2")->regexes);
    EXPECT_EQ(pieces(s, "Hello world's  test\n\nok"),
              (std::vector<std::string>{"Hello", " world", "'s", " ", " test", "\n", "\n", "ok"}));
    EXPECT_TRUE(s.split("").empty());
}

TEST(PreTokenizer, SequenceKeepsGaps) {
    RegexSplitter s(find_pre_tokenizer("starcoder")->regexes);  // digits one by one, then gpt-2
    EXPECT_EQ(pieces(s, "ab 123x"), (std::vector<std::string>{"ab", " ", "1", "2", "3", "x"}));
    RegexSplitter l(find_pre_tokenizer("llama-bpe")->regexes);
    EXPECT_EQ(pieces(l, "1234567 I'M"), (std::vector<std::string>{"123", "456", "7", " I", "'M"}));
}

TEST(PreTokenizer, EmptyMatchesCut) {
    RegexSplitter s({R"(\p{N}+)", R"((?=(\d{3})+(?!\d)))"});  // superbpe-style digit grouping
    EXPECT_EQ(pieces(s, "a1234567"), (std::vector<std::string>{"a", "1", "234", "567"}));
}

// Long pre-tokens must not overflow the JIT stack or backtracking limits (group repeats in gpt-4o).
TEST(PreTokenizer, LongInputs) {
    const std::string word(200000, 'a'), spaces(200000, ' '), mixed = "Ab" + std::string(100000, 'c') + "D";
    for (const char* name : {"gpt-2", "llama3", "gpt-4o", "tekken", "deepseek-coder"}) {
        RegexSplitter s(find_pre_tokenizer(name)->regexes);
        for (const std::string* text : {&word, &spaces, &mixed}) {
            size_t total = 0;
            for (const TextRange& r : s.split(*text)) total += r.len;
            EXPECT_EQ(total, text->size()) << name;
        }
    }
}

TEST(PreTokenizer, Names) {
    EXPECT_NE(find_pre_tokenizer(""), nullptr);  // missing key: default
    EXPECT_EQ(find_pre_tokenizer("qwen2"), find_pre_tokenizer("deepseek-r1-qwen"));
    EXPECT_EQ(find_pre_tokenizer("jina-v9-xx"), find_pre_tokenizer("gpt-2"));
    EXPECT_EQ(find_pre_tokenizer("nonsense"), nullptr);
    for (const char* n : {"default", "llama3", "qwen2", "smollm", "gpt-2", "starcoder", "deepseek-coder", "phi-2",
                          "mpt", "refact", "falcon", "olmo", "dbrx", "tekken", "gpt-4o", "deepseek-v3", "poro-chat"}) {
        const PreTokenizerSpec* spec = find_pre_tokenizer(n);
        ASSERT_NE(spec, nullptr) << n;
        RegexSplitter compiled(spec->regexes);  // every table regex compiles
        EXPECT_FALSE(compiled.split("Hello, world 123!").empty()) << n;
    }
}

}  // namespace
}  // namespace bee
