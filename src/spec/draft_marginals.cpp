// spec/draft_marginals: top candidates per depth and the DDTree expansion (contract in draft_marginals.h).
#include "spec/draft_marginals.h"

#include <algorithm>
#include <cmath>
#include <queue>

namespace bee {

void top_candidates(const float* logits, int n, int k, DepthTop& t) {
    const float mx = *std::max_element(logits, logits + n);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += std::exp((double)logits[i] - mx);
    const float log_z = mx + (float)std::log(sum);
    k = std::min(k, n);
    t.id.resize(n);
    for (int i = 0; i < n; i++) t.id[i] = i;
    // Highest logit first; ties to the lower id, as argmax.
    std::partial_sort(t.id.begin(), t.id.begin() + k, t.id.end(),
                      [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    t.id.resize(k);
    t.lp.resize(k);
    for (int i = 0; i < k; i++) t.lp[i] = logits[t.id[i]] - log_z;
}

int ddtree_branch_budget(int base, int horizon, int budget, int top_k) {
    if (base <= 0 || budget <= 0) return 0;
    const int total = std::min(base + budget, base * std::max(1, top_k));
    const int full = total - base;
    if (horizon >= base) return full;
    const int scaled = (int)std::lround((double)horizon * full / base);
    return std::max(0, std::min(scaled, total - horizon));
}

void ddtree_add_branches(const std::vector<DepthTop>& depth, int budget, double row_cost, DraftTree& out) {
    struct Cand {
        double score;  // log-probability of the path down to this candidate
        int32_t parent;
        int depth, rank;                       // depth 1-based; rank in depth[depth - 1]
        bool operator<(const Cand& o) const {  // max-heap: best score, then shallower, then better rank
            if (score != o.score) return score < o.score;
            if (depth != o.depth) return depth > o.depth;
            return rank > o.rank;
        }
    };
    const int n_main = std::min((int)depth.size(), out.size());
    if (budget <= 0 || n_main == 0) return;
    std::vector<std::vector<int32_t>> kids(out.size() + 1);  // [node + 1]: children's tokens (-1: the root)
    for (const DraftNode& n : out.nodes) kids[n.parent + 1].push_back(n.token);
    std::priority_queue<Cand> heap;
    double prefix = 0;  // the main path's log-probability down to depth d - 1
    for (int d = 1; d <= n_main; d++) {
        if (depth[d - 1].id.size() > 1) heap.push({prefix + depth[d - 1].lp[1], d - 2, d, 1});
        prefix += depth[d - 1].lp[0];
    }
    for (int added = 0; added < budget && !heap.empty();) {
        const Cand c = heap.top();
        heap.pop();
        if (row_cost >= 0 && std::exp(c.score) <= row_cost) break;  // nothing left pays for its row
        const DepthTop& at = depth[c.depth - 1];
        if (c.rank + 1 < (int)at.id.size())
            heap.push({c.score - at.lp[c.rank] + at.lp[c.rank + 1], c.parent, c.depth, c.rank + 1});
        const int32_t token = at.id[c.rank];
        std::vector<int32_t>& siblings = kids[c.parent + 1];
        if (token < 0 || std::find(siblings.begin(), siblings.end(), token) != siblings.end()) continue;
        const int node = out.add(token, c.parent);
        siblings.push_back(token);
        kids.emplace_back();
        added++;
        if (c.depth < n_main) heap.push({c.score + depth[c.depth].lp[0], node, c.depth + 1, 0});
    }
}

}  // namespace bee
