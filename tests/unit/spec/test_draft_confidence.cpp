// tests/unit/spec/test_draft_confidence: where a scoring drafter's greedy chain stops (DraftConfidence):
// the calibration of its top-1 probabilities against acceptance (the main chain's, with trees), and the
// row-cost cut.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "spec/draft_confidence.h"
#include "spec/draft_marginals.h"

namespace bee {

namespace {

// One draft of up to `n` depths, each with top-1 probability p, at row cost s: the depths drafted.
int draft(DraftConfidence& c, double s, int n, double p) {
    c.begin(s);
    int d = 0;
    while (d < n && c.keep(p)) d++;
    return d;
}

}  // namespace

// Without a measured row cost nothing is cut; with one, the chain stops where the product of the
// probabilities no longer beats s (1 + E) / (1 + s d): p = 0.5, s = 0.25 keeps depth 1 (0.5 > 0.25) and
// cuts depth 2 (0.25 < 0.25 * 1.5 / 1.25 = 0.3).
TEST(DraftConfidence, CutsWhereTheRowDoesNotPay) {
    DraftConfidence c;
    EXPECT_EQ(draft(c, -1, 7, 0.5), 7);
    EXPECT_EQ(draft(c, 0.25, 7, 0.5), 1);
    EXPECT_EQ(draft(c, 0.25, 7, 0.95), 7);  // 0.95^7 = 0.70 still pays
    EXPECT_EQ(draft(c, 0.25, 7, 0.2), 0);   // not even the first depth
    EXPECT_FALSE(c.keep(0.99));             // stopped: no more depths this draft
}

// A drafter that says 0.9 where the target accepts half of its first tokens is scaled to 0.5 at depth 1
// after a few cycles, and its chain is then cut shorter; one that is under-confident is scaled up.
TEST(DraftConfidence, CalibratesAgainstAcceptance) {
    DraftConfidence over;
    for (int i = 0; i < 40; i++) {
        draft(over, -1, 3, 0.9);
        over.accepted(i % 2 == 0 ? 1 : 0);  // depth 1 accepted every other cycle, depth 2 never
    }
    EXPECT_NEAR(over.scale(0), 0.5 / 0.9, 0.05);
    EXPECT_NEAR(over.scale(1), 0.0, 0.03);  // depth 2 was reached (depth 1 accepted) and never accepted
    EXPECT_DOUBLE_EQ(over.scale(2), 1.0);   // depth 3 never reached: no samples
    DraftConfidence fresh;
    EXPECT_EQ(draft(fresh, 0.2, 3, 0.9), 3);
    EXPECT_EQ(draft(over, 0.2, 3, 0.9), 1);  // calibrated: 0.5 pays, 0.5 * 0.02 does not

    DraftConfidence under;
    for (int i = 0; i < 40; i++) {
        draft(under, -1, 2, 0.3);
        under.accepted(2);
    }
    EXPECT_NEAR(under.scale(0), 1.0 / 0.3, 0.05);
    EXPECT_EQ(draft(under, 0.25, 2, 0.3), 2);  // uncalibrated 0.3 * 0.3 = 0.09 would not pay
}

// With a tree the verify path may leave the main chain: only the chain's leading accepted nodes count for
// the top-1 calibration, so a runner-up that keeps being accepted makes the top-1 look as weak as it is.
TEST(DraftConfidence, OnlyTheMainChainCalibratesTheTop1) {
    // rows: 0 the root, 1..3 the chain (nodes 0..2), 4.. branches
    EXPECT_EQ(main_chain_accepted({0}), 0);
    EXPECT_EQ(main_chain_accepted({0, 1, 2}), 2);
    EXPECT_EQ(main_chain_accepted({0, 1, 2, 3}), 3);
    EXPECT_EQ(main_chain_accepted({0, 4}), 0);     // a runner-up at depth 1 was accepted
    EXPECT_EQ(main_chain_accepted({0, 1, 5}), 1);  // the chain, then a runner-up at depth 2
    DraftConfidence c;
    for (int i = 0; i < 40; i++) {
        draft(c, -1, 3, 0.8);
        c.accepted(main_chain_accepted({0, 4, 7}));  // the path goes through a branch every time
    }
    EXPECT_NEAR(c.scale(0), 0.02, 1e-9);  // the top-1 is never right (clamped at 0.02)
}

// Every kExploreEvery-th draft is not cut, so a depth the calibration cut off is measured again.
TEST(DraftConfidence, ExploresEverySixteenthDraft) {
    DraftConfidence c;
    int full = 0;
    for (int i = 0; i < 4 * DraftConfidence::kExploreEvery; i++) full += draft(c, 0.5, 5, 0.3) == 5;
    EXPECT_EQ(full, 4);
}

// A tree's candidates are weighed with the calibration too: log-probabilities shifted by log(scale), capped at 0.
TEST(DraftConfidence, CalibrateShiftsTheCandidates) {
    DraftConfidence c;
    for (int i = 0; i < 20; i++) {
        draft(c, -1, 1, 0.8);
        c.accepted(i % 5 == 0 ? 1 : 0);
    }
    std::vector<DepthTop> depth(2);
    depth[0] = {{5, 6}, {std::log(0.8f), std::log(0.1f)}};
    depth[1] = {{7}, {std::log(0.6f)}};
    calibrate(c, depth);
    const double s0 = c.scale(0);
    EXPECT_LT(s0, 0.5);
    EXPECT_NEAR(std::exp(depth[0].lp[0]), 0.8 * s0, 1e-5);
    EXPECT_NEAR(std::exp(depth[0].lp[1]), 0.1 * s0, 1e-5);
    EXPECT_NEAR(std::exp(depth[1].lp[0]), 0.6, 1e-6);  // depth 2 has no samples: unchanged
}

}  // namespace bee
