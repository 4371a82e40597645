// spec/drafters/suffix_trie: a depth-limited suffix trie with occurrence counts — every substring of at
// most max_depth tokens of the appended text is a path from the root (SuffixDecoding, arXiv 2411.04975).
#pragma once
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace bee {

class SuffixTrie {
public:
    explicit SuffixTrie(int max_depth) : max_depth_(max_depth < 1 ? 1 : max_depth) { clear(); }

    void clear();
    // Starts a new text (suffixes of the previous text do not continue into it).
    void new_text() { active_.clear(); }
    // Appends one token: every suffix ending at it (up to max_depth long) gains one occurrence.
    void append(int32_t token);
    // Node reached from the root by tokens[0..n), or -1.
    int32_t walk(const int32_t* tokens, int n) const;
    int32_t child(int32_t node, int32_t token) const;
    int32_t count(int32_t node) const { return nodes_[node].count; }
    int32_t best_child(int32_t node) const { return nodes_[node].best_child; }  // most frequent, -1: leaf
    // Every child of a node: first_child, then next_sibling until -1 (newest first).
    int32_t first_child(int32_t node) const { return nodes_[node].first_child; }
    int32_t next_sibling(int32_t node) const { return nodes_[node].next_sibling; }
    int32_t token(int32_t node) const { return nodes_[node].token; }
    int max_depth() const { return max_depth_; }
    size_t n_nodes() const { return nodes_.size(); }

private:
    struct Node {
        int32_t token = -1;
        int32_t count = 0;
        int32_t best_child = -1;
        int32_t first_child = -1, next_sibling = -1;
    };
    static uint64_t edge(int32_t node, int32_t token) { return ((uint64_t)(uint32_t)node << 32) | (uint32_t)token; }

    int max_depth_;
    std::vector<Node> nodes_;                      // [0] is the root
    std::unordered_map<uint64_t, int32_t> edges_;  // (parent, token) -> child
    std::vector<int32_t> active_;                  // nodes of the suffixes ending at the last token, shortest first
};

}  // namespace bee
