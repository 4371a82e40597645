// tests/unit/spec/test_depth_policy: the depth controllers react to acceptance and timing as
// drafters.md 2.9 describes (fed synthetic cycles: a cheap verify with high acceptance pays, a costly
// one with nothing accepted does not).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "base/error.h"
#include "spec/depth_policy.h"

namespace bee {

namespace {

// Runs `cycles` cycles: a depth-d cycle costs base_ms + d * per_token_ms and accepts `accept(d)` tokens.
int simulate(DepthPolicy& p, int base, int cycles, double base_ms, double per_token_ms, int (*accept)(int)) {
    int depth = 0;
    for (int i = 0; i < cycles; i++) {
        depth = p.next(base);
        CycleRecord c;
        c.depth = depth;
        c.n_drafted = depth;
        c.n_accepted = depth > 0 ? accept(depth) : 0;
        c.cycle_ms = base_ms + depth * per_token_ms;
        c.draft_ms = 0.01 * depth;
        p.record(c);
    }
    return depth;
}

int accept_all(int d) { return d; }
int accept_none(int) { return 0; }
int accept_three(int d) { return d < 3 ? d : 3; }

DepthParams adaptive(const char* controller) {
    DepthParams p;
    p.controller = controller;
    p.explore_interval = 0;  // no exploration rungs: the decided depth is what next() returns
    p.baseline_interval = 0;
    return p;
}

}  // namespace

TEST(DepthPolicy, FixedAlwaysDraftsTheBase) {
    DepthParams p;
    p.adaptive = false;
    auto pol = make_depth_policy(p);
    EXPECT_STREQ(pol->name(), "fixed");
    EXPECT_EQ(simulate(*pol, 12, 50, 10, 5, accept_none), 12);
}

TEST(DepthPolicy, ProfitKeepsDraftingWhenItPays) {
    auto pol = make_depth_policy(adaptive("profit"));
    EXPECT_GT(simulate(*pol, 16, 200, 10, 0.5, accept_all), 8);
}

TEST(DepthPolicy, ProfitTurnsOffWhenNothingIsAccepted) {
    DepthParams p = adaptive("profit");
    p.probe_interval = 1000;
    auto pol = make_depth_policy(p);
    EXPECT_EQ(simulate(*pol, 16, 200, 10, 2, accept_none), 0);
}

TEST(DepthPolicy, ProfitPrefersTheDepthThatStillAccepts) {
    auto pol = make_depth_policy(adaptive("profit"));
    // three tokens are accepted at most and every drafted token costs 2 ms: depth ~3 is best
    const int d = simulate(*pol, 16, 400, 10, 2, accept_three);
    EXPECT_GE(d, 2);
    EXPECT_LE(d, 5);
}

TEST(DepthPolicy, FringeFollowsAcceptanceAtTheEdge) {
    auto hi = make_depth_policy(adaptive("fringe"));
    EXPECT_EQ(simulate(*hi, 10, 100, 10, 1, accept_all), 10);
    DepthParams p = adaptive("fringe");
    p.probe_interval = 1000;
    auto lo = make_depth_policy(p);
    EXPECT_EQ(simulate(*lo, 10, 100, 10, 1, accept_none), 0);
}

TEST(VerifyCost, LinearInRowsPerContextBucket) {
    VerifyCostModel m(1.0);           // alpha 1: the last sample
    EXPECT_LT(m.predict(100, 0), 0);  // nothing measured
    m.add(100, 4, 30);                // a drafted cycle before any plain one is not usable
    EXPECT_LT(m.predict(100, 4), 0);
    m.add(100, 0, 10);
    EXPECT_DOUBLE_EQ(m.predict(100, 0), 10);
    EXPECT_LT(m.predict(100, 4), 0);  // no drafted cycle yet: the slope is unknown
    m.add(200, 4, 18);                // +2 ms per row
    EXPECT_DOUBLE_EQ(m.predict(300, 8), 26);
    EXPECT_LT(m.predict(9000, 0), 0);  // another context bucket is learnt separately
    EXPECT_EQ(VerifyCostModel::bucket(8191), 0);
    EXPECT_EQ(VerifyCostModel::bucket(8192), 1);
    EXPECT_EQ(VerifyCostModel::bucket(1 << 20), 5);
}

// A server whose slots are never alone learns the curve from its shared steps: a least-squares line over
// samples whose row counts vary (none that do not vary), until a plain cycle alone is timed.
TEST(VerifyCost, FitsSharedStepsWithoutAPlainCycle) {
    VerifyCostModel same;
    for (int i = 0; i < 8; i++) same.add(100, 3, 17.5);
    EXPECT_LT(same.predict(100, 0), 0);  // one row count: no line
    VerifyCostModel m;
    for (int rows : {3, 4, 3, 7, 5, 3, 4, 9}) m.add(100, rows, 10 + 2.5 * rows);
    EXPECT_NEAR(m.predict(100, 0), 10, 1e-9);
    EXPECT_NEAR(m.predict(100, 2), 15, 1e-9);
    EXPECT_TRUE(m.has_baseline(100));
    m.add(100, 0, 12);  // a plain cycle alone: the anchored curve takes over
    EXPECT_DOUBLE_EQ(m.predict(100, 0), 12);
}

// One accepted token every other cycle (at the first position only) pays alone on a curve where a row
// costs a quarter of a plain decode: 1.5 tokens for 1.25 decodes. In a step three other slots share, each
// row slows all four: 4.5 tokens for 8 rows' time against 4 for 7, so the controller stops drafting.
TEST(DepthPolicy, ProfitPricesDraftsByTheStepTheyJoin) {
    DepthParams p = adaptive("profit");
    p.probe_interval = 1000;
    for (int others : {0, 3}) {
        SCOPED_TRACE("other slots " + std::to_string(others));
        auto cost = std::make_shared<VerifyCostModel>();
        for (int i = 0; i < 4; i++) {
            cost->add(0, 0, 10);
            cost->add(0, 4, 20);
        }
        auto pol = make_depth_policy(p, cost);
        int drafted = 0;
        for (int i = 0; i < 300; i++) {
            pol->set_batch(others, others);
            const int depth = pol->next(8);
            if (i >= 250) drafted += depth > 0;
            CycleRecord c;
            c.depth = c.n_drafted = depth;
            c.n_accepted = depth > 0 && i % 2 == 0 ? 1 : 0;
            c.timed = false;  // the curve stays as given
            pol->record(c);
        }
        if (others == 0) EXPECT_GE(drafted, 45);
        else EXPECT_EQ(drafted, 0);
    }
}

// A CPU-like curve: every row costs a quarter of a plain decode. Three of eight draft tokens are accepted
// (the first three), so depth 3 (4 tokens for 1.75 decodes) beats depth 8 (4 tokens for 3 decodes).
TEST(DepthPolicy, ProfitWeighsTheVerifyCostCurve) {
    auto pol = make_depth_policy(adaptive("profit"));
    const int d = simulate(*pol, 8, 300, 8, 2, accept_three);
    EXPECT_GE(d, 2);
    EXPECT_LE(d, 4);
}

// The curve is shared: a second request starts with it known and does not seed a baseline again; on
// a prompt where nothing is accepted it stops drafting after warm-up + off-dwell cycles.
TEST(DepthPolicy, ProfitSharesTheCostCurveAcrossRequests) {
    DepthParams p = adaptive("profit");
    p.probe_interval = 1000;
    auto cost = std::make_shared<VerifyCostModel>();
    auto first = make_depth_policy(p, cost);
    simulate(*first, 16, 50, 10, 2.5, accept_none);
    EXPECT_GT(cost->predict(0, 0), 0);
    auto second = make_depth_policy(p, cost);
    EXPECT_EQ(second->next(16), 16);  // warm-up right away: the baseline is known
    int drafted_cycles = 0, last = -1;
    for (int i = 0; i < 30; i++) {
        const int depth = i == 0 ? 16 : second->next(16);
        drafted_cycles += depth > 0 ? 1 : 0;
        CycleRecord c;
        c.depth = c.n_drafted = depth;
        c.cycle_ms = 10 + 2.5 * depth;
        second->record(c);
        last = depth;
    }
    EXPECT_EQ(last, 0);
    EXPECT_LE(drafted_cycles, p.min_samples + p.off_dwell + 1);
}

// Settled shallow while only three tokens were accepted, the controller sees nothing beyond its depth
// (no exploration here); when the drafts then fill the depth and are wholly accepted it climbs anyway.
TEST(DepthPolicy, ProfitClimbsWhenDraftsFillTheDepth) {
    auto pol = make_depth_policy(adaptive("profit"));
    const int shallow = simulate(*pol, 16, 200, 8, 2, accept_three);
    ASSERT_LE(shallow, 4);
    EXPECT_GE(simulate(*pol, 16, 40, 8, 2, accept_all), 10);
}

TEST(DepthPolicy, UnknownControllerIsAnError) {
    DepthParams p;
    p.controller = "greedy";
    EXPECT_THROW(make_depth_policy(p), Error);
}

}  // namespace bee
