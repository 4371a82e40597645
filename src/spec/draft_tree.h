// spec/draft_tree: what a drafter proposes — a tree of draft tokens below the last sampled token
// (the root). A chain is a tree with one branch.
#pragma once
#include <cstdint>
#include <vector>

#include "sample/sampler.h"

namespace bee {

struct DraftNode {
    int32_t token = -1;
    int32_t parent = -1;  // index of the parent node; -1: a child of the root (the last sampled token)
    int32_t depth = 1;    // 1 for children of the root
};

struct DraftTree {
    // Nodes in topological order (a parent always comes before its children). Node i becomes batch row
    // row0 + 1 + i of the verify batch (row0 holds the root).
    std::vector<DraftNode> nodes;
    // Optional, chains only: the draft distribution q each node's token was sampled from (sorted or not,
    // p > 0 only). When present for every node, the verifier uses exact rejection sampling
    // (Leviathan et al. 2023, Alg. 1) instead of sample-and-match.
    std::vector<std::vector<TokenProb>> q;
    // A sampled chain (q for every node) cut by a grammar (spec/draft_grammar.h): the q of the first node
    // removed, which the target could never accept. Rejection sampling would have rejected it for sure and
    // drawn from norm(max(0, p - q_cut)), so the verifier draws the token after the last kept node (the
    // root if none is kept) from there: without it the step would not keep the target distribution.
    std::vector<TokenProb> q_cut;

    int size() const { return (int)nodes.size(); }
    bool empty() const { return nodes.empty(); }
    // Something to verify: nodes, or a sampled chain cut before its first node (q_cut alone).
    bool drafted() const { return !nodes.empty() || !q_cut.empty(); }
    void clear() {
        nodes.clear();
        q.clear();
        q_cut.clear();
    }
    // Appends a node below `parent` (-1: the root) and returns its index.
    int add(int32_t token, int32_t parent) {
        const int32_t depth = parent < 0 ? 1 : nodes[parent].depth + 1;
        nodes.push_back({token, parent, depth});
        return (int)nodes.size() - 1;
    }
    // Appends a chain below the root.
    void add_chain(const int32_t* tokens, int n) {
        for (int i = 0; i < n; i++) add(tokens[i], i == 0 ? -1 : size() - 1);
    }
    bool is_chain() const {
        for (int i = 0; i < size(); i++)
            if (nodes[i].parent != i - 1) return false;
        return true;
    }
    int max_depth() const {
        int d = 0;
        for (const DraftNode& n : nodes) d = n.depth > d ? n.depth : d;
        return d;
    }
    // Keeps the nodes of depth <= d (a prefix of the node list when nodes are in breadth or chain order;
    // otherwise parents are remapped). Limits fixed before drafting keep the verifier exact; q_cut goes
    // if nodes do (it belonged to a node past the new end).
    void truncate_depth(int d);
    // Keeps at most n nodes (the first ones; parents come first, so the result is still a tree).
    void truncate_size(int n);
    // Keeps one chain: the root's first child, its first child, and so on (drafters add the likeliest
    // child first), for targets that cannot verify a tree.
    void keep_first_branch();
    // Removes the nodes flagged in `drop` (one flag per node) with everything below them; the others keep
    // their order (parents remapped, q kept with its node). Returns how many nodes went.
    int remove_subtrees(const std::vector<uint8_t>& drop);
};

}  // namespace bee
