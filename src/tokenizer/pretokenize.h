// tokenizer/pretokenize: the BPE pre-tokenizers named by tokenizer.ggml.pre and the PCRE2 regex
// splitter that cuts text into pre-tokens (words) before the merges run.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace bee {

// One pre-tokenizer: regexes applied in sequence (each splits the pieces left by the previous one,
// keeping both matches and the text between them, as llama.cpp's unicode_regex_split does) and
// the vocab flags llama.cpp ties to the name.
struct PreTokenizerSpec {
    std::vector<const char*> names;  // tokenizer.ggml.pre values that select it
    std::vector<const char*> regexes;
    bool ignore_merges = false;
    bool add_bos = false;  // default for tokenizer.ggml.add_bos_token
    bool no_bos = false;   // the vocab has no BOS token unless the file names one
    // Set for names llama.cpp knows that Bee does not implement: why (loading such a vocab is an Error).
    const char* unsupported = nullptr;
};

// The spec for a tokenizer.ggml.pre value ("" means "default"); nullptr if unknown.
const PreTokenizerSpec* find_pre_tokenizer(std::string_view name);
// "default, llama-bpe, ..." for error messages.
std::string supported_pre_tokenizers();

struct TextRange {
    uint32_t start;
    uint32_t len;
};

// Compiled regexes of one pre-tokenizer (UTF + UCP, JIT when available). Immutable after
// construction, so split() may run on several threads at once.
class RegexSplitter {
public:
    explicit RegexSplitter(const std::vector<const char*>& patterns);
    ~RegexSplitter();
    RegexSplitter(const RegexSplitter&) = delete;
    RegexSplitter& operator=(const RegexSplitter&) = delete;

    // Splits valid UTF-8 `text` into consecutive non-empty byte ranges covering all of it.
    std::vector<TextRange> split(std::string_view text) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace bee
