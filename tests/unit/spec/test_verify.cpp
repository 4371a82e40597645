// tests/unit/spec/test_verify: the verifier keeps the target's distribution exactly (DESIGN.md invariant
// 1). A synthetic Markov "target" over a 6-token vocabulary gives logits per context; the verifier only
// sees logits, so the joint distribution of the first two emitted tokens after speculation is compared
// with the target's exact one by a chi-square test, for sampled chains (rejection sampling with q),
// chains without probabilities, trees, and with the sampler's filters (top-k, temperature) on.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "spec/verify.h"

namespace bee {

namespace {

constexpr int V = 6;

// logits of the target after token t (row t), and of a deliberately different draft
float target_logit(int prev, int next) { return (float)std::sin(1.7 * prev + 2.3 * next) * 2.0f; }
float draft_logit(int prev, int next) { return (float)std::cos(0.9 * prev + 1.1 * next) * 1.5f; }

std::vector<float> row(int prev, float (*f)(int, int)) {
    std::vector<float> r(V);
    for (int n = 0; n < V; n++) r[n] = f(prev, n);
    return r;
}

// The exact distribution the sampler draws from at a context.
std::vector<double> sampler_dist(const SamplingParams& sp, int prev) {
    Sampler s(sp, V);
    std::vector<float> l = row(prev, target_logit);
    s.apply(l.data());
    std::vector<double> p(V, 0.0);
    for (const TokenProb& t : s.candidates()) p[t.id] = t.p;
    return p;
}

// Chi-square statistic of counts over V*V cells against expected probabilities (cells with expected
// count 0 must stay empty).
double chi_square(const std::vector<long>& counts, const std::vector<double>& expect, long n, int* df) {
    double chi = 0;
    *df = -1;
    for (size_t i = 0; i < counts.size(); i++) {
        const double e = expect[i] * (double)n;
        if (e == 0) {
            EXPECT_EQ(counts[i], 0) << "a token pair the target never produces appeared (cell " << i << ")";
            continue;
        }
        chi += (counts[i] - e) * (counts[i] - e) / e;
        (*df)++;
    }
    return chi;
}

enum class Kind { SampledChain, PlainChain, Tree, LyingChain };

// Runs `trials` speculative steps from root token 0 and tallies the first two emitted tokens (continuing
// with plain sampling if the step emitted only one). Returns chi-square / its 99.9% bound.
// LyingChain hands the verifier a q that is not the distribution the draft was sampled from: the
// result is then biased, which the test must detect (a check that the test has power).
double run_chain_test(Kind kind, const SamplingParams& sp, int trials) {
    Sampler s(sp, V);
    std::mt19937 draft_rng(77);
    std::vector<long> counts(V * V, 0);
    std::vector<std::vector<float>> rows(V);
    for (int t = 0; t < V; t++) rows[t] = row(t, target_logit);
    long n_accepted_total = 0;
    for (int trial = 0; trial < trials; trial++) {
        DraftTree tree;
        const int root = 0;
        if (kind == Kind::SampledChain || kind == Kind::LyingChain) {  // d1 ~ q(.|root), d2 ~ q(.|d1)
            int prev = root;
            for (int d = 0; d < 2; d++) {
                std::vector<float> l = row(prev, draft_logit);
                std::vector<TokenProb> q;
                double sum = 0;
                for (int n = 0; n < V; n++) sum += std::exp(l[n]);
                for (int n = 0; n < V; n++) q.push_back({n, (float)(std::exp(l[n]) / sum)});
                std::discrete_distribution<int> dist({q[0].p, q[1].p, q[2].p, q[3].p, q[4].p, q[5].p});
                const int tok = dist(draft_rng);
                tree.add(tok, tree.size() - 1);
                if (kind == Kind::LyingChain)
                    for (TokenProb& t : q) t.p = 1.0f / V;
                tree.q.push_back(q);
                prev = tok;
            }
        } else if (kind == Kind::PlainChain) {
            tree.add(1, -1);
            tree.add(4, 0);
        } else {  // root -> {1, 3, 5}; 1 -> {0, 2}; 3 -> {4}
            const int a = tree.add(1, -1);
            const int b = tree.add(3, -1);
            tree.add(5, -1);
            tree.add(0, a);
            tree.add(2, a);
            tree.add(4, b);
        }
        std::vector<const float*> logits{rows[root].data()};
        for (const DraftNode& n : tree.nodes) logits.push_back(rows[n.token].data());
        VerifyResult r = verify_tree(tree, logits, s);
        EXPECT_EQ(r.tokens.size(), r.path.size() + 1);
        for (size_t i = 0; i < r.path.size(); i++) EXPECT_EQ(tree.nodes[r.path[i]].token, r.tokens[i]);
        n_accepted_total += r.n_accepted();
        int x1 = r.tokens[0];
        int x2 = r.tokens.size() > 1 ? r.tokens[1] : s.sample(rows[x1].data());
        counts[x1 * V + x2]++;
    }
    std::vector<double> expect(V * V);
    const std::vector<double> p1 = sampler_dist(sp, 0);
    for (int a = 0; a < V; a++) {
        const std::vector<double> p2 = sampler_dist(sp, a);
        for (int b = 0; b < V; b++) expect[a * V + b] = p1[a] * p2[b];
    }
    int df = 0;
    const double chi = chi_square(counts, expect, trials, &df);
    // 99.9% quantile of chi-square: df + 3.1*sqrt(2 df) + 4 bounds it for df in 3..35 (Wilson-Hilferty)
    const double limit = df + 3.1 * std::sqrt(2.0 * df) + 4.0;
    EXPECT_GT(n_accepted_total, trials / 10) << "the drafts should be accepted some of the time";
    return chi / limit;
}

void run_and_test(Kind kind, const SamplingParams& sp, int trials) {
    EXPECT_LT(run_chain_test(kind, sp, trials), 1.0) << "chi-square above its 99.9% bound";
}

SamplingParams full_dist() {
    SamplingParams sp;
    sp.temp = 1.0f;
    sp.top_k = 0;
    sp.top_p = 1.0f;
    sp.min_p = 0.0f;
    sp.seed = 1234;
    return sp;
}

}  // namespace

TEST(Verify, SampledChainRejectionSamplingKeepsTargetDistribution) {
    run_and_test(Kind::SampledChain, full_dist(), 40000);
}

TEST(Verify, PlainChainSampleAndMatchKeepsTargetDistribution) { run_and_test(Kind::PlainChain, full_dist(), 40000); }

TEST(Verify, TreeKeepsTargetDistribution) { run_and_test(Kind::Tree, full_dist(), 40000); }

TEST(Verify, FiltersAndTemperatureKeepTargetDistribution) {
    SamplingParams sp = full_dist();
    sp.temp = 0.7f;
    sp.top_k = 4;
    sp.seed = 99;
    run_and_test(Kind::SampledChain, sp, 30000);
    run_and_test(Kind::Tree, sp, 30000);
}

TEST(Verify, ChiSquareDetectsAWrongDraftDistribution) {
    EXPECT_GT(run_chain_test(Kind::LyingChain, full_dist(), 40000), 1.0);
}

TEST(Verify, GreedyAcceptsWhileArgmaxMatchesThenBonus) {
    SamplingParams sp;
    sp.temp = 0.0f;
    Sampler s(sp, V);
    std::vector<std::vector<float>> rows(V);
    for (int t = 0; t < V; t++) rows[t] = row(t, target_logit);
    auto am = [&](int t) { return (int)argmax(rows[t].data(), V); };
    const int a1 = am(0), a2 = am(a1), a3 = am(a2);
    DraftTree tree;
    const int wrong = (a2 + 1) % V;
    tree.add(a1, -1);
    tree.add(wrong, 0);
    std::vector<const float*> logits{rows[0].data(), rows[a1].data(), rows[wrong].data()};
    VerifyResult r = verify_tree(tree, logits, s);
    EXPECT_EQ(r.tokens, (std::vector<int32_t>{a1, a2}));  // a1 accepted, then the target's own a2
    EXPECT_EQ(r.n_accepted(), 1);

    DraftTree all;  // every draft right: all accepted plus the bonus
    all.add(a1, -1);
    all.add(a2, 0);
    std::vector<const float*> l2{rows[0].data(), rows[a1].data(), rows[a2].data()};
    r = verify_tree(all, l2, s);
    EXPECT_EQ(r.tokens, (std::vector<int32_t>{a1, a2, a3}));
    EXPECT_EQ(r.n_accepted(), 2);

    DraftTree empty;  // nothing drafted: a plain sample
    std::vector<const float*> l3{rows[0].data()};
    r = verify_tree(empty, l3, s);
    EXPECT_EQ(r.tokens, (std::vector<int32_t>{a1}));
}

TEST(DraftTree, TruncateDepthRemapsParents) {
    DraftTree t;
    const int a = t.add(1, -1);
    const int b = t.add(2, a);
    t.add(3, b);
    t.add(4, -1);
    t.add(5, 3);
    t.truncate_depth(2);
    ASSERT_EQ(t.size(), 4);
    EXPECT_EQ(t.max_depth(), 2);
    EXPECT_EQ(t.nodes[3].token, 5);
    EXPECT_EQ(t.nodes[3].parent, 2);  // node "4" moved from index 3 to 2
    EXPECT_FALSE(t.is_chain());
}

// A target that verifies chains only (recurrent layers) keeps the first child at every level.
TEST(DraftTree, KeepFirstBranch) {
    DraftTree t;
    const int a = t.add(10, -1);
    t.add(20, -1);  // a second child of the root: dropped
    const int c = t.add(11, a);
    t.add(12, a);  // a second child of a: dropped
    t.add(13, c);
    t.add(30, 1);  // below a dropped node: dropped
    t.keep_first_branch();
    ASSERT_TRUE(t.is_chain());
    ASSERT_EQ(t.size(), 3);
    EXPECT_EQ(t.nodes[0].token, 10);
    EXPECT_EQ(t.nodes[1].token, 11);
    EXPECT_EQ(t.nodes[2].token, 13);
    EXPECT_EQ(t.nodes[2].depth, 3);
    DraftTree chain;
    const int32_t toks[] = {1, 2, 3};
    chain.add_chain(toks, 3);
    chain.q.assign(3, {});
    chain.keep_first_branch();  // a chain stays what it is, with its draft distributions
    EXPECT_EQ(chain.size(), 3);
    EXPECT_EQ(chain.q.size(), 3u);
}

}  // namespace bee
