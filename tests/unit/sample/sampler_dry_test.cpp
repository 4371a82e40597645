// tests/unit/sample/sampler_dry_test: DRY against a brute-force reading of its rule, sequence breakers,
// its window; the sampler order (parsing, and that it changes results where it should); Mirostat 1.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "sample/sampler.h"

namespace bee {
namespace {

SamplingParams flat_params() {
    SamplingParams p;
    p.temp = 1.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = 1;
    p.dry_multiplier = 1.0f;
    p.dry_base = 2.0f;
    p.dry_allowed_length = 2;
    p.dry_sequence_breakers = {};  // none (the default ones need a vocabulary: BreakersEndARepeat binds some)
    return p;
}

// The penalty of every token after feeding `hist`, read from the sampled distribution over all-zero
// logits: log(p_max / p_t), i.e. relative to the least penalized token.
std::map<int32_t, double> penalties_seen(const SamplingParams& p, const std::vector<int32_t>& hist, int32_t n_vocab) {
    Sampler s(p, n_vocab);
    for (int32_t t : hist) s.accept(t);
    const std::vector<float> zeros(n_vocab, 0.0f);
    s.apply(zeros.data());
    double ref = 0;  // the probability of an unpenalized token
    std::map<int32_t, double> prob;
    for (const TokenProb& t : s.candidates()) prob[t.id] = t.p;
    for (const auto& [id, pr] : prob) ref = std::max(ref, pr);
    std::map<int32_t, double> out;
    for (int32_t id = 0; id < n_vocab; id++) {
        const double pr = prob.count(id) ? prob[id] : 0.0;
        const double pen = std::log(ref / pr);
        if (pen > 1e-4) out[id] = pen;
    }
    return out;
}

// DRY's rule read literally: for each token t, the longest n such that the last n tokens, followed by t,
// occur earlier in the history.
std::map<int32_t, double> brute_force(const SamplingParams& p, const std::vector<int32_t>& h) {
    std::map<int32_t, int> len;
    const int n = (int)h.size();
    for (int end = 0; end + 1 < n; end++) {  // an earlier sequence ending at `end`, followed by h[end + 1]
        int m = 0;
        while (m <= end && h[end - m] == h[n - 1 - m]) m++;
        if (m >= p.dry_allowed_length) len[h[end + 1]] = std::max(len[h[end + 1]], m);
    }
    std::map<int32_t, double> out;
    for (const auto& [t, m] : len) out[t] = p.dry_multiplier * std::pow(p.dry_base, m - p.dry_allowed_length);
    return out;
}

TEST(SamplerDry, PenalizesTheTokenThatExtendsARepeat) {
    // 1 2 3 4 1 2 3: drawing 4 would repeat "1 2 3 4" (n = 3): 1 · 2^(3 - 2) = 2
    const std::map<int32_t, double> pen = penalties_seen(flat_params(), {1, 2, 3, 4, 1, 2, 3}, 8);
    ASSERT_EQ(pen.size(), 1u);
    EXPECT_NEAR(pen.at(4), 2.0, 1e-4);
}

TEST(SamplerDry, MatchesTheRuleOnRandomHistories) {
    std::mt19937 rng(7);
    int n_penalized = 0;
    for (int trial = 0; trial < 200; trial++) {
        SamplingParams p = flat_params();
        p.dry_allowed_length = 1 + trial % 3;
        p.dry_base = 1.5f;
        std::vector<int32_t> h(2 + rng() % 40);
        for (int32_t& t : h) t = (int32_t)(rng() % 3);  // 3 symbols: long repeats are common
        const std::map<int32_t, double> want = brute_force(p, h), got = penalties_seen(p, h, 3);
        // the sampler shows penalties relative to the least penalized token: compare differences
        if (!want.empty()) n_penalized++;
        for (int32_t a = 0; a < 3; a++)
            for (int32_t b = 0; b < 3; b++) {
                const double wa = want.count(a) ? want.at(a) : 0, wb = want.count(b) ? want.at(b) : 0;
                const double ga = got.count(a) ? got.at(a) : 0, gb = got.count(b) ? got.at(b) : 0;
                ASSERT_NEAR(wa - wb, ga - gb, 1e-3 * (1 + std::fabs(wa - wb)))
                    << "trial " << trial << " tokens " << a << ", " << b;
            }
    }
    EXPECT_GT(n_penalized, 120);  // the histories do repeat (149 of 200 with this seed)
}

TEST(SamplerDry, BreakersEndARepeat) {
    SamplingParams p = flat_params();
    auto b = std::make_shared<DryBreakers>();
    b->strings = {"\n"};
    b->piece = [](int32_t id) { return id == 2 ? std::string("x\ny") : std::string(1, (char)('a' + id)); };
    p.dry_breakers = b;
    // the tail "1 2 3" holds token 2's newline: only "3" is breaker-free, shorter than allowed_length 2
    EXPECT_TRUE(penalties_seen(p, {1, 2, 3, 4, 1, 2, 3}, 8).empty());
    // a breaker that spans two tokens: "cd" (tokens 2 and 3 without the newline piece)
    b->piece = [](int32_t id) { return std::string(1, (char)('a' + id)); };
    b->strings = {"cd"};
    EXPECT_TRUE(penalties_seen(p, {1, 2, 3, 4, 1, 2, 3}, 8).empty());   // "b c d": the tail "c d" holds "cd"
    EXPECT_EQ(penalties_seen(p, {5, 1, 2, 6, 5, 1, 2}, 8).size(), 1u);  // no "cd" anywhere: 6 is penalized
}

TEST(SamplerDry, DefaultBreakersMustBeBound) {
    SamplingParams p = flat_params();
    p.dry_sequence_breakers = {"\n"};
    EXPECT_THROW(Sampler(p, 8), Error);
    bind_dry_breakers(p, [](int32_t id) { return id == 2 ? std::string("\n") : std::string("a"); });
    ASSERT_TRUE(p.dry_breakers);
    EXPECT_TRUE(penalties_seen(p, {1, 2, 3, 4, 1, 2, 3}, 8).empty());  // token 2 is a newline
    p.dry_multiplier = 0;
    bind_dry_breakers(p, [](int32_t) { return std::string("a"); });
    EXPECT_FALSE(p.dry_breakers);  // DRY off: nothing to bind
}

TEST(SamplerDry, WindowAndOff) {
    SamplingParams p = flat_params();
    p.dry_penalty_last_n = 3;  // only "1 2 3" is seen: no earlier occurrence
    EXPECT_TRUE(penalties_seen(p, {1, 2, 3, 4, 1, 2, 3}, 8).empty());
    p.dry_penalty_last_n = 0;  // off
    EXPECT_TRUE(penalties_seen(p, {1, 2, 3, 4, 1, 2, 3}, 8).empty());
    p.dry_penalty_last_n = -1;
    p.dry_multiplier = 0;  // off
    EXPECT_TRUE(penalties_seen(p, {1, 2, 3, 4, 1, 2, 3}, 8).empty());
    p.dry_multiplier = 1;
    p.dry_base = 0.5f;
    EXPECT_THROW(Sampler(p, 8), Error);
}

TEST(SamplerDry, GreedyTakesTheArgmaxAfterThePenalty) {
    SamplingParams p = flat_params();
    p.temp = 0;
    std::vector<float> logits(8, 0.0f);
    logits[4] = 1.5f;  // the best, until DRY takes 2 from it
    logits[5] = 1.0f;
    Sampler s(p, 8);
    for (int32_t t : {1, 2, 3, 4, 1, 2, 3}) s.accept(t);
    EXPECT_EQ(s.sample(logits.data()), 5);
    p.dry_multiplier = 0;
    Sampler off(p, 8);
    EXPECT_EQ(off.sample(logits.data()), 4);
}

TEST(SamplerOrder, ParsesNamesLettersAndAliases) {
    using S = SamplerStep;
    EXPECT_EQ(parse_sampler_order("top_k;temperature"), (std::vector<S>{S::top_k, S::temperature}));
    EXPECT_EQ(parse_sampler_order("kt"), (std::vector<S>{S::top_k, S::temperature}));
    EXPECT_EQ(parse_sampler_order("top-k;nucleus;temp;typical;min-p"),
              (std::vector<S>{S::top_k, S::top_p, S::temperature, S::typical, S::min_p}));
    EXPECT_EQ(parse_sampler_order("dry"), (std::vector<S>{S::dry}));
    EXPECT_EQ(parse_sampler_order(std::vector<std::string>{"penalties", "xtc"}),
              (std::vector<S>{S::penalties, S::xtc}));
    EXPECT_EQ(sampler_order_name(default_sampler_order()),
              "penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature");
    EXPECT_EQ(parse_sampler_order(sampler_order_name(default_sampler_order())), default_sampler_order());
    EXPECT_EQ(parse_sampler_order("edskypmxt"), default_sampler_order());
    EXPECT_THROW(parse_sampler_order("top_k;bogus"), Error);
    EXPECT_THROW(parse_sampler_order("kq"), Error);
    EXPECT_THROW(parse_sampler_order(std::vector<std::string>{"infill"}), Error);
}

// probabilities 0.5, 0.25, 0.125, 0.0625, 0.0625
const std::vector<float> kLogits = {std::log(0.5f), std::log(0.25f), std::log(0.125f), std::log(0.0625f),
                                    std::log(0.0625f)};

TEST(SamplerOrder, TemperatureBeforeTopPWidensTheNucleus) {
    SamplingParams p;
    p.temp = 2.0f;
    p.top_k = 0;
    p.min_p = 0;
    p.top_p = 0.7f;
    Sampler def(p, 5);  // top-p on the untempered 0.5, 0.25: two tokens
    def.apply(kLogits.data());
    EXPECT_EQ(def.candidates().size(), 2u);
    p.order = parse_sampler_order("temperature;top_p");  // T = 2: 0.343, 0.243, 0.172, ... -> three
    Sampler rev(p, 5);
    rev.apply(kLogits.data());
    ASSERT_EQ(rev.candidates().size(), 3u);
    const double z = std::sqrt(0.5) + std::sqrt(0.25) + std::sqrt(0.125);
    EXPECT_NEAR(rev.prob_of(0), std::sqrt(0.5) / z, 1e-5);
    p.order = parse_sampler_order("top_p");  // no temperature step: sampled at temperature 1
    Sampler none(p, 5);
    none.apply(kLogits.data());
    ASSERT_EQ(none.candidates().size(), 2u);
    EXPECT_NEAR(none.prob_of(0), 0.5 / 0.75, 1e-5);
}

TEST(SamplerOrder, TheDefaultOrderSpelledOutIsTheDefaultChain) {
    SamplingParams p;  // top-k 40, top-p 0.95, min-p 0.05, temp 0.8
    std::vector<float> logits(1000);
    std::mt19937 rng(3);
    std::normal_distribution<float> g(0, 2);
    for (float& x : logits) x = g(rng);
    Sampler fast(p, 1000);
    fast.apply(logits.data());
    p.order = default_sampler_order();
    EXPECT_FALSE(p.extended());
    p.order = parse_sampler_order("penalties;dry;top_k;top_p;min_p;temperature");  // same steps that are on
    ASSERT_TRUE(p.extended());
    Sampler full(p, 1000);
    full.apply(logits.data());
    ASSERT_EQ(fast.candidates().size(), full.candidates().size());
    for (const TokenProb& t : full.candidates()) EXPECT_NEAR(fast.prob_of(t.id), t.p, 1e-5) << t.id;
}

TEST(SamplerOrder, PenaltiesAfterTopKOnlyTouchTheSurvivors) {
    SamplingParams p;
    p.temp = 1.0f;
    p.top_k = 2;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.repeat_penalty = 100.0f;  // token 0 (logit < 0) is multiplied down to about -69
    p.order = parse_sampler_order("top_k;penalties;temperature");
    Sampler s(p, 5);
    s.accept(0);
    s.apply(kLogits.data());  // top-k kept 0 and 1; the penalty then pushes 0 far below 1
    ASSERT_EQ(s.candidates().size(), 2u);
    EXPECT_EQ(s.candidates()[0].id, 1);
    EXPECT_LT(s.prob_of(0), 1e-20);
    p.order.clear();  // default: penalties first, so top-k keeps 1 and 2
    Sampler d(p, 5);
    d.accept(0);
    d.apply(kLogits.data());
    EXPECT_EQ(d.candidates()[0].id, 1);
    EXPECT_GT(d.prob_of(2), 0.3f);
}

// Mirostat 1 on a Zipf distribution p_i ∝ i^-2 over 1000 tokens: the estimate s_hat is exactly 2, so
// eps = 1 and k = (2^mu / (1 - 1/1000))^(1/2).
TEST(SamplerMirostat, VersionOneKeepsTheZipfTopK) {
    const int n = 1000;
    std::vector<float> logits(n);
    for (int i = 0; i < n; i++) logits[i] = -2.0f * std::log((float)(i + 1));
    SamplingParams p;
    p.temp = 1.0f;
    p.mirostat = 1;
    p.mirostat_tau = 5.0f;  // mu = 10: k = sqrt(1024 / 0.999) = 32.02 -> 32
    p.mirostat_eta = 0.5f;
    Sampler s(p, n);
    s.apply(logits.data());
    EXPECT_EQ(s.candidates().size(), 32u);
    EXPECT_EQ(s.candidates()[0].id, 0);
    const float p5 = s.prob_of(5);  // accept token 5: surprise -log2 p5; mu moves by eta toward tau
    s.accept(5);
    const double mu = 10.0 - 0.5 * (-std::log2((double)p5) - 5.0);
    s.apply(logits.data());
    EXPECT_EQ(s.candidates().size(), (size_t)std::sqrt(std::pow(2.0, mu) / (1.0 - 1.0 / n)));
}

}  // namespace
}  // namespace bee
