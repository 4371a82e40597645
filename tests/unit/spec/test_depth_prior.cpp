// tests/unit/spec/test_depth_prior: the depth policy's per-process prior (spec/depth_prior.h) — a new
// request starts from the depth earlier requests learnt instead of warming up at the full depth, and one
// request moves the prior only part of the way (decay).
#include <gtest/gtest.h>

#include "../model/tiny_model.h"
#include "spec/depth_policy.h"
#include "spec/registry.h"

namespace bee::test {

namespace {

// One request of `cycles` cycles on a policy seeded from `prior` (and folded back into it at the end): a
// depth-d cycle costs 8 + 2 d ms (a quarter of a plain decode per row) and accepts accept(d) tokens.
// Returns the depths asked, in order.
std::vector<int> request(const DepthParams& p, const std::shared_ptr<VerifyCostModel>& cost, DepthPrior& prior,
                         int cycles, int (*accept)(int)) {
    auto pol = make_depth_policy(p, cost);
    pol->seed(prior);
    std::vector<int> depths;
    for (int i = 0; i < cycles; i++) {
        const int d = pol->next(16);
        depths.push_back(d);
        CycleRecord c;
        c.depth = c.n_drafted = d;
        c.n_accepted = d > 0 ? accept(d) : 0;
        c.cycle_ms = 8 + 2.0 * d;
        pol->record(c);
    }
    pol->fold(prior);
    return depths;
}

int accept_all(int d) { return d; }
int accept_none(int) { return 0; }
int accept_three(int d) { return d < 3 ? d : 3; }

DepthParams profit() {
    DepthParams p;
    p.explore_interval = 0;  // no exploration rungs: next() returns the decided depth
    p.baseline_interval = 0;
    p.probe_interval = 1000;
    return p;
}

int drafted_rows(const std::vector<int>& depths) {
    int n = 0;
    for (int d : depths) n += d;
    return n;
}

}  // namespace

TEST(DepthPrior, FirstFoldDefinesLaterFoldsMoveByTheWeight) {
    DepthPrior prior(0.25);
    EXPECT_FALSE(prior.known());
    prior.fold({0.8, 0.6, 0.0}, {1.0, 1.0, 0.0}, {true, true, false}, 1.0);
    ASSERT_TRUE(prior.known());
    EXPECT_DOUBLE_EQ(prior.survival()[0].v, 0.8);
    EXPECT_FALSE(prior.survival()[2].known);  // never drafted: stays unknown
    // A request that accepted nothing moves the prior a quarter of the way, not all of it.
    prior.fold({0.0, 0.0, 0.0}, {0.5, 0.5, 0.5}, {true, true, true}, 2.0);
    EXPECT_DOUBLE_EQ(prior.survival()[0].v, 0.6);
    EXPECT_DOUBLE_EQ(prior.survival()[1].v, 0.45);
    EXPECT_DOUBLE_EQ(prior.reach()[0].v, 0.875);
    EXPECT_DOUBLE_EQ(prior.survival()[2].v, 0.0);  // first measurement of position 2 defines it
    EXPECT_DOUBLE_EQ(prior.width().v, 1.25);
    EXPECT_EQ(prior.n_requests(), 2);
    // A request that drafted nothing leaves it as it is.
    prior.fold({0.0}, {0.0}, {false}, -1.0);
    EXPECT_EQ(prior.n_requests(), 2);
    EXPECT_DOUBLE_EQ(prior.survival()[0].v, 0.6);
}

// Nothing is ever accepted: the first request warms up at the full depth and needs a losing streak to
// stop; the second starts off (no draft rows at all, probes aside).
TEST(DepthPrior, SecondRequestStartsOffWhenNothingPays) {
    const DepthParams p = profit();
    auto cost = std::make_shared<VerifyCostModel>();
    DepthPrior prior;
    const std::vector<int> first = request(p, cost, prior, 40, accept_none);
    EXPECT_GT(drafted_rows(first), 16 * p.min_samples);  // warm-up at depth 16, then the streak
    EXPECT_EQ(first.back(), 0);
    const std::vector<int> second = request(p, cost, prior, 40, accept_none);
    EXPECT_EQ(drafted_rows(second), 0);
}

// Three tokens are accepted at most: the second request starts at the depth the first settled on
// (about 3) rather than warming up at 16.
TEST(DepthPrior, SecondRequestStartsFromTheLearntDepth) {
    const DepthParams p = profit();
    auto cost = std::make_shared<VerifyCostModel>();
    DepthPrior prior;
    const std::vector<int> first = request(p, cost, prior, 200, accept_three);
    ASSERT_GE(first.back(), 2);
    ASSERT_LE(first.back(), 5);
    const std::vector<int> second = request(p, cost, prior, 20, accept_three);
    size_t i = 0;
    while (i < second.size() && second[i] == 0) i++;  // no plain cycles: the baseline is known
    EXPECT_EQ(i, 0u);
    for (int d : second) {
        EXPECT_GE(d, 2);
        EXPECT_LE(d, 5);
    }
}

// Decay: after many requests where drafting paid, one request where nothing is accepted does not turn
// the next request off; a run of such requests does.
TEST(DepthPrior, OneBadRequestDoesNotPoisonIt) {
    const DepthParams p = profit();
    auto cost = std::make_shared<VerifyCostModel>();
    DepthPrior prior;
    for (int r = 0; r < 4; r++) request(p, cost, prior, 60, accept_all);
    request(p, cost, prior, 12, accept_none);
    EXPECT_GT(request(p, cost, prior, 1, accept_all)[0], 8);  // still starts deep
    for (int r = 0; r < 8; r++) request(p, cost, prior, 60, accept_none);
    EXPECT_EQ(request(p, cost, prior, 1, accept_none)[0], 0);
}

// Off from the prior, a probe that fills its depth and is wholly accepted turns drafting back on.
TEST(DepthPrior, AFullProbeTurnsDraftingOn) {
    DepthParams p = profit();
    auto cost = std::make_shared<VerifyCostModel>();
    DepthPrior prior;
    request(p, cost, prior, 40, accept_none);
    p.probe_interval = 4;
    const std::vector<int> after = request(p, cost, prior, 12, accept_all);
    EXPECT_EQ(after[0], 0);
    EXPECT_GT(after.back(), 0);
}

// One prior per set of drafter types in SpecShared, shared by every Speculator of the process: what one
// request folds in is what the next request of the same types starts from.
TEST(DepthPrior, SpecSharedKeepsOnePerTypeSet) {
    SpecParams sp;
    sp.types = {"copyspec", "suffix"};
    SpecShared shared(sp, *tiny_model("llama").model);
    DepthPrior& both = shared.depth_prior({"copyspec", "suffix"});
    EXPECT_EQ(&both, &shared.depth_prior({"copyspec", "suffix"}));
    EXPECT_NE(&both, &shared.depth_prior({"suffix"}));
    both.fold({1.0}, {1.0}, {true}, 1.0);
    EXPECT_TRUE(shared.depth_prior({"copyspec", "suffix"}).known());
    EXPECT_FALSE(shared.depth_prior({"suffix"}).known());
}

}  // namespace bee::test
