// spec/drafters/suffix: SuffixDecoding (arXiv 2411.04975; modelfree-and-server.md A.3.7). A per-request
// suffix trie over prompt + output and a global trie over earlier responses (shared by every sequence,
// kept for the process). For each suffix length p of the recent tokens that occurs in a trie, walk the
// most frequent continuation while its empirical probability (product of child/parent counts) stays
// >= min_prob, at most p * factor + offset tokens; the candidate with the highest summed probability
// wins (ties: the longer match).
//
// Tree mode (--spec-suffix-tree N > 0, the paper's speculation tree): instead of one path, grow up to N
// nodes best-first below the matched node by path probability, so where earlier text continued in
// several ways (a paraphrasing model picks one of them) each way is verified in the same batch. The score
// is again the summed probability (the expected accepted length under the trie's counts).
//
// Once the verify cost curve is measured (req.row_cost = s, the cost of a row in plain decodes), a chain
// or tree also stops where the next node's path probability q no longer pays for its row: q <= s (1 + E)
// / (1 + s rows), E = the expected tokens so far (recycle.cpp derives the rule). On SmolLM2 on the CPU,
// s ~ 0.27: a chain ends at a branch of the trie where the text continued differently about as often.
#include <algorithm>
#include <cmath>
#include <queue>

#include "spec/drafters/drafters.h"
#include "spec/drafters/suffix_trie.h"
#include "spec/registry.h"

namespace bee {

namespace {

constexpr size_t kGlobalMaxNodes = 4u << 20;  // the global trie starts over beyond this

struct GlobalTrie : DrafterShared {
    explicit GlobalTrie(int depth) : trie(depth) {}
    SuffixTrie trie;  // note: used from the one inference thread only (run loop / server scheduler)
};

struct Candidate {
    DraftTree tree;  // a chain unless tree mode
    double score = 0;
    int match = 0;
};

class Suffix : public Drafter {
public:
    Suffix(const SpecParams& p, GlobalTrie* g) : p_(p), g_(g), local_(p.suffix_max_depth) {}
    int n_max() const override { return std::max(1, p_.draft_n_max); }

    void begin(const std::vector<int32_t>& prompt) override {
        local_.clear();
        for (int32_t t : prompt) local_.append(t);
        n_seen_ = (int)prompt.size();
    }

    void draft(const DraftRequest& req, DraftTree& out) override {
        const std::vector<int32_t>& h = req.history;
        if (n_seen_ > (int)h.size()) begin(h);
        for (; n_seen_ < (int)h.size(); n_seen_++) local_.append(h[n_seen_]);
        seq_.assign(h.end() - std::min((int)h.size(), local_.max_depth()), h.end());
        seq_.push_back(req.id_last);
        const int cap = std::min(n_max(), req.n_max);
        row_cost_ = std::max(0.0, req.row_cost);
        Candidate best;
        search(local_, cap, best);
        search(g_->trie, cap, best);
        if (!best.tree.empty()) out.nodes = std::move(best.tree.nodes);
    }

    void end(const std::vector<int32_t>& output) override {
        if (g_->trie.n_nodes() > kGlobalMaxNodes) g_->trie.clear();
        g_->trie.new_text();
        for (int32_t t : output) g_->trie.append(t);
    }

private:
    // The best candidate in `trie` over every matching suffix length of seq_ (the recent tokens, id_last
    // last); replaces `best` if better.
    void search(const SuffixTrie& trie, int cap_all, Candidate& best) const {
        const int L = (int)seq_.size();
        for (int p = 1; p <= L && p < trie.max_depth(); p++) {
            int32_t node = trie.walk(&seq_[L - p], p);
            if (node < 0) break;  // no longer suffix can match either
            const int cap = std::min(cap_all, (int)std::floor(p * p_.suffix_factor + p_.suffix_offset));
            Candidate c;
            c.match = p;
            if (p_.suffix_tree_nodes > 0) grow_tree(trie, node, cap, c);
            else grow_chain(trie, node, cap, c);
            if (!c.tree.empty() && (c.score > best.score || (c.score == best.score && c.match > best.match)))
                best = std::move(c);
        }
    }

    // The most frequent path below `node` while its probability stays >= min_prob.
    void grow_chain(const SuffixTrie& trie, int32_t node, int cap, Candidate& c) const {
        double prob = 1.0;
        while (c.tree.size() < cap) {
            const int32_t next = trie.best_child(node);
            if (next < 0) break;
            prob *= (double)trie.count(next) / (double)trie.count(node);
            if (prob < p_.suffix_min_prob || !pays(prob, c)) break;
            c.tree.add(trie.token(next), c.tree.size() - 1);
            c.score += prob;
            node = next;
        }
    }

    // Best-first: the open trie node with the highest path probability joins the tree next (a child's
    // probability never exceeds its parent's, so parents come first), until the node budget is spent.
    void grow_tree(const SuffixTrie& trie, int32_t node, int cap, Candidate& c) const {
        struct Open {
            double prob;
            int32_t trie_node, parent, depth;  // parent: index in c.tree (-1: the root)
            bool operator<(const Open& o) const { return prob < o.prob; }
        };
        std::priority_queue<Open> open;
        const auto push_children = [&](int32_t from, double prob, int32_t parent, int32_t depth) {
            if (depth >= cap) return;
            for (int32_t ch = trie.first_child(from); ch >= 0; ch = trie.next_sibling(ch)) {
                const double q = prob * (double)trie.count(ch) / (double)trie.count(from);
                if (q >= p_.suffix_min_prob) open.push({q, ch, parent, depth + 1});
            }
        };
        push_children(node, 1.0, -1, 0);
        while (!open.empty() && c.tree.size() < p_.suffix_tree_nodes) {
            const Open o = open.top();
            open.pop();
            if (!pays(o.prob, c)) break;
            const int idx = c.tree.add(trie.token(o.trie_node), o.parent);
            c.score += o.prob;
            push_children(o.trie_node, o.prob, idx, o.depth);
        }
    }

    // Whether a node of path probability q is worth its verify row after the nodes of c (see the top).
    bool pays(double q, const Candidate& c) const {
        return q > row_cost_ * (1.0 + c.score) / (1.0 + row_cost_ * c.tree.size());
    }

    const SpecParams& p_;
    GlobalTrie* g_;
    double row_cost_ = 0;  // this draft's req.row_cost (0: not measured, no cut)
    SuffixTrie local_;
    int n_seen_ = 0;
    std::vector<int32_t> seq_;
};

}  // namespace

std::unique_ptr<DrafterShared> make_suffix_shared(const SpecParams& p, const Model&) {
    return std::make_unique<GlobalTrie>(p.suffix_max_depth);
}

std::unique_ptr<Drafter> make_suffix(const DrafterEnv& env) {
    return std::make_unique<Suffix>(env.params, static_cast<GlobalTrie*>(env.shared));
}

extern const DrafterKind kDrafterSuffix =
    {"suffix",
     "",
     "suffix",
     {{"--spec-suffix-tree", "N",
       "suffix: draft a best-first tree of N nodes over the continuations seen (0: one chain) [0]",
       [](SpecParams& p) { return &p.suffix_tree_nodes; }, nullptr, 0, 1024}},
     nullptr,
     nullptr,
     false,
     make_suffix,
     make_suffix_shared};

}  // namespace bee
