// spec/draft_grammar: cutting drafts at the first token the grammar rejects, per path of the tree.
#include "spec/draft_grammar.h"

#include <memory>

namespace bee {

int cut_draft_to_grammar(DraftTree& tree, const GrammarConstraint& g) {
    const int n = tree.size();
    if (n == 0) return 0;
    std::vector<uint8_t> has_kids(n, 0), drop(n, 0);
    for (const DraftNode& d : tree.nodes)
        if (d.parent >= 0) has_kids[d.parent] = 1;
    // state[i]: the grammar after node i's path (kept only for nodes with children; nodes come after
    // their parents, so a parent's state is ready when its children are checked)
    std::vector<std::unique_ptr<GrammarMatcher>> state(n);
    for (int i = 0; i < n; i++) {
        const DraftNode& d = tree.nodes[i];
        if (d.parent >= 0 && drop[d.parent]) {  // below a removed node: goes with it
            drop[i] = 1;
            continue;
        }
        const GrammarMatcher& at = d.parent < 0 ? g.state() : *state[d.parent];
        if (!has_kids[i]) {
            drop[i] = !g.allowed_at(at, d.token);
            continue;
        }
        state[i] = std::make_unique<GrammarMatcher>(at);
        drop[i] = !g.advance(*state[i], d.token);
    }
    int removed = 0, first = -1;
    for (int i = 0; i < n; i++) {
        removed += drop[i];
        if (drop[i] && first < 0) first = i;
    }
    if (!removed) return 0;
    // a sampled chain: the first removed node's q goes to the verifier (DraftTree::q_cut)
    if (tree.is_chain() && (int)tree.q.size() == n) tree.q_cut = tree.q[first];
    tree.remove_subtrees(drop);
    return removed;
}

}  // namespace bee
