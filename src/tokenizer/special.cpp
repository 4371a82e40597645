// tokenizer/special: special-token partition. A byte trie finds which special tokens occur in the
// text; only those then run llama.cpp's longest-first splitting, so large special-token sets
// (Gemma has ~6,400) cost one pass over the text.
#include "tokenizer/special.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "tokenizer/vocab.h"

namespace bee {

SpecialMatcher::SpecialMatcher(const Vocab& v) {
    node_token_.push_back(-1);  // root
    for (int32_t id : v.special_tokens) {
        int32_t node = 0;
        for (char c : v.text[id]) {
            const uint64_t key = ((uint64_t)node << 8) | (uint8_t)c;
            auto it = edges_.find(key);
            if (it == edges_.end()) {
                it = edges_.emplace(key, (int32_t)node_token_.size()).first;
                node_token_.push_back(-1);
            }
            node = it->second;
        }
        if (node_token_[node] < 0) node_token_[node] = id;
        first_byte_[(uint8_t)v.text[id][0]] = true;
    }
}

int32_t SpecialMatcher::child(int32_t node, uint8_t byte) const {
    auto it = edges_.find(((uint64_t)node << 8) | byte);
    return it == edges_.end() ? -1 : it->second;
}

namespace {

bool is_space(char c) { return std::isspace((unsigned char)c) != 0; }

// Splits every plain fragment of `frags` at each occurrence of token `id` (left to right).
void split_on_token(const Vocab& v, std::string_view text, int32_t id, std::vector<Fragment>& frags) {
    const std::string& tok = v.text[id];
    const bool lstrip = v.attr[id] & kAttrLstrip, rstrip = v.attr[id] & kAttrRstrip;
    std::vector<Fragment> out;
    out.reserve(frags.size() + 2);
    for (const Fragment& fr : frags) {
        if (fr.token >= 0) {
            out.push_back(fr);
            continue;
        }
        size_t s = fr.start;
        const size_t e = (size_t)fr.start + fr.len;
        const std::string_view hay = text.substr(0, e);
        while (true) {
            const size_t pos = hay.find(tok, s);
            if (pos == std::string_view::npos) {
                if (e > s) out.push_back({-1, (uint32_t)s, (uint32_t)(e - s)});
                break;
            }
            size_t left_end = pos;
            if (lstrip) {
                while (left_end > s && is_space(text[left_end - 1])) --left_end;
            }
            if (left_end > s) out.push_back({-1, (uint32_t)s, (uint32_t)(left_end - s)});
            out.push_back({id, (uint32_t)pos, (uint32_t)tok.size()});
            s = pos + tok.size();
            if (rstrip) {
                while (s < e && is_space(text[s])) ++s;
            }
        }
    }
    frags.swap(out);
}

}  // namespace

std::vector<Fragment> SpecialMatcher::partition(const Vocab& v, std::string_view text, bool parse_special) const {
    std::vector<Fragment> frags;
    if (text.empty()) return frags;
    frags.push_back({-1, 0, (uint32_t)text.size()});
    if (node_token_.size() <= 1) return frags;

    // Which eligible special tokens occur anywhere in the text.
    std::vector<int32_t> found;
    for (size_t i = 0; i < text.size(); ++i) {
        if (!first_byte_[(uint8_t)text[i]]) continue;
        int32_t node = 0;
        for (size_t j = i; j < text.size() && (node = child(node, (uint8_t)text[j])) >= 0; ++j) {
            const int32_t id = node_token_[node];
            if (id >= 0 && (parse_special || !(v.attr[id] & (kAttrControl | kAttrUnknown)))) found.push_back(id);
        }
    }
    if (found.empty()) return frags;
    // Same order as v.special_tokens: longest text first, then lowest id.
    std::sort(found.begin(), found.end(), [&](int32_t a, int32_t b) {
        return v.text[a].size() != v.text[b].size() ? v.text[a].size() > v.text[b].size() : a < b;
    });
    found.erase(std::unique(found.begin(), found.end()), found.end());
    for (int32_t id : found) split_on_token(v, text, id, frags);
    return frags;
}

}  // namespace bee
