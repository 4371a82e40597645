// tokenizer/vocab: the token table and tokenizer flags read from tokenizer.ggml.* (llama.cpp's
// llama_vocab::load rules: per-model defaults, special ids, EOG set, special-token attributes).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace bee {

class GgufFile;
struct PreTokenizerSpec;

// Token attribute bits (llama.cpp's llama_token_attr values).
constexpr uint32_t kAttrUndefined = 0;
constexpr uint32_t kAttrUnknown = 1u << 0;
constexpr uint32_t kAttrUnused = 1u << 1;
constexpr uint32_t kAttrNormal = 1u << 2;
constexpr uint32_t kAttrControl = 1u << 3;
constexpr uint32_t kAttrUserDefined = 1u << 4;
constexpr uint32_t kAttrByte = 1u << 5;
constexpr uint32_t kAttrLstrip = 1u << 7;
constexpr uint32_t kAttrRstrip = 1u << 8;

enum class VocabType { spm, bpe };

// std::string-keyed map that can be probed with a std::string_view without allocating.
struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

struct Vocab {
    VocabType type = VocabType::spm;
    std::string model;                           // tokenizer.ggml.model
    std::string pre;                             // tokenizer.ggml.pre ("" if absent)
    const PreTokenizerSpec* pre_spec = nullptr;  // BPE only

    std::vector<std::string> text;  // (n_vocab) raw vocab strings
    std::vector<float> score;       // (n_vocab) SPM merge scores, 0 if absent
    std::vector<uint32_t> attr;     // (n_vocab) kAttr* bits
    TokenMap token_to_id;
    std::vector<std::string> merges;  // BPE: "left right", rank = index

    int32_t bos = -1, eos = -1, eot = -1, eom = -1, unk = -1, sep = -1, pad = -1, mask = -1;
    int32_t fim_pre = -1, fim_suf = -1, fim_mid = -1, fim_pad = -1, fim_rep = -1, fim_sep = -1;

    bool add_bos = false;
    bool add_eos = false;
    bool add_space_prefix = false;  // SPM: prepend " " to text at the start and after special tokens
    bool ignore_merges = false;     // BPE: a pre-token that is itself a token is emitted whole

    std::vector<uint8_t> is_eog;          // (n_vocab) 1 for end-of-generation tokens
    std::vector<int32_t> special_tokens;  // control / user-defined / unknown ids, longest text first
    int32_t byte_token[256];              // SPM byte fallback id per byte (-1 if none)

    int32_t n_vocab() const { return (int32_t)text.size(); }
    // Id of the token whose text is exactly `s`, or -1.
    int32_t find(std::string_view s) const {
        auto it = token_to_id.find(s);
        return it == token_to_id.end() ? -1 : it->second;
    }
};

// Reads and validates the vocabulary. Throws Error naming the file and key on bad or missing
// data, an unsupported tokenizer.ggml.model or an unknown tokenizer.ggml.pre.
Vocab load_vocab(const GgufFile& f);

}  // namespace bee
