// spec/drafters/suffix_trie: appending with the active-suffix list, walking, most-frequent child.
#include "spec/drafters/suffix_trie.h"

namespace bee {

void SuffixTrie::clear() {
    nodes_.assign(1, Node{});
    edges_.clear();
    active_.clear();
}

int32_t SuffixTrie::child(int32_t node, int32_t token) const {
    auto it = edges_.find(edge(node, token));
    return it == edges_.end() ? -1 : it->second;
}

void SuffixTrie::append(int32_t token) {
    // Suffixes ending here = token alone, plus each active suffix extended by token (the longest one
    // falls off at max_depth).
    std::vector<int32_t> next;
    next.reserve(active_.size() + 1);
    const size_t keep = active_.size() < (size_t)max_depth_ ? active_.size() : (size_t)max_depth_ - 1;
    for (size_t i = 0; i <= keep; i++) {
        const int32_t parent = i == 0 ? 0 : active_[i - 1];
        int32_t c = child(parent, token);
        if (c < 0) {
            c = (int32_t)nodes_.size();
            nodes_.push_back(Node{token, 0, -1, -1, nodes_[parent].first_child});
            nodes_[parent].first_child = c;
            edges_.emplace(edge(parent, token), c);
        }
        nodes_[c].count++;
        Node& p = nodes_[parent];
        if (p.best_child < 0 || nodes_[c].count > nodes_[p.best_child].count) p.best_child = c;
        next.push_back(c);
    }
    nodes_[0].count++;
    active_.swap(next);
}

int32_t SuffixTrie::walk(const int32_t* tokens, int n) const {
    int32_t node = 0;
    for (int i = 0; i < n && node >= 0; i++) node = child(node, tokens[i]);
    return node;
}

}  // namespace bee
