// tests/unit/spec/test_depth_policy: the depth controllers react to acceptance and timing as
// drafters.md 2.9 describes (fed synthetic cycles: a cheap verify with high acceptance pays, a costly
// one with nothing accepted does not).
#include <gtest/gtest.h>

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
    p.explore_interval = 0;    // no exploration rungs: the decided depth is what next() returns
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

TEST(DepthPolicy, UnknownControllerIsAnError) {
    DepthParams p;
    p.controller = "greedy";
    EXPECT_THROW(make_depth_policy(p), Error);
}

}  // namespace bee
