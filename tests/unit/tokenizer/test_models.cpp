// tests/unit/tokenizer/test_models: the tokenizers of the two real models (`make models`):
// SmolLM2-135M (byte-level BPE, smollm pre-tokenizer) and Gemma 3 270M (SPM, no space prefix).
// Expected ids were checked by hand against the vocab strings (e.g. 905 = "Ġworld").
#include <gtest/gtest.h>

#include <chrono>

#include "tok_test_util.h"

namespace bee {
namespace {

using Ids = std::vector<int32_t>;

const Tokenizer* smollm() {
    static std::unique_ptr<Tokenizer> tok = test::load_model_tokenizer("SmolLM2-135M-Instruct.Q4_1.gguf");
    if (!tok) ADD_FAILURE() << "models/SmolLM2-135M-Instruct.Q4_1.gguf is missing: run `make models`";
    return tok.get();
}

const Tokenizer* gemma() {
    static std::unique_ptr<Tokenizer> tok = test::load_model_tokenizer("gemma-3-270m-q4_k_m.gguf");
    if (!tok) ADD_FAILURE() << "models/gemma-3-270m-q4_k_m.gguf is missing: run `make models`";
    return tok.get();
}

TEST(SmolLM2, Metadata) {
    const Tokenizer* t = smollm();
    ASSERT_TRUE(t);
    EXPECT_STREQ(t->model_name(), "gpt2");
    EXPECT_EQ(t->n_vocab(), 49152);
    EXPECT_EQ(t->bos(), 1);
    EXPECT_EQ(t->eos(), 2);
    EXPECT_FALSE(t->add_bos());
    EXPECT_FALSE(t->add_eos());
    EXPECT_TRUE(t->is_eog(2));   // <|im_end|> (eos)
    EXPECT_TRUE(t->is_eog(0));   // <|endoftext|>
    EXPECT_FALSE(t->is_eog(1));  // <|im_start|>
    EXPECT_EQ(t->token_type(1), TokenType::control);
    EXPECT_EQ(t->find_token("<|im_start|>"), 1);
}

TEST(SmolLM2, ChatTurnWithSpecialTokens) {
    const Tokenizer* t = smollm();
    ASSERT_TRUE(t);
    EXPECT_EQ(t->encode("<|im_start|>user", false, true), (Ids{1, 4093}));
    EXPECT_EQ(t->encode("<|im_start|>user\nHello world!<|im_end|>", true, true),
              (Ids{1, 4093, 198, 19556, 905, 17, 2}));
    // Without parse_special the markers are plain text.
    const Ids plain = t->encode("<|im_start|>user", false, false);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), 1), 0);
    EXPECT_EQ(t->decode(plain), "<|im_start|>user");
}

TEST(SmolLM2, PlainText) {
    const Tokenizer* t = smollm();
    ASSERT_TRUE(t);
    EXPECT_EQ(t->encode("The capital of France is", true, false), (Ids{504, 3575, 282, 4649, 314}));
    EXPECT_EQ(t->encode(" Paris", false, false), (Ids{7042}));
    EXPECT_EQ(t->encode("123", false, false), (Ids{33, 34, 35}));  // smollm splits digits
    EXPECT_EQ(t->token_to_piece(905, false), " world");
    EXPECT_EQ(t->token_to_piece(198, false), "\n");
    EXPECT_EQ(t->token_to_piece(1, false), "");
    EXPECT_EQ(t->token_to_piece(1, true), "<|im_start|>");
    EXPECT_EQ(t->decode({1, 4093}, true), "<|im_start|>user");
}

TEST(Gemma3, Metadata) {
    const Tokenizer* t = gemma();
    ASSERT_TRUE(t);
    EXPECT_STREQ(t->model_name(), "llama");
    EXPECT_EQ(t->n_vocab(), 262144);
    EXPECT_EQ(t->bos(), 2);
    EXPECT_EQ(t->eos(), 1);
    EXPECT_TRUE(t->add_bos());
    EXPECT_FALSE(t->add_eos());
    EXPECT_FALSE(t->add_space_prefix());
    EXPECT_TRUE(t->is_eog(1));    // <eos>
    EXPECT_TRUE(t->is_eog(106));  // <end_of_turn>
    EXPECT_FALSE(t->is_eog(105));
    EXPECT_EQ(t->token_type(107), TokenType::user_defined);  // "\n"
}

TEST(Gemma3, ChatTurnWithSpecialTokens) {
    const Tokenizer* t = gemma();
    ASSERT_TRUE(t);
    EXPECT_EQ(t->encode("<start_of_turn>user\nHello world", true, true), (Ids{2, 105, 2364, 107, 9259, 1902}));
    EXPECT_EQ(t->decode({2, 105, 2364, 107}, true), "<bos><start_of_turn>user\n");
    EXPECT_EQ(t->decode({2, 105, 2364, 107}, false), "user\n");
}

TEST(Gemma3, PlainText) {
    const Tokenizer* t = gemma();
    ASSERT_TRUE(t);
    EXPECT_EQ(t->encode("The capital of France is", false, false), (Ids{818, 5279, 529, 7001, 563}));
    EXPECT_EQ(t->encode("The capital of France is", true, false), (Ids{2, 818, 5279, 529, 7001, 563}));
    EXPECT_EQ(t->token_to_piece(9079, false), " Paris");
    const std::string text = "Hello world!\n\n  indented\tand tabs  ";
    EXPECT_EQ(t->decode(t->encode(text, false, false)), text);
}

TEST(Gemma3, EmojiSplitAcrossByteTokens) {
    const Tokenizer* t = gemma();
    ASSERT_TRUE(t);
    const Ids ids = t->encode("\xF0\x9F\xA6\x99", false, false);  // U+1F999 llama: not a token
    const Ids bytes = {t->find_token("<0xF0>"), t->find_token("<0x9F>"), t->find_token("<0xA6>"),
                       t->find_token("<0x99>")};
    ASSERT_EQ(ids, bytes);
    StreamDecoder sd(*t);
    EXPECT_EQ(sd.push(ids[0]), "");
    EXPECT_EQ(sd.push(ids[1]), "");
    EXPECT_EQ(sd.push(ids[2]), "");
    EXPECT_EQ(sd.push(ids[3]), "\xF0\x9F\xA6\x99");
    EXPECT_EQ(sd.flush(), "");
    // A truncated character is held back, then flushed as one U+FFFD.
    EXPECT_EQ(sd.push(t->find_token("Hello")), "Hello");
    EXPECT_EQ(sd.push(ids[0]), "");
    EXPECT_EQ(sd.push(ids[1]), "");
    EXPECT_EQ(sd.flush(), "\xEF\xBF\xBD");
}

// Not a timed test (DESIGN.md: benchmarks, not timed tests): prints the speed for the record.
TEST(Models, LargeTextSpeed) {
    std::string text;
    while (text.size() < 100 * 1024) {
        text += "The quick brown fox jumps over the lazy dog. 1234567 \xF0\x9F\xA6\x99 caf\xC3\xA9\n";
        text += "    def f(x):\n        return x * 2  # comment <|im_end|>\n";
    }
    for (const Tokenizer* t : {smollm(), gemma()}) {
        ASSERT_TRUE(t);
        const auto t0 = std::chrono::steady_clock::now();
        const Ids ids = t->encode(text, true, true);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("[          ] %s: %zu bytes -> %zu tokens in %.1f ms\n", t->model_name(), text.size(), ids.size(),
                    s * 1e3);
        EXPECT_EQ(t->decode(ids, true).substr(t->add_bos() ? 5 : 0), text);
    }
}

}  // namespace
}  // namespace bee
