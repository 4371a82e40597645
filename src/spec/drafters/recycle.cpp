// spec/drafters/recycle: Token Recycling (arXiv 2408.08696; modelfree-and-server.md A.3.6). An adjacency
// matrix keeps, for every token, the top-k candidates the target's logits ranked after it — candidates
// ordinary decoding throws away. Each step grows a draft TREE from the last token over the matrix using a
// fixed template (wide near the root, a single chain deeper), verified with tree attention. The matrix
// is shared by all sequences and survives requests (the paper's hot start); rows are rewritten from the
// logits of every committed row of each verify batch, and a token never seen is seeded from the prompt's
// bigrams.
#include <algorithm>

#include "model/model.h"
#include "spec/drafters/drafters.h"

namespace bee {

namespace {

// Children per node at depth d (0 = the root) for a node whose ranks along its path sum to s:
// kWidth[d] >> s. The all-rank-0 path always continues, so the tree is as deep as asked.
constexpr int kWidth[] = {4, 2, 2};

struct Adjacency : DrafterShared {
    Adjacency(int32_t n_vocab, int k) : k(k), succ((size_t)n_vocab * k, -1) {}
    int k;
    std::vector<int32_t> succ;  // (n_vocab, k): best successor first, -1 empty
    int32_t* row(int32_t t) { return &succ[(size_t)t * k]; }
};

class Recycle : public Drafter {
public:
    Recycle(const SpecParams& p, Adjacency* adj) : adj_(adj), n_max_(std::max(1, p.draft_n_max)) {}
    int n_max() const override { return n_max_; }

    void begin(const std::vector<int32_t>& prompt) override {
        const int32_t n_vocab = (int32_t)(adj_->succ.size() / adj_->k);
        for (size_t i = 0; i + 1 < prompt.size(); i++) {
            if (prompt[i] < 0 || prompt[i] >= n_vocab) continue;
            int32_t* r = adj_->row(prompt[i]);
            if (r[0] < 0) r[0] = prompt[i + 1];  // only rows the logits have not filled yet
        }
    }

    void draft(const DraftRequest& req, DraftTree& out) override {
        struct Item {
            int32_t token, node, depth, rank_sum;
        };
        std::vector<Item> frontier{{req.id_last, -1, 0, 0}}, next;
        for (int depth = 0; depth < req.n_max && !frontier.empty(); depth++) {
            next.clear();
            const int width = depth < (int)std::size(kWidth) ? kWidth[depth] : 1;
            for (const Item& it : frontier) {
                const int n_children = it.rank_sum == 0 ? std::max(1, width) : width >> it.rank_sum;
                const int32_t* r = adj_->row(it.token);
                for (int c = 0; c < n_children && c < adj_->k && r[c] >= 0; c++) {
                    const int node = out.add(r[c], it.node);
                    next.push_back({r[c], node, depth + 1, it.rank_sum + c});
                }
            }
            frontier.swap(next);
        }
    }

    void observe(const VerifyRows& rows) override {
        for (int32_t i : rows.committed_rows) top_k(rows.logits[i], rows.n_vocab, adj_->row(rows.tokens[i]));
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
};

}  // namespace

std::unique_ptr<DrafterShared> make_recycle_shared(const SpecParams& p, const Model& target) {
    return std::make_unique<Adjacency>(target.hparams().n_vocab, std::max(1, p.recycle_k));
}

std::unique_ptr<Drafter> make_recycle(const DrafterEnv& env) {
    return std::make_unique<Recycle>(env.params, static_cast<Adjacency*>(env.shared));
}

}  // namespace bee
