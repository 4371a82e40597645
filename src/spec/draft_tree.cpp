// spec/draft_tree: depth and size truncation of draft trees, removal of subtrees.
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
    if (kept.size() < nodes.size()) q_cut.clear();
    nodes = std::move(kept);
    q = std::move(kept_q);
}

void DraftTree::truncate_size(int n) {
    if (n < 0) n = 0;
    if ((int)nodes.size() > n) {
        nodes.resize(n);
        q_cut.clear();
    }
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

int DraftTree::remove_subtrees(const std::vector<uint8_t>& drop) {
    std::vector<int32_t> remap(nodes.size(), -1);
    std::vector<DraftNode> kept;
    std::vector<std::vector<TokenProb>> kept_q;
    for (size_t i = 0; i < nodes.size(); i++) {
        const DraftNode& n = nodes[i];
        if ((i < drop.size() && drop[i]) || (n.parent >= 0 && remap[n.parent] < 0)) continue;
        remap[i] = (int32_t)kept.size();
        kept.push_back({n.token, n.parent < 0 ? -1 : remap[n.parent], n.depth});
        if (i < q.size()) kept_q.push_back(std::move(q[i]));
    }
    const int removed = (int)(nodes.size() - kept.size());
    nodes = std::move(kept);
    q = std::move(kept_q);
    return removed;
}

}  // namespace bee
