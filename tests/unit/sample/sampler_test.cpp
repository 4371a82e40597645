// tests/unit/sample/sampler_test: argmax, greedy, each filter and their order, penalties, seeds, frequencies.
#include "sample/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "base/error.h"

namespace bee {
namespace {

// Every filter off, temperature 1: the chain is a plain softmax.
SamplingParams plain(float temp = 1.0f) {
    SamplingParams p;
    p.temp = temp;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = 1234;
    return p;
}

// Logits whose softmax is exactly `probs` (up to float rounding).
std::vector<float> logits_of(const std::vector<double>& probs) {
    std::vector<float> l;
    for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
    return l;
}

std::vector<int32_t> ids_of(const std::vector<TokenProb>& c) {
    std::vector<int32_t> ids;
    for (const TokenProb& t : c) ids.push_back(t.id);
    return ids;
}

std::vector<int32_t> sorted_ids(const std::vector<TokenProb>& c) {
    std::vector<int32_t> ids = ids_of(c);
    std::sort(ids.begin(), ids.end());
    return ids;
}

double sum_p(const std::vector<TokenProb>& c) {
    double s = 0.0;
    for (const TokenProb& t : c) s += t.p;
    return s;
}

// A small xorshift so logit sequences are reproducible without touching the sampler's generator.
struct TestRng {
    uint64_t s = 88172645463325252ull;
    float next() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return static_cast<float>(s >> 40) / static_cast<float>(1 << 24);
    }
};

std::vector<float> random_logits(TestRng& r, int32_t n, float scale) {
    std::vector<float> l(static_cast<size_t>(n));
    for (float& x : l) x = (r.next() - 0.5f) * scale;
    return l;
}

// A 5-token distribution, shuffled so that id order is not probability order.
// id:   0     1     2     3     4
// p:  0.15  0.5   0.05  0.2   0.1
const std::vector<double> kFive = {0.15, 0.5, 0.05, 0.2, 0.1};

TEST(Argmax, PicksLargestAndLowestOnTies) {
    const float a[] = {1.0f, 3.0f, 2.0f, 3.0f};
    EXPECT_EQ(argmax(a, 4), 1);
    const float b[] = {-5.0f, -1.0f, -1.0f};
    EXPECT_EQ(argmax(b, 3), 1);
    const float c[] = {7.0f};
    EXPECT_EQ(argmax(c, 1), 0);
    EXPECT_EQ(argmax(c, 0), -1);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float d[] = {nan, 1.0f, nan, 2.0f};
    EXPECT_EQ(argmax(d, 4), 3);
    const float inf = std::numeric_limits<float>::infinity();
    const float e[] = {-inf, -inf};
    EXPECT_EQ(argmax(e, 2), 0);
}

// The block scan against the element-by-element definition, on lengths around its 64-value blocks,
// with ties across and inside blocks, NaN, ±inf and ±0 mixed in.
TEST(Argmax, BlockScanMatchesTheDefinition) {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    const float specials[] = {nan, inf, -inf, 0.0f, -0.0f, 3.0f, -3.0f};
    auto reference = [](const std::vector<float>& x) {
        int32_t best = 0;
        while (best < (int32_t)x.size() - 1 && std::isnan(x[best])) best++;
        for (int32_t i = best + 1; i < (int32_t)x.size(); i++)
            if (x[i] > x[best]) best = i;
        return best;
    };
    TestRng r(5);
    for (int32_t n : {1, 2, 63, 64, 65, 127, 128, 129, 200, 1000, 49152}) {
        for (int rep = 0; rep < 40; rep++) {
            std::vector<float> x(static_cast<size_t>(n));
            for (float& v : x) v = (float)(int)(r.next() * 7) - 3.0f;  // few distinct values: many ties
            const int n_special = rep % 4 == 0 ? 0 : 1 + rep % 5;
            for (int k = 0; k < n_special; k++) x[(size_t)(r.next() * n) % n] = specials[(size_t)(r.next() * 7) % 7];
            if (rep == 39) std::fill(x.begin(), x.end(), nan);
            if (rep == 38) std::fill(x.begin(), x.end(), -inf);
            ASSERT_EQ(argmax(x.data(), n), reference(x)) << "n " << n << " rep " << rep;
        }
    }
}

TEST(Greedy, TakesArgmaxWithTiesToLowestId) {
    SamplingParams p;  // llama-cli defaults, but greedy
    p.temp = 0.0f;
    Sampler s(p, 6);
    const std::vector<float> l = {0.1f, 2.0f, -1.0f, 2.0f, 1.9f, 0.0f};
    EXPECT_EQ(s.sample(l.data()), 1);
    ASSERT_EQ(s.candidates().size(), 1u);
    EXPECT_EQ(s.candidates()[0].id, 1);
    EXPECT_FLOAT_EQ(s.candidates()[0].p, 1.0f);
    EXPECT_FLOAT_EQ(s.prob_of(1), 1.0f);
    EXPECT_FLOAT_EQ(s.prob_of(3), 0.0f);

    p.temp = -1.0f;
    Sampler neg(p, 6);
    EXPECT_EQ(neg.sample(l.data()), 1);
}

// logit_bias comes first in the chain: it moves greedy picks, -inf bans a token, and sampled distributions
// see the biased logits; ids outside the vocabulary and +inf / NaN biases are refused.
TEST(LogitBias, AppliesBeforeEverythingElse) {
    const std::vector<float> l = {0.1f, 2.0f, -1.0f, 2.0f, 1.9f, 0.0f};
    SamplingParams p = plain(0.0f);
    p.logit_bias = {{1, -std::numeric_limits<float>::infinity()}};
    EXPECT_EQ(Sampler(p, 6).sample(l.data()), 3);         // 1 banned: the tie goes to 3
    p.logit_bias = {{1, -1.0f}, {2, 10.0f}, {2, -5.0f}};  // entries for one token add up
    EXPECT_EQ(Sampler(p, 6).sample(l.data()), 2);
    p = plain(1.0f);
    p.logit_bias = {{0, -std::numeric_limits<float>::infinity()}, {5, -std::numeric_limits<float>::infinity()}};
    Sampler s(p, 6);
    s.apply(l.data());
    EXPECT_EQ(s.prob_of(0), 0.0f);
    EXPECT_EQ(s.prob_of(5), 0.0f);
    EXPECT_GT(s.prob_of(2), 0.0f);
    for (float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
        p.logit_bias = {{1, bad}};
        EXPECT_THROW(Sampler(p, 6), Error);
    }
    p.logit_bias = {{6, 1.0f}};
    EXPECT_THROW(Sampler(p, 6), Error);
}

TEST(Greedy, StillHonoursPenalties) {
    SamplingParams p = plain(0.0f);
    p.repeat_penalty = 3.0f;
    Sampler s(p, 3);
    const std::vector<float> l = {1.0f, 3.0f, 2.0f};
    EXPECT_EQ(s.sample(l.data()), 1);
    s.accept(1);  // 3 / 3 = 1 < 2
    EXPECT_EQ(s.sample(l.data()), 2);
    s.accept(2);  // 2 / 3 < 1; ids 0 and 1 tie at 1: lowest id wins
    EXPECT_EQ(s.sample(l.data()), 0);
}

TEST(TopK, KeepsTheKLargestSorted) {
    SamplingParams p = plain();
    p.top_k = 2;
    Sampler s(p, 5);
    const std::vector<float> l = logits_of(kFive);
    s.apply(l.data());
    EXPECT_TRUE(s.candidates_sorted());
    EXPECT_EQ(ids_of(s.candidates()), (std::vector<int32_t>{1, 3}));
    EXPECT_NEAR(s.candidates()[0].p, 0.5 / 0.7, 1e-6);
    EXPECT_NEAR(s.candidates()[1].p, 0.2 / 0.7, 1e-6);
}

TEST(TopK, TiesAtTheBoundaryGoToLowerIds) {
    SamplingParams p = plain();
    p.top_k = 2;
    Sampler s(p, 5);
    const std::vector<float> l = {1.0f, 5.0f, 3.0f, 5.0f, 5.0f};
    s.apply(l.data());
    EXPECT_EQ(ids_of(s.candidates()), (std::vector<int32_t>{1, 3}));
    EXPECT_NEAR(s.candidates()[0].p, 0.5, 1e-6);
}

TEST(TopK, LargerThanVocabIsANoOp) {
    SamplingParams p = plain();
    p.top_k = 10;
    Sampler s(p, 5);
    const std::vector<float> l = logits_of(kFive);
    s.apply(l.data());
    ASSERT_EQ(s.candidates().size(), 5u);
    for (const TokenProb& t : s.candidates()) EXPECT_NEAR(t.p, kFive[t.id], 1e-6);
}

TEST(TopP, KeepsSmallestPrefixReachingP) {
    const std::vector<float> l = logits_of(kFive);
    struct Case {
        float top_p;
        std::vector<int32_t> ids;
    };
    // sorted: 1 (0.5), 3 (0.2), 0 (0.15), 4 (0.1), 2 (0.05); cumulative 0.5, 0.7, 0.85, 0.95, 1.0
    const Case cases[] = {
        {0.0f, {1}}, {0.3f, {1}}, {0.6f, {1, 3}}, {0.8f, {1, 3, 0}}, {0.9f, {1, 3, 0, 4}}, {0.99f, {1, 3, 0, 4, 2}},
    };
    for (const Case& c : cases) {
        SamplingParams p = plain();
        p.top_p = c.top_p;
        Sampler s(p, 5);
        s.apply(l.data());
        EXPECT_TRUE(s.candidates_sorted());
        EXPECT_EQ(ids_of(s.candidates()), c.ids) << "top_p " << c.top_p;
        double kept = 0.0;
        for (int32_t id : c.ids) kept += kFive[id];
        for (const TokenProb& t : s.candidates()) EXPECT_NEAR(t.p, kFive[t.id] / kept, 1e-6);
    }
}

TEST(MinP, KeepsTokensAboveFractionOfMax) {
    const std::vector<float> l = logits_of(kFive);
    struct Case {
        float min_p;
        std::vector<int32_t> ids;  // sorted ids: min-p alone does not sort
    };
    // p / p_max: id0 0.3, id1 1, id2 0.1, id3 0.4, id4 0.2
    const Case cases[] = {{0.05f, {0, 1, 2, 3, 4}},
                          {0.15f, {0, 1, 3, 4}},
                          {0.25f, {0, 1, 3}},
                          {0.35f, {1, 3}},
                          {0.5f, {1}},
                          {1.0f, {1}},
                          {2.0f, {1}}};
    for (const Case& c : cases) {
        SamplingParams p = plain();
        p.min_p = c.min_p;
        Sampler s(p, 5);
        s.apply(l.data());
        EXPECT_EQ(sorted_ids(s.candidates()), c.ids) << "min_p " << c.min_p;
        EXPECT_NEAR(sum_p(s.candidates()), 1.0, 1e-6);
    }
}

TEST(Temperature, ScalesLogits) {
    const std::vector<float> l = {0.0f, static_cast<float>(std::log(4.0))};
    Sampler hot(plain(2.0f), 2);  // p ~ {1, 2}
    hot.apply(l.data());
    EXPECT_NEAR(hot.prob_of(0), 1.0 / 3.0, 1e-6);
    EXPECT_NEAR(hot.prob_of(1), 2.0 / 3.0, 1e-6);
    Sampler cold(plain(0.5f), 2);  // p ~ {1, 16}
    cold.apply(l.data());
    EXPECT_NEAR(cold.prob_of(0), 1.0 / 17.0, 1e-6);
    EXPECT_NEAR(cold.prob_of(1), 16.0 / 17.0, 1e-6);
    Sampler tiny(plain(1e-45f), 2);  // 1/temp overflows: greedy
    tiny.apply(l.data());
    ASSERT_EQ(tiny.candidates().size(), 1u);
    EXPECT_EQ(tiny.candidates()[0].id, 1);
}

TEST(Chain, TopPSeesTheDistributionAfterTopK) {
    const std::vector<float> l = logits_of(kFive);
    SamplingParams p = plain();
    p.top_p = 0.6f;
    Sampler alone(p, 5);
    alone.apply(l.data());
    EXPECT_EQ(ids_of(alone.candidates()), (std::vector<int32_t>{1, 3}));
    p.top_k = 2;  // renormalized: 0.714, 0.286 -> the first alone reaches 0.6
    Sampler after_k(p, 5);
    after_k.apply(l.data());
    EXPECT_EQ(ids_of(after_k.candidates()), (std::vector<int32_t>{1}));
}

TEST(Chain, TopPAndMinPKeepTheShorterPrefix) {
    const std::vector<float> l = logits_of(kFive);
    SamplingParams p = plain();
    p.top_p = 0.9f;   // alone: {1, 3, 0, 4}
    p.min_p = 0.25f;  // alone: {1, 3, 0}
    Sampler a(p, 5);
    a.apply(l.data());
    EXPECT_EQ(ids_of(a.candidates()), (std::vector<int32_t>{1, 3, 0}));
    p.top_p = 0.6f;  // alone: {1, 3}
    Sampler b(p, 5);
    b.apply(l.data());
    EXPECT_EQ(ids_of(b.candidates()), (std::vector<int32_t>{1, 3}));
    EXPECT_NEAR(b.candidates()[0].p, 0.5 / 0.7, 1e-6);
}

TEST(Chain, TemperatureComesAfterMinP) {
    const std::vector<float> l = logits_of(kFive);
    SamplingParams p = plain(100.0f);  // if temperature came first, every token would pass min-p
    p.min_p = 0.25f;
    Sampler s(p, 5);
    s.apply(l.data());
    EXPECT_EQ(sorted_ids(s.candidates()), (std::vector<int32_t>{0, 1, 3}));
    for (const TokenProb& t : s.candidates()) EXPECT_NEAR(t.p, 1.0 / 3.0, 0.01);  // nearly flat at temp 100
}

// log p_i - log p_j == l_i - l_j after the chain with no filters: recovers penalized logits.
std::vector<double> penalized_minus_last(Sampler& s, const std::vector<float>& l) {
    s.apply(l.data());
    const double last = std::log(s.prob_of(static_cast<int32_t>(l.size()) - 1));
    std::vector<double> out;
    for (size_t i = 0; i < l.size(); i++) out.push_back(std::log(s.prob_of(static_cast<int32_t>(i))) - last);
    return out;
}

TEST(Penalties, RepeatFrequencyPresenceMath) {
    SamplingParams p = plain();
    p.repeat_penalty = 2.0f;
    p.frequency_penalty = 0.5f;
    p.presence_penalty = 0.25f;
    p.repeat_last_n = 64;
    Sampler s(p, 4);
    for (int32_t t : {0, 1, 0, 2}) s.accept(t);  // counts: 0 -> 2, 1 -> 1, 2 -> 1, 3 -> 0
    const std::vector<float> l = {2.0f, -2.0f, 1.0f, 0.5f};
    // id0: 2/2 - 2*0.5 - 0.25 = -0.25    id1: -2*2 - 0.5 - 0.25 = -4.75
    // id2: 1/2 - 0.5 - 0.25 = -0.25      id3: 0.5 (not in the window)
    const std::vector<double> expect = {-0.25, -4.75, -0.25, 0.5};
    const std::vector<double> got = penalized_minus_last(s, l);
    for (size_t i = 0; i < 4; i++) EXPECT_NEAR(got[i], expect[i] - 0.5, 1e-5) << "id " << i;
}

TEST(Penalties, WindowZeroAndWholeHistory) {
    const std::vector<float> l = {2.0f, -2.0f, 1.0f, 0.5f};
    SamplingParams p = plain();
    p.frequency_penalty = 1.0f;

    p.repeat_last_n = 2;  // window keeps the last two: {0, 2}
    Sampler w2(p, 4);
    for (int32_t t : {0, 1, 0, 2}) w2.accept(t);
    std::vector<double> got = penalized_minus_last(w2, l);
    EXPECT_NEAR(got[0], (2.0 - 1.0) - 0.5, 1e-5);
    EXPECT_NEAR(got[1], -2.0 - 0.5, 1e-5);
    EXPECT_NEAR(got[2], (1.0 - 1.0) - 0.5, 1e-5);

    p.repeat_last_n = 0;  // off
    Sampler off(p, 4);
    for (int32_t t : {0, 1, 0, 2}) off.accept(t);
    got = penalized_minus_last(off, l);
    for (size_t i = 0; i < 4; i++) EXPECT_NEAR(got[i], l[i] - 0.5, 1e-5);

    p.repeat_last_n = -1;  // whole history
    Sampler all(p, 4);
    for (int i = 0; i < 20; i++) all.accept(0);
    got = penalized_minus_last(all, l);
    EXPECT_NEAR(got[0], (2.0 - 20.0) - 0.5, 1e-4);

    all.reset();  // clears the window
    got = penalized_minus_last(all, l);
    EXPECT_NEAR(got[0], 2.0 - 0.5, 1e-5);
}

TEST(Penalties, IgnoresOutOfRangeTokens) {
    SamplingParams p = plain(0.0f);
    p.repeat_penalty = 10.0f;
    Sampler s(p, 3);
    s.accept(-1);
    s.accept(3);
    s.accept(1000000);
    const std::vector<float> l = {0.0f, 1.0f, 0.5f};
    EXPECT_EQ(s.sample(l.data()), 1);
}

// Samples `steps` tokens from a reproducible logits stream, accepting each.
std::vector<int32_t> run_stream(Sampler& s, int32_t n_vocab, int steps) {
    TestRng r;
    std::vector<int32_t> out;
    for (int i = 0; i < steps; i++) {
        const std::vector<float> l = random_logits(r, n_vocab, 8.0f);
        const int32_t t = s.sample(l.data());
        s.accept(t);
        out.push_back(t);
    }
    return out;
}

TEST(Seed, SameSeedSameTokens) {
    SamplingParams p;  // llama-cli defaults with a penalty, to exercise the whole chain
    p.repeat_penalty = 1.1f;
    p.seed = 42;
    Sampler a(p, 1000), b(p, 1000);
    const std::vector<int32_t> ta = run_stream(a, 1000, 300);
    EXPECT_EQ(ta, run_stream(b, 1000, 300));
    EXPECT_EQ(a.seed(), 42u);

    a.reset();  // re-seeds: the same stream again
    EXPECT_EQ(ta, run_stream(a, 1000, 300));

    p.seed = 43;
    Sampler c(p, 1000);
    EXPECT_NE(ta, run_stream(c, 1000, 300));

    p.seed = 42ull | (1ull << 40);  // 64-bit seeds use both halves
    Sampler d(p, 1000);
    EXPECT_NE(ta, run_stream(d, 1000, 300));
}

TEST(Seed, RandomSeedIsRecordedAndReplays) {
    SamplingParams p;
    p.seed = 0xFFFFFFFFu;
    Sampler a(p, 500);
    EXPECT_NE(a.seed(), 0xFFFFFFFFu);
    const std::vector<int32_t> ta = run_stream(a, 500, 200);
    p.seed = a.seed();
    Sampler b(p, 500);
    EXPECT_EQ(ta, run_stream(b, 500, 200));
}

TEST(Distribution, FrequenciesMatchSoftmax) {
    const std::vector<float> l = {1.0f, 2.5f, -0.5f, 0.0f, 2.0f};
    std::vector<double> expect(5);
    double z = 0.0;
    for (size_t i = 0; i < 5; i++) z += std::exp(l[i]);
    for (size_t i = 0; i < 5; i++) expect[i] = std::exp(l[i]) / z;

    Sampler s(plain(), 5);
    s.apply(l.data());
    for (int32_t i = 0; i < 5; i++) EXPECT_NEAR(s.prob_of(i), expect[i], 1e-6);

    const int n = 200000;
    std::vector<int> counts(5, 0);
    for (int i = 0; i < n; i++) {
        const int32_t t = s.sample(l.data());
        ASSERT_GE(t, 0);
        ASSERT_LT(t, 5);
        counts[t]++;
    }
    double chi2 = 0.0;
    for (size_t i = 0; i < 5; i++) {
        const double e = n * expect[i];
        chi2 += (counts[i] - e) * (counts[i] - e) / e;
    }
    // 4 degrees of freedom: P(chi2 > 30) ~ 5e-6.
    EXPECT_LT(chi2, 30.0) << counts[0] << " " << counts[1] << " " << counts[2] << " " << counts[3] << " " << counts[4];
}

TEST(Distribution, UniformAndDraw) {
    Sampler s(plain(), 4);
    for (int i = 0; i < 10000; i++) {
        const double u = s.uniform();
        ASSERT_GE(u, 0.0);
        ASSERT_LT(u, 1.0);
    }
    const std::vector<TokenProb> point = {{0, 0.0f}, {2, 1.0f}, {3, 0.0f}};
    for (int i = 0; i < 100; i++) EXPECT_EQ(s.draw(point), 2);
    EXPECT_EQ(s.draw({}), -1);
}

TEST(LargeVocab, TopKMatchesFullSort) {
    const int32_t n = 152064;
    TestRng r;
    const std::vector<float> l = random_logits(r, n, 20.0f);
    SamplingParams p;  // defaults: top_k 40, top_p 0.95, min_p 0.05
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    Sampler s(p, n);
    s.apply(l.data());
    std::vector<int32_t> order(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; i++) order[i] = i;
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return l[a] > l[b] || (l[a] == l[b] && a < b); });
    order.resize(40);
    EXPECT_EQ(ids_of(s.candidates()), order);
    EXPECT_NEAR(sum_p(s.candidates()), 1.0, 1e-5);
    const std::vector<TokenProb>& c = s.candidates();
    for (size_t i = 1; i < c.size(); i++) EXPECT_GE(c[i - 1].p, c[i].p);
}

