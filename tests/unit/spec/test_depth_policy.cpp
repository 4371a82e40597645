// tests/unit/spec/test_depth_policy: the depth controllers react to acceptance and timing as
// drafters.md 2.9 describes (fed synthetic cycles: a cheap verify with high acceptance pays, a costly
// one with nothing accepted does not).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

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

TEST(VerifyCost, PiecewiseLinearInRowsPerContextBucket) {
    VerifyCostModel m(1.0);           // alpha 1: the last sample, once a bin has one
    EXPECT_LT(m.predict(100, 0), 0);  // nothing measured
    m.add(100, 4, 30);
    EXPECT_DOUBLE_EQ(m.predict(100, 4), 30);  // measured at that count
    EXPECT_LT(m.predict(100, 0), 0);          // one count: no line through it
    m.add(100, 0, 10);
    EXPECT_DOUBLE_EQ(m.predict(100, 0), 10);
    EXPECT_DOUBLE_EQ(m.predict(100, 2), 20);  // between counts: linear
    m.add(200, 8, 38);                        // +2 ms per row from 4 to 8 (concave)
    EXPECT_DOUBLE_EQ(m.predict(300, 6), 34);
    EXPECT_DOUBLE_EQ(m.predict(300, 12), 38 + 4 * 3.5);  // beyond: the slope across 0..8 (never below the top's)
    EXPECT_LT(m.predict(9000, 0), 0);                    // another context bucket is learnt separately
    EXPECT_EQ(VerifyCostModel::bucket(8191), 0);
    EXPECT_EQ(VerifyCostModel::bucket(8192), 1);
    EXPECT_EQ(VerifyCostModel::bucket(1 << 20), 5);
}

// A server whose slots are never alone learns the curve from its shared steps (rows = all but one of the
// step's rows): four plain rows and four slots drafting one token each give the price of the rows between.
TEST(VerifyCost, LearnsFromSharedSteps) {
    VerifyCostModel m;
    for (int i = 0; i < 8; i++) m.add(100, 3, 17.5);
    EXPECT_TRUE(m.has_baseline(100, 3));
    EXPECT_FALSE(m.has_baseline(100, 0));  // never measured, and no line yet
    for (int i = 0; i < 8; i++) m.add(100, 7, 25.5);
    EXPECT_NEAR(m.predict(100, 5), 21.5, 1e-9);
    EXPECT_NEAR(m.predict(100, 0), 11.5, 1e-9);  // below: the same slope
    EXPECT_NEAR(m.predict(100, 11), 33.5, 1e-9);
    // the first samples of a count are averaged (not the first alone), later ones move it at the EWMA rate
    VerifyCostModel avg(0.05);
    avg.add(0, 0, 10);
    avg.add(0, 0, 20);
    EXPECT_DOUBLE_EQ(avg.predict(0, 0), 15);
    // a count in the ranges above 16 rows keeps its samples' mean row count
    avg.add(0, 40, 90);
    avg.add(0, 46, 96);
    EXPECT_DOUBLE_EQ(avg.predict(0, 43), 93);
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

// After warm-up at 16 on a curve where a row costs a quarter of a plain decode, with only the first
// token ever accepted, the next decision goes straight to depth 1, not down the ladder rung by rung.
TEST(DepthPolicy, ProfitGoesStraightDownToTheBestDepth) {
    DepthParams p = adaptive("profit");
    auto pol = make_depth_policy(p);
    std::vector<int> depths;
    for (int i = 0; i < 12; i++) {
        const int depth = pol->next(16);
        depths.push_back(depth);
        CycleRecord c;
        c.depth = c.n_drafted = depth;
        c.n_accepted = depth > 0 ? 1 : 0;
        c.cycle_ms = 10 + 2.5 * depth;
        pol->record(c);
    }
    // a plain cycle (the baseline), 3 warm-up cycles at 16, then depth 1 (2 tokens for 1.25 decodes); two
    // wholly accepted cycles try one rung up, which accepts one token of two, and it comes back
    const std::vector<int> want = {0, 16, 16, 16, 1, 1, 2, 1, 1, 2, 1, 1};
    EXPECT_EQ(depths, want);
}

// In a step three other slots share, the warm-up drafts at most 4 tokens (not the drafters' 16): every
// warm-up row slows all four slots.
TEST(DepthPolicy, ProfitWarmsUpShallowInASharedStep) {
    auto cost = std::make_shared<VerifyCostModel>();
    for (int i = 0; i < 4; i++) cost->add(0, 3, 20);  // plain shared steps of 4 rows are known
    auto pol = make_depth_policy(adaptive("profit"), cost);
    pol->set_batch(3, 3);
    for (int i = 0; i < 3; i++) {
        const int depth = pol->next(16);
        EXPECT_EQ(depth, 4) << "cycle " << i;
        CycleRecord c;
        c.depth = c.n_drafted = c.n_accepted = depth;
        c.timed = false;
        pol->record(c);
    }
    cost->add(0, 0, 10);
    auto alone = make_depth_policy(adaptive("profit"), cost);
    EXPECT_EQ(alone->next(16), 16);  // alone, the warm-up is at the drafters' depth
}

// Off on a prompt where nothing is accepted, the probes come at 16, 32, 64, then every 128 cycles (each
// probe that drafts and does not pay doubles the wait, up to 8x); a probe that pays resets the interval.
TEST(DepthPolicy, ProfitBacksOffFailedProbes) {
    DepthParams p = adaptive("profit");
    auto pol = make_depth_policy(p);
    std::vector<int> probes;
    int i = 0;
    const auto cycle = [&](bool pays) {
        const int depth = pol->next(8);
        CycleRecord c;
        c.depth = c.n_drafted = depth;
        c.n_accepted = pays ? depth : 0;
        c.cycle_ms = 10 + 2.5 * depth;
        pol->record(c);
        return depth;
    };
    for (; i < 40; i++) cycle(false);  // baseline, warm-up, off
    ASSERT_EQ(cycle(false), 0);
    for (int k = 0; k < 600; k++)
        if (cycle(false) > 0) probes.push_back(k);
    ASSERT_GE(probes.size(), 5u);
    std::vector<int> gaps;
    for (size_t k = 1; k < probes.size(); k++) gaps.push_back(probes[k] - probes[k - 1]);
    const std::vector<int> want_first = {64, 128, 128, 128};  // the 16- and 32-cycle waits came in the first 40
    EXPECT_EQ(std::vector<int>(gaps.begin(), gaps.begin() + 4), want_first);
    // a probe that fills its depth and is wholly accepted turns drafting on
    int on = 0;
    for (int k = 0; k < 200 && on == 0; k++) on = cycle(true);
    EXPECT_GT(on, 0);
}

TEST(DepthPolicy, UnknownControllerIsAnError) {
    DepthParams p;
    p.controller = "greedy";
    EXPECT_THROW(make_depth_policy(p), Error);
}

}  // namespace bee
