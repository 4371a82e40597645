// tests/unit/tokenizer/test_synthetic: small vocabularies written with GgufWriter: merge order,
// special-token partition rules, defaults, and the errors for bad tokenizer metadata.
#include <gtest/gtest.h>

#include "base/error.h"
#include "gguf/gguf_writer.h"
#include "tok_test_util.h"
#include "tokenizer/unicode.h"

namespace bee {
namespace {

using Ids = std::vector<int32_t>;

// Byte-level BPE vocab: ids 0..255 are the GPT-2 images of bytes 0..255, then `extra` tokens.
struct BpeVocab {
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    std::vector<std::string> merges;
    std::string pre = "gpt-2";

    BpeVocab() {
        for (int b = 0; b < 256; ++b) add(gpt2_byte_to_utf8((uint8_t)b));
    }
    int32_t add(const std::string& text, int32_t type = 1) {
        tokens.push_back(text);
        types.push_back(type);
        return (int32_t)tokens.size() - 1;
    }
    std::vector<uint8_t> image(const std::function<void(GgufWriter&)>& extra = {}) const {
        GgufWriter w;
        w.set_str("general.architecture", "llama");
        w.set_str("tokenizer.ggml.model", "gpt2");
        w.set_str("tokenizer.ggml.pre", pre);
        w.set_str_array("tokenizer.ggml.tokens", tokens);
        w.set_i32_array("tokenizer.ggml.token_type", types);
        w.set_str_array("tokenizer.ggml.merges", merges);
        if (extra) extra(w);
        return w.serialize();
    }
};

std::unique_ptr<Tokenizer> make(const std::vector<uint8_t>& img) {
    GgufFile f = GgufFile::parse(img.data(), img.size(), "synthetic.gguf");
    return Tokenizer::from_gguf(f);
}

std::string load_error(const std::vector<uint8_t>& img) {
    try {
        make(img);
    } catch (const Error& e) {
        return e.what();
    }
    ADD_FAILURE() << "expected an Error";
    return "";
}

int32_t byte_id(char c) { return (uint8_t)c; }

TEST(SyntheticBpe, MergesApplyByRank) {
    BpeVocab v;
    const int32_t ab = v.add("ab"), bc = v.add("bc");
    v.merges = {"a b", "b c"};
    EXPECT_EQ(make(v.image())->encode("abc", false, false), (Ids{ab, byte_id('c')}));
    v.merges = {"b c", "a b"};
    EXPECT_EQ(make(v.image())->encode("abc", false, false), (Ids{byte_id('a'), bc}));
}

TEST(SyntheticBpe, ByteMappingAndPreTokenizer) {
    BpeVocab v;
    const int32_t sp_h = v.add("\xC4\xA0h");  // "Ġh" = " h"
    v.merges = {"\xC4\xA0 h"};
    auto tok = make(v.image());
    // gpt-2 pre-tokenizer: "a" | " h" | "\n" -- the space is merged with the letter.
    EXPECT_EQ(tok->encode("a h\n", false, false), (Ids{byte_id('a'), sp_h, byte_id('\n')}));
    EXPECT_EQ(tok->token_to_piece(sp_h, false), " h");
    EXPECT_EQ(tok->token_to_piece(0, false), std::string(1, '\0'));
    // Invalid UTF-8 becomes U+FFFD before the byte mapping (as llama.cpp).
    EXPECT_EQ(tok->encode("\xFF", false, false), (Ids{0xEF, 0xBF, 0xBD}));
}

TEST(SyntheticBpe, SpecialTokensLongestFirst) {
    BpeVocab v;
    const int32_t start = v.add("<|im_start|>", 3);
    const int32_t startx = v.add("<|im_start|>x", 3);
    const int32_t user = v.add("<user>", 4);  // user-defined: matched even without parse_special
    auto tok = make(v.image());
    EXPECT_EQ(tok->encode("<|im_start|>x<|im_start|>", false, true), (Ids{startx, start}));
    const Ids plain = tok->encode("<|im_start|>", false, false);
    EXPECT_EQ(plain.size(), 12u);
    EXPECT_EQ(tok->encode("a<user>", false, false), (Ids{byte_id('a'), user}));
    EXPECT_EQ(tok->token_type(user), TokenType::user_defined);
    EXPECT_EQ(tok->token_to_piece(start, false), "");
    EXPECT_EQ(tok->token_to_piece(user, false), "<user>");
}

TEST(SyntheticBpe, EogAndDefaults) {
    BpeVocab v;
    const int32_t eot = v.add("<|eot_id|>", 3);
    const int32_t bos = v.add("<|begin_of_text|>", 3);
    v.pre = "llama-bpe";
    auto tok = make(v.image([&](GgufWriter& w) { w.set_u32("tokenizer.ggml.bos_token_id", (uint32_t)bos); }));
    EXPECT_TRUE(tok->add_bos());  // llama-bpe defaults to adding BOS
    EXPECT_TRUE(tok->is_eog(eot));
    EXPECT_EQ(tok->eot(), eot);
    EXPECT_EQ(tok->encode("a", true, false), (Ids{bos, byte_id('a')}));
    auto tok2 = make(v.image([&](GgufWriter& w) {
        w.set_u32("tokenizer.ggml.bos_token_id", (uint32_t)bos);
        w.set_bool("tokenizer.ggml.add_bos_token", false);
    }));
    EXPECT_EQ(tok2->encode("a", true, false), (Ids{byte_id('a')}));
}

TEST(SyntheticBpe, Errors) {
    BpeVocab v;
    v.pre = "no-such-pre";
    const std::string e = load_error(v.image());
    EXPECT_NE(e.find("synthetic.gguf"), std::string::npos) << e;
    EXPECT_NE(e.find("tokenizer.ggml.pre"), std::string::npos) << e;
    EXPECT_NE(e.find("'no-such-pre'"), std::string::npos) << e;
    EXPECT_NE(e.find("llama-bpe"), std::string::npos) << e;

    GgufWriter w;
    w.set_str("tokenizer.ggml.model", "t5");
    w.set_str_array("tokenizer.ggml.tokens", {"a"});
    const std::string e2 = load_error(w.serialize());
    EXPECT_NE(e2.find("tokenizer.ggml.model"), std::string::npos) << e2;
    EXPECT_NE(e2.find("'t5'"), std::string::npos) << e2;

    GgufWriter w3;
    w3.set_str("general.architecture", "llama");
    EXPECT_NE(load_error(w3.serialize()).find("tokenizer.ggml.model"), std::string::npos);

    BpeVocab dup;
    dup.add("a");
    EXPECT_NE(load_error(dup.image()).find("duplicate"), std::string::npos);

    EXPECT_THROW(make(BpeVocab().image())->token_to_piece(256, false), Error);
}

// SPM vocab: <unk>, <s>, </s>, 256 byte tokens, then scored pieces.
std::vector<uint8_t> spm_image(const std::vector<std::pair<std::string, float>>& pieces, bool space_prefix) {
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    std::vector<float> scores = {0, 0, 0};
    std::vector<int32_t> types = {2, 3, 3};
    for (int b = 0; b < 256; ++b) {
        char hex[8];
        snprintf(hex, sizeof(hex), "<0x%02X>", b);
        tokens.push_back(hex), scores.push_back(0), types.push_back(6);
    }
    for (const auto& [t, s] : pieces) tokens.push_back(t), scores.push_back(s), types.push_back(1);
    GgufWriter w;
    w.set_str("tokenizer.ggml.model", "llama");
    w.set_str_array("tokenizer.ggml.tokens", tokens);
    w.set_f32_array("tokenizer.ggml.scores", scores);
    w.set_i32_array("tokenizer.ggml.token_type", types);
    w.set_bool("tokenizer.ggml.add_space_prefix", space_prefix);
    return w.serialize();
}

TEST(SyntheticSpm, ScoresPickMerges) {
    // ids: 259 "▁", 260 "a", 261 "b", 262 "c", 263 "ab", 264 "bc", 265 "▁a"
    const std::string sp = "\xE2\x96\x81";
    auto tok =
        make(spm_image({{sp, -5}, {"a", -1}, {"b", -1}, {"c", -1}, {"ab", -3}, {"bc", -2}, {sp + "a", -4}}, true));
    EXPECT_TRUE(tok->add_bos());
    // "▁abc": bc (-2) beats ab (-3) and ▁a (-4); then ▁a.
    EXPECT_EQ(tok->encode("abc", true, false), (Ids{1, 265, 264}));
    EXPECT_EQ(tok->decode({265, 264}), "abc");
    EXPECT_EQ(tok->decode({1, 265, 264}), " abc");  // as llama_detokenize: only the very first token is stripped
    // Unknown characters fall back to bytes; the space prefix follows special tokens.
    EXPECT_EQ(tok->encode("\xC3\xA9", false, false), (Ids{259, 3 + 0xC3, 3 + 0xA9}));
    EXPECT_EQ(tok->encode("</s>a", false, true), (Ids{2, 265}));
    EXPECT_EQ(tok->token_to_piece(3 + 'x', false), "x");
}

TEST(SyntheticSpm, StreamDecoderReplacesInvalidBytes) {
    auto tok = make(spm_image({{"a", -1}}, false));
    StreamDecoder sd(*tok);
    EXPECT_EQ(sd.push(3 + 0xFF), "\xEF\xBF\xBD");  // never valid: replaced at once
    EXPECT_EQ(sd.push(3 + 0xE4), "");              // could still become a character
    EXPECT_EQ(sd.push(259),
              "\xEF\xBF\xBD"
              "a");  // ...but "a" breaks it
    EXPECT_EQ(sd.push(3 + 0xC3), "");
    EXPECT_EQ(sd.push(3 + 0xA9), "\xC3\xA9");
    EXPECT_EQ(sd.push(1), "");  // <s> renders only with special = true
    StreamDecoder sp(*tok, true);
    EXPECT_EQ(sp.push(1), "<s>");
}

TEST(SyntheticSpm, NoSpacePrefix) {
    const std::string sp = "\xE2\x96\x81";
    auto tok = make(spm_image({{sp, -5}, {"a", -1}, {sp + "a", -4}}, false));
    EXPECT_FALSE(tok->add_space_prefix());
    EXPECT_EQ(tok->encode("a a", false, false), (Ids{260, 261}));
    EXPECT_EQ(tok->decode({261}), " a");
}

}  // namespace
}  // namespace bee
