// spec/drafters/ngram_cache: llama.cpp's lookup-cache n-gram statistics (modelfree-and-server.md A.3.1)
// and their file format, shared by the ngram-cache drafter and its tests.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace bee {

constexpr int kNgramCacheMax = 4;     // LLAMA_NGRAM_MAX: longest key
constexpr int kNgramCacheStatic = 2;  // LLAMA_NGRAM_STATIC: key length of the static cache

using NgramKey = std::array<int32_t, kNgramCacheMax>;  // unused slots are -1
struct NgramKeyHash {
    size_t operator()(const NgramKey& k) const {
        uint64_t h = 1469598103934665603ull;
        for (int32_t t : k) h = (h ^ (uint32_t)t) * 1099511628211ull;
        return (size_t)h;
    }
};
using NgramHistogram = std::unordered_map<int32_t, int32_t>;  // next token -> count
using NgramCache = std::unordered_map<NgramKey, NgramHistogram, NgramKeyHash>;

NgramKey ngram_key(const int32_t* tokens, int n);
// Counts, for every position i in [from, tokens.size()) and key length 1..4, key = the n tokens before i
// -> tokens[i].
void ngram_cache_update(NgramCache& c, const std::vector<int32_t>& tokens, int from);
void ngram_cache_merge(NgramCache& into, const NgramCache& from);
// Binary file, native endianness: repeated {int32 key[4], int32 n, n x {int32 token, int32 count}}.
// Load throws Error naming the file and byte offset of a truncated or malformed record.
NgramCache ngram_cache_load(const std::string& path);
void ngram_cache_save(const NgramCache& c, const std::string& path);

}  // namespace bee
