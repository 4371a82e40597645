// tokenizer/bpe: byte-level BPE (tokenizer.ggml.model = "gpt2"): pre-tokenizer regexes, GPT-2 byte
// mapping, merges applied by rank.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/pretokenize.h"
#include "tokenizer/vocab.h"

namespace bee {

class BpeModel {
public:
    // Builds the merge-rank tables from v.merges and compiles the regexes of v.pre_spec.
    explicit BpeModel(const Vocab& v);

    // Appends the tokens of plain text `text` (any bytes; invalid UTF-8 becomes U+FFFD first).
    void tokenize(const Vocab& v, std::string_view text, std::vector<int32_t>& out) const;

private:
    struct Merge {
        int32_t rank;
        int32_t result;  // id of the merged token, -1 if the vocabulary lacks it
    };
    struct Scratch;

    const Merge* find_merge(std::string_view word, const Scratch& s, int32_t l, int32_t r) const;
    void tokenize_word(const Vocab& v, std::string_view word, Scratch& s, std::vector<int32_t>& out) const;

    RegexSplitter splitter_;
    std::unordered_map<uint64_t, Merge> by_id_;  // (left id << 32 | right id) -> merge
    // Merges whose halves are not both tokens, keyed "left right" (GPT-2 encoded text).
    std::unordered_map<std::string, Merge, StringHash, std::equal_to<>> by_text_;
    int32_t byte_id_[256];  // id of the one-character token of each byte's GPT-2 image, -1 if none
};

}  // namespace bee
