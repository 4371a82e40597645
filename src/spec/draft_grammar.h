// spec/draft_grammar: constrained requests (a grammar, a JSON schema, a forced tool call) speculate too —
// a draft is cut where the request's grammar would reject it, before the target verifies it.
#pragma once
#include "sample/grammar.h"
#include "spec/draft_tree.h"

namespace bee {

// Removes every node whose token `g` would not allow after the output so far followed by the tokens of
// the node's ancestors, together with everything below it, and returns how many nodes went. The target
// samples under the same grammar state along that path (verify_tree with the grammar), so it never
// produces such a token: its verify row, and its subtree's, could only be wasted. `g` is not changed
// (the walk moves copies of its state, one per node with children). A sampled chain keeps the removed
// node's q as DraftTree::q_cut, so rejection sampling stays exact; the tree may then be empty and still
// be a draft (DraftTree::drafted).
int cut_draft_to_grammar(DraftTree& tree, const GrammarConstraint& g);

}  // namespace bee
