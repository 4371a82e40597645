// spec/drafters/recycle: Token Recycling (arXiv 2408.08696; modelfree-and-server.md A.3.6). An adjacency
// matrix keeps, for every token, the top-k candidates the target's logits ranked after it — candidates
// ordinary decoding throws away. Each step grows a draft TREE from the last token over the matrix,
// verified with tree attention. The matrix is shared by all sequences and survives requests (the paper's
// hot start); rows are rewritten from the logits of every committed row of each verify batch, and a token
// never seen is seeded from the prompt's bigrams.
//
// Tree shape: the paper uses one static template (wide near the root, a chain deeper). Here the shape
// follows the depth policy and the verify cost instead: the depth is the policy's cap (req.n_max), and
// nodes are added best first by their chance of acceptance — the product, along the path, of how often
// the target's next token sat at each successor rank (learnt per rank, process-wide) — while that chance
// pays for the node's verify row (req.row_cost; the adjacency tree admits any subtree, so this is the
// best tree of its size under the per-rank estimate). On a CPU where a row costs a quarter of a decode
// this is a short chain with a branch or two; where rows are nearly free it is the paper's wide tree.
#include <algorithm>
#include <cmath>
#include <queue>

#include "model/model.h"
#include "spec/drafters/drafters.h"
#include "spec/registry.h"

namespace bee {

namespace {

constexpr int kMaxNodes = 64;             // the paper's trees have ~80 nodes; rows cost more here
constexpr double kDefaultRowCost = 0.05;  // before the cost curve is measured
constexpr double kRankAlpha = 0.02;       // EWMA factor of the per-rank hit rates

struct Adjacency : DrafterShared {
    Adjacency(int32_t n_vocab, int k) : k(k), succ((size_t)n_vocab * k, -1), hit(k) {
        for (int c = 0; c < k; c++) hit[c] = 0.4 / ((c + 1) * std::sqrt((double)(c + 1)));  // until measured
    }
    int k;
    std::vector<int32_t> succ;  // (n_vocab, k): best successor first, -1 empty
    std::vector<double> hit;    // [rank]: how often the target's greedy next token was the rank-th successor
    int32_t* row(int32_t t) { return &succ[(size_t)t * k]; }
};

class Recycle : public Drafter {
public:
    Recycle(const SpecParams& p, Adjacency* adj) : adj_(adj), n_max_(std::max(1, p.draft_n_max)), old_(adj->k) {}
    int n_max() const override { return n_max_; }

    void begin(const std::vector<int32_t>& prompt) override {
        const int32_t n_vocab = (int32_t)(adj_->succ.size() / adj_->k);
        for (size_t i = 0; i + 1 < prompt.size(); i++) {
            if (prompt[i] < 0 || prompt[i] >= n_vocab) continue;
            int32_t* r = adj_->row(prompt[i]);
            if (r[0] < 0) r[0] = prompt[i + 1];  // only rows the logits have not filled yet
        }
    }

    // Best-first growth: a node with acceptance chance q (product of rank hit rates along its path) is
    // added while q > s (1 + E) / (1 + s rows), s = row cost, E = expected accepted tokens and rows = the
    // nodes so far: then (1 + E + q) / (1 + s (rows + 1)) beats (1 + E) / (1 + s rows), i.e. the node
    // raises the expected tokens per unit of verify time. Children have lower q than their parent, so
    // nodes come out parent first.
    void draft(const DraftRequest& req, DraftTree& out) override {
        struct Cand {
            double q;
            int32_t token, parent, depth;
            bool operator<(const Cand& o) const { return q < o.q; }
        };
        const double s = req.row_cost >= 0 ? req.row_cost : kDefaultRowCost;
        std::priority_queue<Cand> open;
        const auto push_children = [&](int32_t token, int32_t node, int32_t depth, double q) {
            if (depth >= req.n_max) return;
            const int32_t* r = adj_->row(token);
            for (int c = 0; c < adj_->k && r[c] >= 0; c++) open.push({q * adj_->hit[c], r[c], node, depth + 1});
        };
        push_children(req.id_last, -1, 0, 1.0);
        double expected = 0;
        while (!open.empty() && out.size() < kMaxNodes) {
            const Cand c = open.top();
            open.pop();
            if (c.q <= s * (1.0 + expected) / (1.0 + s * out.size())) break;
            const int node = out.add(c.token, c.parent);
            expected += c.q;
            push_children(c.token, node, c.depth, c.q);
        }
    }

    void observe(const VerifyRows& rows) override {
        for (int32_t i : rows.committed_rows) {
            int32_t* r = adj_->row(rows.tokens[i]);
            const bool known = r[0] >= 0;
            std::copy(r, r + adj_->k, old_.begin());
            top_k(rows.logits[i], rows.n_vocab, r);
            if (!known) continue;
            // the target's greedy choice after this token (r[0] now): which rank did the old row give it?
            for (int c = 0; c < adj_->k; c++)
                adj_->hit[c] += kRankAlpha * ((old_[c] == r[0] ? 1.0 : 0.0) - adj_->hit[c]);
        }
    }

private:
    // out[0..k) = the k highest logits' ids, best first. note: one pass with a small sorted buffer; most
    // logits fail the first comparison.
    void top_k(const float* x, int32_t n, int32_t* out) {
        const int k = adj_->k;
        best_.assign(k, {-1e30f, -1});
        for (int32_t i = 0; i < n; i++) {
            if (!(x[i] > best_[k - 1].first)) continue;
            int j = k - 1;
            while (j > 0 && x[i] > best_[j - 1].first) {
                best_[j] = best_[j - 1];
                j--;
            }
            best_[j] = {x[i], i};
        }
        for (int j = 0; j < k; j++) out[j] = best_[j].second;
    }

    Adjacency* adj_;
    int n_max_;
    std::vector<std::pair<float, int32_t>> best_;
    std::vector<int32_t> old_;  // a row before observe() rewrites it
};

}  // namespace

std::unique_ptr<DrafterShared> make_recycle_shared(const SpecParams& p, const Model& target) {
    return std::make_unique<Adjacency>(target.hparams().n_vocab, std::max(1, p.recycle_k));
}

std::unique_ptr<Drafter> make_recycle(const DrafterEnv& env) {
    return std::make_unique<Recycle>(env.params, static_cast<Adjacency*>(env.shared));
}

extern const DrafterKind kDrafterRecycle = {"recycle", "",           "recycle",          {}, nullptr, nullptr,
                                            false,     make_recycle, make_recycle_shared};

}  // namespace bee