TEST(LargeVocab, TopPWithoutTopK) {
    const int32_t n = 152064;
    TestRng r;
    const std::vector<float> l = random_logits(r, n, 40.0f);
    SamplingParams p;
    p.top_k = 0;
    p.min_p = 0.0f;
    p.top_p = 0.9f;
    Sampler s(p, n);
    const int32_t t = s.sample(l.data());
    EXPECT_GT(s.prob_of(t), 0.0f);
    EXPECT_TRUE(s.candidates_sorted());
    EXPECT_EQ(s.candidates()[0].id, argmax(l.data(), n));
    EXPECT_NEAR(sum_p(s.candidates()), 1.0, 1e-5);
    EXPECT_LT(s.candidates().size(), static_cast<size_t>(n));

    p.min_p = 0.05f;  // the defaults' combination: min-p prefilter shrinks the sort
    Sampler m(p, n);
    m.apply(l.data());
    const float max_l = l[argmax(l.data(), n)];
    for (const TokenProb& c : m.candidates()) EXPECT_GE(l[c.id], max_l + std::log(0.05f) - 1e-4f);
}

// The chain written plainly (full sort, no shortcuts), as the reference for the fast paths.
std::vector<TokenProb> reference_chain(const SamplingParams& p, std::vector<float> l) {
    struct C {
        int32_t id;
        float logit;
    };
    std::vector<C> c;
    for (size_t i = 0; i < l.size(); i++) c.push_back({static_cast<int32_t>(i), l[i]});
    std::sort(c.begin(), c.end(),
              [](const C& a, const C& b) { return a.logit > b.logit || (a.logit == b.logit && a.id < b.id); });
    if (p.top_k > 0 && static_cast<size_t>(p.top_k) < c.size()) c.resize(static_cast<size_t>(p.top_k));
    const float max_l = c[0].logit;
    double total = 0.0;
    for (const C& x : c) total += std::exp(x.logit - max_l);
    if (p.top_p < 1.0f) {
        double cum = 0.0;
        for (size_t i = 0; i < c.size(); i++) {
            cum += std::exp(c[i].logit - max_l) / total;
            if (cum >= p.top_p) {
                c.resize(i + 1);
                break;
            }
        }
    }
    if (p.min_p > 0.0f) {
        const float threshold = max_l + std::log(std::min(p.min_p, 1.0f));
        while (c.back().logit < threshold) c.pop_back();
    }
    std::vector<TokenProb> out;
    double sum = 0.0;
    for (const C& x : c) sum += std::exp((x.logit - max_l) / p.temp);
    for (const C& x : c) {
        out.push_back({x.id, static_cast<float>(std::exp((x.logit - max_l) / p.temp) / sum)});
    }
    return out;
}

