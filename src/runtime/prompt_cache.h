// runtime/prompt_cache: --cache-ram, a host-RAM store of slots' KV (tokens + sequence state) so a prompt
// whose prefix was computed before, on a slot since taken by another prompt, is restored instead of
// recomputed. Entries are their tokens and the LoRA scales their K/V was computed under (saving the same
// tokens twice keeps one), looked up by longest common prefix under the asked scales, and evicted least
// recently used first beyond the byte limit.
#pragma once
#include <cstddef>
#include <cstdint>
#include <list>
#include <vector>

#include "kv/kv_state.h"

namespace bee::runtime {

// Length of the longest common prefix of two token sequences.
size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b);

// Where a stored state can restart a prompt sharing its first p tokens: p, except that recurrent state exists
// only at the state's end and at its checkpoints (the largest of those <= p, or 0).
size_t ram_cut_point(const SeqState& st, size_t p);

class PromptCacheRam {
public:
    struct Entry {
        std::vector<int32_t> tokens;  // tokens whose K/V the state holds (position i = tokens[i])
        SeqState state;
        size_t bytes() const { return state.bytes() + tokens.size() * sizeof(int32_t); }
    };

    explicit PromptCacheRam(size_t limit_bytes) : limit_(limit_bytes) {}

    // Stores an entry (most recently used), dropping entries computed under the same LoRA scales
    // (SeqState::lora) whose tokens are a prefix of it (and, with recurrent state, end at one of its cut points), then the least recently used ones until the store
    // fits its limit. An entry larger than the limit is not kept.
    void save(std::vector<int32_t> tokens, SeqState state);
    // The entry computed under LoRA scales `lora` sharing the longest prefix with `prompt` (at least
    // min_prefix tokens), marked recently used; nullptr if none. *prefix receives the shared length.
    const Entry* best(const std::vector<int32_t>& prompt, const std::vector<float>& lora, size_t min_prefix,
                      size_t* prefix);

    size_t bytes() const { return bytes_; }
    size_t size() const { return entries_.size(); }

private:
    size_t limit_, bytes_ = 0;
    std::list<Entry> entries_;  // most recently used first
};

}  // namespace bee::runtime
