// spec/verify: turns the target's logits over a verify batch into accepted tokens, keeping the target's
// sampling distribution exactly (DESIGN.md invariant 1).
#pragma once
#include <cstdint>
#include <vector>

#include "sample/grammar.h"
#include "sample/sampler.h"
#include "spec/draft_tree.h"

namespace bee {

struct VerifyResult {
    std::vector<int32_t> tokens;  // accepted draft tokens, then the bonus token (always >= 1 token)
    std::vector<int32_t> path;    // node index of each accepted draft token (tokens.size() - 1 entries)
    // The grammar allowed no token at the last node reached: `tokens` holds only the accepted drafts (no
    // bonus; possibly none), and the output ends there as a sequential sample() returning -1 ends it.
    bool stuck = false;
    int n_accepted() const { return (int)path.size(); }
};

// logits[0]: the root's row (the last sampled token); logits[1 + i]: node i's row.
// Every emitted token is accept()ed into the sampler (its penalty window), in order, and into `grammar`.
// With a grammar (constrained requests), each node's row is sampled under the grammar state reached
// along its path — the path walked is the emitted tokens, so the state moves exactly as if they were
// sampled one by one, and p below is the grammar-restricted distribution (GrammarConstraint::sample /
// distribution). Drafts the grammar rejects should be cut before (spec/draft_grammar.h); any left are
// simply never matched.
// Rules:
//  - chain with q for every node (a sampling drafter): standard speculative sampling — accept d with
//    probability min(1, p(d)/q(d)), else draw from norm(max(0, p - q)) and stop; all accepted: bonus
//    (drawn from norm(max(0, p - q_cut)) when a grammar cut the chain: DraftTree::q_cut).
//  - otherwise (trees, drafters without probabilities, and greedy): sample the target at the current
//    node with the sampler chain; descend to the child with that token if there is one, else stop —
//    the sampled token is the bonus. Greedy sampling makes this "accept while argmax == draft".
VerifyResult verify_tree(const DraftTree& tree, const std::vector<const float*>& logits, Sampler& sampler,
                         GrammarConstraint* grammar = nullptr);

}  // namespace bee
