// sample/grammar_scan: the whole-vocabulary check of a grammar state, walking the vocabulary as a prefix
// trie so that tokens sharing a prefix share the matcher's steps for it (see GrammarMatcher::allows_each).
#include <algorithm>

#include "sample/grammar.h"

namespace bee {

const GrammarVocab::Trie& GrammarVocab::trie() const {
    std::call_once(trie_once_, [this] {
        Trie& t = trie_;
        for (size_t id = 0; id < text.size(); id++)
            if (!text[id].empty() && !(id < is_eog.size() && is_eog[id])) t.order.push_back((int32_t)id);
        std::sort(t.order.begin(), t.order.end(),
                  [this](int32_t a, int32_t b) { return text[a] != text[b] ? text[a] < text[b] : a < b; });
        t.lcp.resize(t.order.size());
        for (size_t k = 0; k < t.order.size(); k++) {
            const std::string& cur = text[t.order[k]];
            t.max_len = std::max(t.max_len, cur.size());
            if (k == 0) continue;
            const std::string& prev = text[t.order[k - 1]];
            const auto [a, b] = std::mismatch(prev.begin(), prev.end(), cur.begin(), cur.end());
            t.lcp[k] = (uint32_t)(a - prev.begin());
        }
    });
    return trie_;
}

// note: the tokens come in byte order, so those under one prefix are consecutive; the state after each
// prefix length of the current token is kept (levels), the next token restarts from the prefix it shares,
// and a prefix that cannot continue skips every following token that shares it.
bool GrammarMatcher::allows_each(const GrammarVocab& v, std::vector<uint8_t>& ok, size_t max_work) const {
    const GrammarVocab::Trie& trie = v.trie();
    std::vector<ScanLevel> level(trie.max_len + 1);         // level[d]: the state after d bytes of the token
    std::vector<std::vector<Stack>> own(trie.max_len + 1);  // own[d]: stacks after a character ended at byte d
    level[0] = ScanLevel{-1, partial_cp_, partial_min_, partial_left_};
    constexpr size_t kNone = SIZE_MAX;
    size_t valid = 0;     // level[0..valid] hold the current token's prefixes
    size_t dead = kNone;  // the previous token's first dead + 1 bytes cannot continue
    const size_t work0 = work_done_;
    for (size_t k = 0; k < trie.order.size(); k++) {
        if (work_done_ - work0 > max_work) return false;
        const int32_t id = trie.order[k];
        const std::string& t = v.text[id];
        const size_t shared = trie.lcp[k];
        if (dead != kNone && shared > dead) continue;  // starts with the prefix that failed
        dead = kNone;
        size_t d = std::min(shared, valid);
        if (d == 0 && quick_reject(t)) {
            dead = 0;
            valid = 0;
            continue;
        }
        for (; d < t.size(); d++) {
            if (!take_byte((unsigned char)t[d], level[d], level[d + 1], (int)d + 1, own)) {
                dead = d;
                break;
            }
        }
        valid = d;
        if (dead != kNone) continue;
        const ScanLevel& end = level[t.size()];
        if (end.left > 0 && !partial_fits(end.src < 0 ? stacks_ : own[end.src], end.cp, end.min, end.left)) continue;
        ok[id] = 1;
    }
    return true;
}

}  // namespace bee