TEST(LargeVocab, FastPathsMatchThePlainChain) {
    const int32_t n = 50000;
    TestRng r;
    const float scales[] = {0.01f, 3.0f, 20.0f, 200.0f};  // flat .. spread past the last top-p bucket
    const int32_t top_ks[] = {0, 1, 40, 1000};
    const float top_ps[] = {1.0f, 0.5f, 0.95f, 0.999f};
    const float min_ps[] = {0.0f, 0.05f, 0.5f};
    int checked = 0;
    for (float scale : scales) {
        const std::vector<float> l = random_logits(r, n, scale);
        for (int32_t k : top_ks) {
            for (float tp : top_ps) {
                for (float mp : min_ps) {
                    SamplingParams p = plain(0.7f);
                    p.top_k = k;
                    p.top_p = tp;
                    p.min_p = mp;
                    Sampler s(p, n);
                    s.apply(l.data());
                    std::vector<TokenProb> want = reference_chain(p, l);
                    std::vector<TokenProb> got = s.candidates();
                    if (!s.candidates_sorted()) {  // compare as sets: sort both by id
                        auto by_id = [](const TokenProb& a, const TokenProb& b) { return a.id < b.id; };
                        std::sort(want.begin(), want.end(), by_id);
                        std::sort(got.begin(), got.end(), by_id);
                    }
                    ASSERT_EQ(ids_of(got), ids_of(want))
                        << "scale " << scale << " k " << k << " p " << tp << " min_p " << mp;
                    for (size_t i = 0; i < got.size(); i++) ASSERT_NEAR(got[i].p, want[i].p, 1e-5);
                    checked++;
                }
            }
        }
    }
    EXPECT_EQ(checked, 4 * 4 * 4 * 3);
}

