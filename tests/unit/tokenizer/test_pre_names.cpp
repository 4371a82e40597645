// tests/unit/tokenizer/test_pre_names: every tokenizer.ggml.pre name llama.cpp knows is either a
// pre-tokenizer Bee runs (its regexes compile and split) or refused with the reason; spot checks of the
// splits that newer names added (DeepSeek LLM, digit groups, Kimi K2's Han runs).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizer/pretokenize.h"

namespace bee {
namespace {

// The names llama.cpp's llama-vocab.cpp maps to a pre-tokenizer type (2026-08).
const char* const kLlamaCppNames[] = {
    "default",
    "minicpm5",
    "llama3",
    "llama-v3",
    "llama-bpe",
    "falcon3",
    "falcon-h1",
    "pixtral",
    "midm-2.0",
    "lfm2",
    "jina-v5-nano",
    "deepseek-llm",
    "deepseek-coder",
    "deepseek-v3",
    "youtu",
    "falcon",
    "mpt",
    "starcoder",
    "gpt-2",
    "phi-2",
    "jina-es",
    "jina-de",
    "gigachat",
    "jina-v2-es",
    "jina-v2-de",
    "a.x-4.0",
    "mellum",
    "modern-bert",
    "jais-2",
    "gemma4",
    "granite-embed-multi-311m",
    "sarvam-moe",
    "jina-v1-en",
    "jina-v2-code",
    "roberta-bpe",
    "whitespace",
    "refact",
    "command-r",
    "qwen2",
    "deepseek-r1-qwen",
    "kormo",
    "f2llmv2",
    "qwen35",
    "stablelm2",
    "olmo",
    "dbrx",
    "smaug-bpe",
    "poro-chat",
    "glm4",
    "chatglm-bpe",
    "viking",
    "jais",
    "tekken",
    "smollm",
    "codeshell",
    "bloom",
    "gpt3-finnish",
    "exaone",
    "exaone4",
    "exaone-moe",
    "chameleon",
    "minerva-7b",
    "megrez",
    "gpt-4o",
    "llama4",
    "kanana2",
    "talkie",
    "granite-embed-multi-97m",
    "tiny_aya",
    "cohere2moe",
    "superbpe",
    "trillion",
    "granite-docling",
    "bailingmoe",
    "bailingmoe2",
    "llada-moe",
    "seed-coder",
    "hunyuan",
    "hunyuan-dense",
    "joyai-llm",
    "kimi-k2",
    "grok-2",
    "afmoe",
    "laguna",
    "minimax-m2",
    "solar-open",
    "mellum2",
};

std::vector<std::string> pieces(const char* pre, const std::string& text) {
    const PreTokenizerSpec* spec = find_pre_tokenizer(pre);
    RegexSplitter splitter(spec->regexes);
    std::vector<std::string> out;
    for (const TextRange& r : splitter.split(text)) out.push_back(text.substr(r.start, r.len));
    return out;
}

TEST(PreTokenizerNames, EveryLlamaCppNameIsKnown) {
    const std::string sample =
        "Hello, World! It's 2026: 1234567 tokens\n\t  \xe4\xbd\xa0\xe5\xa5\xbd \xc3\xa9t\xc3\xa9";
    for (const char* name : kLlamaCppNames) {
        SCOPED_TRACE(name);
        const PreTokenizerSpec* spec = find_pre_tokenizer(name);
        ASSERT_NE(spec, nullptr);
        if (spec->unsupported) continue;  // refused at load with this reason
        RegexSplitter splitter(spec->regexes);
        size_t covered = 0;
        for (const TextRange& r : splitter.split(sample)) {
            EXPECT_EQ(r.start, covered);
            covered += r.len;
        }
        EXPECT_EQ(covered, sample.size());
    }
}

TEST(PreTokenizerNames, RawUtf8BpeNamesAreRefusedWithAReason) {
    for (const char* name : {"gemma4", "sarvam-moe", "whitespace", "granite-embed-multi-311m"}) {
        const PreTokenizerSpec* spec = find_pre_tokenizer(name);
        ASSERT_NE(spec, nullptr);
        ASSERT_NE(spec->unsupported, nullptr);
        EXPECT_NE(std::string(spec->unsupported).find("not implemented"), std::string::npos);
        EXPECT_EQ(supported_pre_tokenizers().find(name), std::string::npos);
    }
}

TEST(PreTokenizerNames, DeepseekLlmSplitsWordsPunctuationAndDigits) {
    using V = std::vector<std::string>;
    EXPECT_EQ(pieces("deepseek-llm", "Hello world!! 42\nok"), (V{"Hello", " world", "!!", " ", "42", "\n", "ok"}));
}

TEST(PreTokenizerNames, DigitRunsGroupByThreeFromTheRight) {
    using V = std::vector<std::string>;
    EXPECT_EQ(pieces("afmoe", "1234567"), (V{"1", "234", "567"}));
    EXPECT_EQ(pieces("tiny_aya", "12345"), (V{"12", "345"}));
    EXPECT_EQ(pieces("superbpe", "1234567"), (V{"1", "234", "567"}));
}

TEST(PreTokenizerNames, KimiK2KeepsHanApartFromLatinWords) {
    using V = std::vector<std::string>;
    EXPECT_EQ(pieces("kimi-k2", "\xe4\xbd\xa0\xe5\xa5\xbdWorld's 12345"),
              (V{"\xe4\xbd\xa0\xe5\xa5\xbd", "World's", " ", "123", "45"}));
}

}  // namespace
}  // namespace bee
