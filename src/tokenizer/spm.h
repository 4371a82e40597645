// tokenizer/spm: SentencePiece-style BPE driven by token scores (tokenizer.ggml.model = "llama").
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

namespace bee {

struct Vocab;

// Tokenizes `text` (spaces already replaced by U+2581) by repeatedly merging the adjacent pair
// whose concatenation is the highest-scoring token; pieces left that are not tokens fall back
// to byte tokens <0xXX>. Appends to `out`.
void spm_tokenize(const Vocab& v, std::string_view text, std::vector<int32_t>& out);

}  // namespace bee
