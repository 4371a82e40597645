// tokenizer/special: cuts raw text into special-token and plain-text fragments before the
// SPM/BPE model runs (llama.cpp's tokenizer_st_partition).
#pragma once
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace bee {

struct Vocab;

struct Fragment {
    int32_t token;  // >= 0: this special token; -1: plain text [start, start + len)
    uint32_t start;
    uint32_t len;
};

class SpecialMatcher {
public:
    explicit SpecialMatcher(const Vocab& v);

    // Special tokens are taken longest first, each splitting every plain fragment it occurs in.
    // Control and unknown tokens count only if `parse_special`; user-defined tokens always do
    // (as in llama.cpp and Hugging Face tokenizers). lstrip/rstrip tokens eat adjacent spaces.
    std::vector<Fragment> partition(const Vocab& v, std::string_view text, bool parse_special) const;

private:
    // Byte trie over the texts of v.special_tokens, used to find which of them occur at all.
    int32_t child(int32_t node, uint8_t byte) const;
    std::unordered_map<uint64_t, int32_t> edges_;  // (node << 8 | byte) -> node
    std::vector<int32_t> node_token_;              // token ending at a node, -1 if none
    bool first_byte_[256] = {};
};

}  // namespace bee