TEST(BadInput, NanLogitsAndBadParams) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> l = {nan, 1.0f, nan, 0.5f};
    SamplingParams p;
    Sampler s(p, 4);
    const int32_t t = s.sample(l.data());
    EXPECT_TRUE(t == 1 || t == 3);
    EXPECT_FLOAT_EQ(s.prob_of(0), 0.0f);

    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> all_neg_inf = {-inf, -inf, -inf, -inf};
    EXPECT_EQ(s.sample(all_neg_inf.data()), 0);
    const std::vector<float> pos_inf = {0.0f, inf, 1.0f, inf};
    const int32_t u = s.sample(pos_inf.data());  // both +inf tie at the top; the rest has p = 0
    EXPECT_TRUE(u == 1 || u == 3);
    EXPECT_NEAR(s.prob_of(1), 0.5, 1e-6);
    EXPECT_NEAR(s.prob_of(3), 0.5, 1e-6);
    EXPECT_FLOAT_EQ(s.prob_of(0), 0.0f);

    EXPECT_THROW(Sampler(p, 0), Error);
    p.temp = nan;
    EXPECT_THROW(Sampler(p, 4), Error);
    p.temp = 1.0f;
    p.repeat_penalty = 0.0f;
    EXPECT_THROW(Sampler(p, 4), Error);
}

}  // namespace
}  // namespace bee
