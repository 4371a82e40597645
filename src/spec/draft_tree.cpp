// spec/draft_tree: depth and size truncation of draft trees.
#include "spec/draft_tree.h"

namespace bee {

void DraftTree::truncate_depth(int d) {
    std::vector<int32_t> remap(nodes.size(), -1);
    std::vector<DraftNode> kept;
    std::vector<std::vector<TokenProb>> kept_q;
    for (size_t i = 0; i < nodes.size(); i++) {
        const DraftNode& n = nodes[i];
        if (n.depth > d || (n.parent >= 0 && remap[n.parent] < 0)) continue;
        remap[i] = (int32_t)kept.size();
        kept.push_back({n.token, n.parent < 0 ? -1 : remap[n.parent], n.depth});
        if (!q.empty()) kept_q.push_back(std::move(q[i]));
    }
    nodes = std::move(kept);
    q = std::move(kept_q);
}

void DraftTree::truncate_size(int n) {
    if (n < 0) n = 0;
    if ((int)nodes.size() > n) nodes.resize(n);
    if ((int)q.size() > n) q.resize(n);
}

void DraftTree::keep_first_branch() {
    std::vector<DraftNode> chain;
    std::vector<std::vector<TokenProb>> qc;
    int32_t parent = -1, parent_old = -1;
    for (int i = 0; i < size(); i++) {
        if (nodes[i].parent != parent_old) continue;  // not the first child of the last kept node
        chain.push_back({nodes[i].token, parent, (int32_t)chain.size() + 1});
        if (i < (int)q.size()) qc.push_back(q[i]);
        parent = (int32_t)chain.size() - 1;
        parent_old = i;
    }
    nodes = std::move(chain);
    q = qc.size() == nodes.size() ? std::move(qc) : std::vector<std::vector<TokenProb>>{};
}

}  // namespace bee
