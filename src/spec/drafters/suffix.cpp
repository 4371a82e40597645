// spec/drafters/suffix: SuffixDecoding (arXiv 2411.04975; modelfree-and-server.md A.3.7). A per-request
// suffix trie over prompt + output and a global trie over earlier responses (shared by every sequence,
// kept for the process). For each suffix length p of the recent tokens that occurs in a trie, walk the
// most frequent continuation while its empirical probability (product of child/parent counts) stays
// >= min_prob, at most p * factor + offset tokens; the candidate with the highest summed probability
// wins (ties: the longer match).
#include <algorithm>
#include <cmath>

#include "spec/drafters/drafters.h"
#include "spec/drafters/suffix_trie.h"

namespace bee {

namespace {

constexpr size_t kGlobalMaxNodes = 4u << 20;  // the global trie starts over beyond this

struct GlobalTrie : DrafterShared {
    explicit GlobalTrie(int depth) : trie(depth) {}
    SuffixTrie trie;  // note: used from the one inference thread only (run loop / server scheduler)
};

struct Candidate {
    std::vector<int32_t> tokens;
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
        Candidate best;
        search(local_, cap, best);
        search(g_->trie, cap, best);
        if (!best.tokens.empty()) out.add_chain(best.tokens.data(), (int)best.tokens.size());
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
            double prob = 1.0;
            while ((int)c.tokens.size() < cap) {
                const int32_t next = trie.best_child(node);
                if (next < 0) break;
                prob *= (double)trie.count(next) / (double)trie.count(node);
                if (prob < p_.suffix_min_prob) break;
                c.tokens.push_back(trie.token(next));
                c.score += prob;
                node = next;
            }
            if (!c.tokens.empty() && (c.score > best.score || (c.score == best.score && c.match > best.match)))
                best = std::move(c);
        }
    }

    const SpecParams& p_;
    GlobalTrie* g_;
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

}  // namespace bee
