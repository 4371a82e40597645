// tests/unit/chat/test_loop_guard: the reasoning-loop guard (spec A.4) on synthetic token streams:
// loops of several shapes must trigger the right detector, varied text must not.
#include <gtest/gtest.h>

#include <random>

#include "base/error.h"
#include "chat/loop_guard.h"

namespace {

using namespace bee::chat;

// Feeds tokens until the guard triggers; returns the verdict and how many tokens it took.
std::pair<LoopVerdict, size_t> feed(LoopGuard& g, const std::vector<int32_t>& tokens, bool reasoning) {
    for (size_t k = 0; k < tokens.size(); ++k) {
        LoopVerdict v = g.observe(tokens[k], reasoning);
        if (v.triggered()) return {v, k + 1};
    }
    return {LoopVerdict{}, tokens.size()};
}

// "Natural" text: tokens drawn from a large vocabulary with a skewed (Zipf-like) distribution.
std::vector<int32_t> varied_tokens(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> out;
    for (size_t k = 0; k < n; ++k) {
        double u = std::uniform_real_distribution<double>(0, 1)(rng);
        out.push_back(int32_t(1 + 30000 * u * u * u));
    }
    return out;
}

std::vector<int32_t> cycle(const std::vector<int32_t>& unit, size_t n) {
    std::vector<int32_t> out;
    while (out.size() < n) out.push_back(unit[out.size() % unit.size()]);
    return out;
}

TEST(LoopGuardParams, DefaultsAreTheSpecsAndValid) {
    LoopGuardParams p;
    EXPECT_EQ(p.mode, LoopGuardMode::ForceClose);
    EXPECT_EQ(p.min_tokens, 1024);
    EXPECT_EQ(p.window, 2048);
    EXPECT_EQ(p.max_period, 512);
    EXPECT_EQ(p.min_coverage, 768);
    EXPECT_EQ(p.check_interval, 32);
    EXPECT_EQ(p.interventions, 1);
    EXPECT_NO_THROW(p.validate("test"));
}

TEST(LoopGuardParams, ValidationRejectsEachRule) {
    auto bad = [](auto mutate) {
        LoopGuardParams p;
        mutate(p);
        EXPECT_THROW(p.validate("--reasoning-loop"), bee::Error);
    };
    bad([](LoopGuardParams& p) { p.check_interval = 0; });
    bad([](LoopGuardParams& p) { p.interventions = -1; });
    bad([](LoopGuardParams& p) { p.window = 700; });      // window < min_coverage
    bad([](LoopGuardParams& p) { p.max_period = 700; });  // > window / 3
    bad([](LoopGuardParams& p) { p.min_tokens = 500; });  // < min_coverage
    EXPECT_THROW(LoopGuard([] {
                     LoopGuardParams p;
                     p.window = 10;
                     return p;
                 }()),
                 bee::Error);
    try {
        LoopGuardParams p;
        p.max_period = 1000;
        p.validate("request");
        FAIL();
    } catch (const bee::Error& e) {
        EXPECT_NE(std::string(e.what()).find("max_period"), std::string::npos) << e.what();
    }
}

TEST(LoopGuardParams, ModeNames) {
    EXPECT_EQ(parse_loop_guard_mode("off", "x"), LoopGuardMode::Off);
    EXPECT_EQ(parse_loop_guard_mode("force-close", "x"), LoopGuardMode::ForceClose);
    EXPECT_EQ(parse_loop_guard_mode("stop", "x"), LoopGuardMode::Stop);
    EXPECT_THROW(parse_loop_guard_mode("close", "--reasoning-loop-guard"), bee::Error);
    EXPECT_STREQ(loop_guard_mode_name(LoopGuardMode::ForceClose), "force-close");
    EXPECT_STREQ(loop_action_name(LoopAction::Stop), "stop");
}

TEST(LoopGuard, ShortPeriodLoopInReasoningForceClosesThenStops) {
    LoopGuard g{LoopGuardParams{}};
    std::vector<int32_t> loop = cycle({11, 12, 13, 14, 15, 16, 17}, 4000);
    auto [v, at] = feed(g, loop, true);
    ASSERT_TRUE(v.triggered());
    EXPECT_EQ(v.action, LoopAction::ForceClose);
    EXPECT_STREQ(v.reason, "periodic_tail");
    EXPECT_EQ(v.period, 7);
    EXPECT_EQ(at, 1024u);  // the first check at or after min_tokens
    EXPECT_EQ(g.interventions_used(), 1);
    // The model loops again after the forced close: the single intervention is used, so stop.
    auto [v2, at2] = feed(g, loop, true);
    ASSERT_TRUE(v2.triggered());
    EXPECT_EQ(v2.action, LoopAction::Stop);
    (void)at2;
}

TEST(LoopGuard, LoopAfterVariedStartIsCaughtByNgramDominance) {
    // 300 varied tokens keep the exact-period rule from firing while they are in the window; the
    // repeated n-grams dominate as soon as they cover min_coverage and half of the tail.
    LoopGuard g{LoopGuardParams{}};
    std::vector<int32_t> tokens = varied_tokens(300, 1);
    std::vector<int32_t> loop = cycle({11, 12, 13, 14, 15, 16, 17}, 4000);
    tokens.insert(tokens.end(), loop.begin(), loop.end());
    auto [v, at] = feed(g, tokens, true);
    ASSERT_TRUE(v.triggered());
    EXPECT_STREQ(v.reason, "ngram_dominance");
    EXPECT_EQ(v.action, LoopAction::ForceClose);
    EXPECT_EQ(at % 32, 0u);  // only on check_interval boundaries
    EXPECT_GT(at, 300u + 768u);
}

TEST(LoopGuard, LongPeriodLoopWithSomeNoiseTriggers) {
    LoopGuard g{LoopGuardParams{}};
    std::vector<int32_t> unit = varied_tokens(200, 2);  // a 200-token paragraph repeated
    std::vector<int32_t> tokens = cycle(unit, 3000);
    for (size_t k = 250; k < tokens.size(); k += 97) tokens[k] = 99999;  // ~1% edits: within the 2% rule
    auto [v, at] = feed(g, tokens, true);
    ASSERT_TRUE(v.triggered());
    EXPECT_STREQ(v.reason, "periodic_tail");
    EXPECT_EQ(v.period, 200);
    (void)at;
}

TEST(LoopGuard, StopModeStopsInReasoning) {
    LoopGuardParams p;
    p.mode = LoopGuardMode::Stop;
    LoopGuard g(p);
    auto [v, at] = feed(g, cycle({5, 6}, 3000), true);
    ASSERT_TRUE(v.triggered());
    EXPECT_EQ(v.action, LoopAction::Stop);
    EXPECT_EQ(v.period, 2);
    (void)at;
}

TEST(LoopGuard, VisibleLoopStopsWithoutWaitingForMinTokens) {
    LoopGuard g{LoopGuardParams{}};
    auto [v, at] = feed(g, cycle({42}, 3000), false);
    ASSERT_TRUE(v.triggered());
    EXPECT_EQ(v.action, LoopAction::Stop);  // visible region: always stop
    EXPECT_STREQ(v.reason, "periodic_tail");
    EXPECT_LT(at, 1024u);  // min_tokens applies to reasoning only; needs coverage >= 768
    EXPECT_GE(at, 769u);
}

TEST(LoopGuard, OffNeverTriggers) {
    LoopGuardParams p;
    p.mode = LoopGuardMode::Off;
    LoopGuard g(p);
    EXPECT_FALSE(feed(g, cycle({1, 2, 3}, 5000), true).first.triggered());
}

TEST(LoopGuard, VariedTextNeverTriggers) {
    for (uint32_t seed = 10; seed < 14; ++seed) {
        LoopGuard g{LoopGuardParams{}};
        EXPECT_FALSE(feed(g, varied_tokens(6000, seed), true).first.triggered()) << seed;
        EXPECT_FALSE(feed(g, varied_tokens(6000, seed + 100), false).first.triggered()) << seed;
    }
}

TEST(LoopGuard, RegionsAreCountedSeparately) {
    LoopGuard g{LoopGuardParams{}};
    std::vector<int32_t> loop = cycle({7, 8, 9}, 600);
    for (int32_t t : loop) EXPECT_FALSE(g.observe(t, true).triggered());
    for (int32_t t : varied_tokens(600, 3)) EXPECT_FALSE(g.observe(t, false).triggered());
    EXPECT_EQ(g.reasoning_tokens(), 600);
    EXPECT_EQ(g.visible_tokens(), 600);
}

TEST(LoopDetectors, NgramDominanceOnRepeatedPhrasesWithVaryingGaps) {
    // Phrases of 12 tokens recur, separated by varying single tokens: no exact period, but most of the
    // tail is made of repeated n-grams.
    std::vector<int32_t> phrase_a = varied_tokens(12, 20), phrase_b = varied_tokens(12, 21);
    std::vector<int32_t> tail;
    std::mt19937 rng(5);
    while (tail.size() < 2048) {
        const auto& ph = rng() % 2 ? phrase_a : phrase_b;
        tail.insert(tail.end(), ph.begin(), ph.end());
        tail.push_back(int32_t(50000 + rng() % 1000));
    }
    tail.resize(2048);
    LoopGuardParams p;
    int32_t period = 0;
    EXPECT_FALSE(loop_periodic_tail(tail, p, &period));
    EXPECT_TRUE(loop_ngram_dominance(tail, p));
    EXPECT_FALSE(loop_ngram_dominance(varied_tokens(2048, 22), p));
}

TEST(LoopDetectors, LowEntropyOnAFewTokensShuffled) {
    std::mt19937 rng(9);
    std::vector<int32_t> tail;
    for (int k = 0; k < 2048; ++k) tail.push_back(int32_t(100 + rng() % 6));  // 6 ids, random order
    LoopGuardParams p;
    int32_t period = 0;
    EXPECT_FALSE(loop_periodic_tail(tail, p, &period));
    EXPECT_TRUE(loop_low_entropy(tail, p));
    for (int k = 0; k < 200; ++k) tail[size_t(1900 + k % 148)] = int32_t(1000 + k);  // many distinct ids
    EXPECT_FALSE(loop_low_entropy(tail, p));
    EXPECT_FALSE(loop_low_entropy(std::vector<int32_t>(1000, 1), p));  // fewer than 1024 tokens
}

}  // namespace
