// tests/unit/spec/test_recycle: recycle's draft tree follows the depth policy and the verify cost — as
// deep as the policy asks, as wide as the rows pay for — and learns how often each successor rank is
// the target's choice.
#include <gtest/gtest.h>

#include "spec_test_util.h"

namespace bee::test {

namespace {

const Model& target() { return *tiny_model("llama").model; }

// A recycle drafter whose adjacency holds, for tokens 100..119, the successors 101+i (rank 0), 150+i,
// 200+i and 250+i (ranks 1-3), as if the target's logits had ranked them so after each token.
struct Chain {
    DrafterHolder d;
    int nv;
    explicit Chain(int n_max) : d(make(n_max)), nv(target().hparams().n_vocab) { observe(0); }
    static DrafterHolder make(int n_max) {
        SpecParams p;
        p.draft_n_max = n_max;
        p.recycle_k = 4;
        return make_drafter("recycle", p, target());
    }
    // One verify batch over tokens 100..119 whose greedy next token is the rank-`rank` successor.
    void observe(int rank) {
        std::vector<std::vector<float>> l(20, std::vector<float>(nv, 0.0f));
        std::vector<int32_t> toks, committed;
        std::vector<const float*> rows;
        for (int i = 0; i < 20; i++) {
            const int32_t succ[4] = {101 + i, 150 + i, 200 + i, 250 + i};
            for (int c = 0; c < 4; c++) l[i][succ[c]] = 10.0f - (float)c;
            l[i][succ[rank]] = 20.0f;  // the target's choice: best logit
            for (int c = 0; c < rank; c++) l[i][succ[c]] = 10.0f - (float)c;
            toks.push_back(100 + i);
            committed.push_back(i);
            rows.push_back(l[i].data());
        }
        d->observe(VerifyRows{toks, rows, nv, committed});
    }
    DraftTree draft(int n_max, double row_cost) {
        DraftTree t;
        DraftRequest req{std::vector<int32_t>{}, 100, n_max, 0.0f};
        req.row_cost = row_cost;
        d->draft(req, t);
        return t;
    }
};

void expect_topological(const DraftTree& t) {
    for (int i = 0; i < t.size(); i++) {
        EXPECT_LT(t.nodes[i].parent, i);
        EXPECT_EQ(t.nodes[i].depth, t.nodes[i].parent < 0 ? 1 : t.nodes[t.nodes[i].parent].depth + 1);
    }
}

}  // namespace

TEST(RecycleTree, DepthFollowsThePolicy) {
    Chain c(16);
    for (int n_max : {1, 3, 8}) {
        const DraftTree t = c.draft(n_max, 0.0);
        EXPECT_EQ(t.max_depth(), n_max);
        expect_topological(t);
        // the rank-0 path is the spine: node tokens 101, 102, ... reach the depth asked
        int spine = 0;
        for (const DraftNode& n : t.nodes) spine += n.token == 100 + n.depth ? 1 : 0;
        EXPECT_EQ(spine, n_max);
    }
}

TEST(RecycleTree, WidthFollowsTheRowCost) {
    Chain c(16);
    const DraftTree free_rows = c.draft(8, 0.0), cheap = c.draft(8, 0.02), cpu = c.draft(8, 0.27);
    EXPECT_GT(free_rows.size(), cheap.size());
    EXPECT_GT(cheap.size(), cpu.size());
    EXPECT_FALSE(cheap.is_chain());
    ASSERT_FALSE(cpu.empty());
    EXPECT_EQ(cpu.nodes[0].token, 101);  // the likeliest node first
    expect_topological(cheap);
    expect_topological(cpu);
    EXPECT_TRUE(c.draft(8, 10.0).empty());  // a row dearer than anything it can win: no draft
}

// The target's choice flips between two successors, so it is always the one the row (rewritten from the
// previous logits) ranks second: rank 1's hit rate overtakes rank 0's, and the tree's first node becomes
// the rank-1 token.
TEST(RecycleTree, LearnsWhichRankTheTargetPicks) {
    Chain c(16);
    for (int i = 0; i < 20; i++) {
        c.observe(1);
        c.observe(0);  // ends with the rows in the original order (rank 0 = 101 + i, rank 1 = 150 + i)
    }
    const DraftTree t = c.draft(4, 0.05);
    ASSERT_FALSE(t.empty());
    EXPECT_EQ(t.nodes[0].token, 150);
}

}  // namespace bee::test
