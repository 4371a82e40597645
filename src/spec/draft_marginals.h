// spec/draft_marginals: per-depth candidate lists from a drafter's logits, and the DDTree best-first tree
// over per-position marginals (specs/drafters.md §2.7) for drafters that score every depth in one pass.
#pragma once
#include <cstdint>
#include <vector>

#include "spec/draft_tree.h"

namespace bee {

// The draft distribution at one depth: its top candidates, best first, with their log-probabilities.
struct DepthTop {
    std::vector<int32_t> id;
    std::vector<float> lp;
};

// The k best of `n` logits (ties to the lower id, as argmax) and their log-softmax values.
void top_candidates(const float* logits, int n, int k, DepthTop& t);

// Branch nodes a tree may add this step (§2.7 "Budget"): the tree holds at most
// min(base + budget, base * max(1, top_k)) nodes; when the depth policy cut the main path (horizon) below
// the drafter's own depth (base), the branch budget shrinks in proportion:
// min(round(horizon * (total - base) / base), total - horizon).
int ddtree_branch_budget(int base, int horizon, int budget, int top_k);

// DDTree (Algorithm 1 of the DDTree paper as the fork runs it): `out` already holds the main path (node d-1
// = depth d, the top-1 of marginal d-1, d = 1 … depth.size(), ids = target ids). Adds up to `budget` branch
// nodes best-first by cumulative log-probability: seeds are the rank-1 candidates below each main-path node's
// parent; a new node pushes its next sibling and its first child (rank 0 of the next depth). A candidate
// whose token its parent already has is skipped. Stops early once a candidate's probability does not pay
// for its verify row (row_cost >= 0: the extra cost of one row as a fraction of a plain decode).
void ddtree_add_branches(const std::vector<DepthTop>& depth, int budget, double row_cost, DraftTree& out);

}  // namespace bee
