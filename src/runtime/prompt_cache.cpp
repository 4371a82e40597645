// runtime/prompt_cache: the RAM prompt cache (see the header).
#include "runtime/prompt_cache.h"

#include <algorithm>

namespace bee::runtime {

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) n++;
    return n;
}

size_t ram_cut_point(const SeqState& st, size_t p) {
    const size_t end = (size_t)st.n_cells();
    if (p >= end) return end;
    if (st.recurrent.empty()) return p;
    size_t c = 0;
    for (int32_t k : st.recurrent_cp_pos)
        if ((size_t)k <= p) c = std::max(c, (size_t)k);
    return c;
}

void PromptCacheRam::save(std::vector<int32_t> tokens, SeqState state) {
    Entry e;
    e.tokens = std::move(tokens);
    e.state = std::move(state);
    if (e.bytes() > limit_) return;
    for (auto it = entries_.begin(); it != entries_.end();) {
        const bool covered = it->state.lora == e.state.lora && it->tokens.size() <= e.tokens.size() &&
                             common_prefix(it->tokens, e.tokens) == it->tokens.size() &&
                             ram_cut_point(e.state, it->tokens.size()) == it->tokens.size();
        if (covered) {
            bytes_ -= it->bytes();
            it = entries_.erase(it);
        } else {
            ++it;
        }
    }
    bytes_ += e.bytes();
    entries_.push_front(std::move(e));
    while (bytes_ > limit_ && !entries_.empty()) {
        bytes_ -= entries_.back().bytes();
        entries_.pop_back();
    }
}

const PromptCacheRam::Entry* PromptCacheRam::best(const std::vector<int32_t>& prompt, const std::vector<float>& lora,
                                                  size_t min_prefix, size_t* prefix) {
    auto best = entries_.end();
    size_t best_n = min_prefix > 0 ? min_prefix - 1 : 0;
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (it->state.lora != lora) continue;  // K/V computed under other LoRA scales
        const size_t n = common_prefix(it->tokens, prompt);
        if (n > best_n) {
            best_n = n;
            best = it;
        }
    }
    if (best == entries_.end()) return nullptr;
    entries_.splice(entries_.begin(), entries_, best);  // most recently used
    *prefix = best_n;
    return &entries_.front();
}

}  // namespace bee::runtime
