// tests/unit/tokenizer/test_vocab_files: every ../shared/data/vocab/ggml-vocab-*.gguf must reproduce
// its .out ids exactly (no BOS/EOS, special text not parsed) and, where lossless, round-trip.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <random>
#include <thread>

#include "tok_test_util.h"
#include "tokenizer/unicode.h"

namespace bee {
namespace {

std::vector<std::string> vocab_files() {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(test::vocab_dir(), ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind("ggml-vocab-", 0) == 0 && e.path().extension() == ".gguf") names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
}

TEST(VocabFiles, AllPresent) {
    const std::vector<std::string> names = vocab_files();
    for (const char* want : {"ggml-vocab-llama-spm.gguf", "ggml-vocab-phi-3.gguf", "ggml-vocab-gpt-2.gguf",
                             "ggml-vocab-mpt.gguf", "ggml-vocab-starcoder.gguf", "ggml-vocab-deepseek-coder.gguf"}) {
        EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want << " not in " << test::vocab_dir();
    }
}

class VocabFile : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        const std::string base = test::vocab_dir() + "/" + GetParam();
        static std::map<std::string, std::shared_ptr<Tokenizer>> cache;  // load each vocab once
        std::shared_ptr<Tokenizer>& t = cache[base];
        if (!t) t = test::load_tokenizer(base);
        tok_ = t;
        inputs_ = test::read_inp(base + ".inp");
        expected_ = test::read_out(base + ".out");
        ASSERT_FALSE(inputs_.empty());
        ASSERT_EQ(inputs_.size(), expected_.size()) << base;
    }
    std::shared_ptr<Tokenizer> tok_;
    std::vector<std::string> inputs_;
    std::vector<std::vector<int32_t>> expected_;
};

TEST_P(VocabFile, MatchesReferenceIds) {
    size_t matched = 0;
    for (size_t i = 0; i < inputs_.size(); ++i) {
        const std::vector<int32_t> got = tok_->encode(inputs_[i], false, false);
        if (got == expected_[i]) {
            ++matched;
            continue;
        }
        ADD_FAILURE() << GetParam() << " case " << i << " '" << inputs_[i]
                      << "'\n  expected: " << test::ids_str(expected_[i]) << "\n  got:      " << test::ids_str(got);
    }
    std::printf("[          ] %s: %zu/%zu lines match\n", GetParam().c_str(), matched, inputs_.size());
}

TEST_P(VocabFile, RoundTrips) {
    for (size_t i = 0; i < inputs_.size(); ++i) {
        const std::vector<int32_t> ids = tok_->encode(inputs_[i], false, false);
        EXPECT_EQ(tok_->decode(ids), inputs_[i]) << GetParam() << " case " << i;
    }
}

TEST_P(VocabFile, StreamDecoderMatchesDecode) {
    for (const std::string& s : inputs_) {
        const std::vector<int32_t> ids = tok_->encode(s, false, false);
        StreamDecoder sd(*tok_);
        std::string streamed;
        for (int32_t id : ids) streamed += sd.push(id);
        streamed += sd.flush();
        // decode() drops the SPM space prefix of the first token; the stream keeps it.
        const std::string want = (tok_->add_space_prefix() && !ids.empty() ? " " : "") + s;
        EXPECT_EQ(streamed, want);
    }
}

// Seeded random text: ASCII, multi-byte characters, whitespace runs, broken UTF-8, special-token text.
std::string random_text(std::mt19937& rng) {
    static const char* parts[] = {"a",
                                  "Z",
                                  " ",
                                  "  ",
                                  "\n",
                                  "\t",
                                  "0",
                                  "42",
                                  "'s",
                                  "!?",
                                  "\xC3\xA9",
                                  "\xE2\x96\x81",
                                  "\xF0\x9F\xA6\x99",
                                  "\xE4\xB8\xAD",
                                  "\xFF",
                                  "\xC3",
                                  "\xF0\x9F",
                                  "\x80",
                                  "<s>",
                                  "</s>",
                                  "<|endoftext|>",
                                  "\r\n",
                                  "\xC2\xA0",
                                  "\xE3\x80\x80"};
    std::string s;
    const int n = (int)(rng() % 40);
    for (int i = 0; i < n; ++i) s += parts[rng() % (sizeof(parts) / sizeof(parts[0]))];
    return s;
}

TEST_P(VocabFile, RandomTextRoundTrips) {
    std::mt19937 rng(1234);
    const bool spm = std::string(tok_->model_name()) == "llama";
    const std::string escaped_space = "\xE2\x96\x81";
    for (int i = 0; i < 300; ++i) {
        const std::string s = random_text(rng);
        const std::vector<int32_t> special = tok_->encode(s, true, true);  // must not crash
        for (int32_t id : special) ASSERT_TRUE(id >= 0 && id < tok_->n_vocab());
        const std::vector<int32_t> ids = tok_->encode(s, false, false);
        const std::string back = tok_->decode(ids, true);
        // Lossless for valid UTF-8 (BPE replaces broken UTF-8 with U+FFFD; SPM splits it by lead
        // byte as llama.cpp does) without a literal U+2581 (SPM's space) or phi-3's rstrip "</s>".
        const bool lossless = utf8_is_valid(s) && !(spm && s.find(escaped_space) != std::string::npos) &&
                              s.find("</s>") == std::string::npos;
        if (lossless) {
            EXPECT_EQ(back, s) << GetParam() << " #" << i;
        }
    }
}

// One Tokenizer shared by several threads (the regexes and tables are read-only).
TEST_P(VocabFile, ConcurrentEncode) {
    std::vector<std::vector<std::vector<int32_t>>> got(4);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < got.size(); ++t) {
        threads.emplace_back([&, t] {
            for (int rep = 0; rep < 5; ++rep) {
                got[t].clear();
                for (const std::string& s : inputs_) got[t].push_back(tok_->encode(s, false, false));
            }
        });
    }
    for (std::thread& th : threads) th.join();
    for (const auto& g : got) EXPECT_EQ(g, expected_);
}

INSTANTIATE_TEST_SUITE_P(Shared, VocabFile, ::testing::ValuesIn(vocab_files()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                             std::string n = info.param.substr(11, info.param.size() - 16);  // ggml-vocab-X.gguf
                             for (char& c : n) {
                                 if (!isalnum((unsigned char)c)) c = '_';
                             }
                             return n;
                         });

}  // namespace
}  // namespace bee
