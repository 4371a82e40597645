// tests/unit/sample/sampler_extended_test: llama.cpp's further samplers (top-n-sigma, locally typical, XTC,
// dynamic temperature, min_keep) on small hand-computed distributions, and that a chain with them all off
// gives exactly the default chain's candidates.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/error.h"
#include "sample/sampler.h"

namespace bee {
namespace {

SamplingParams base(float temp = 1.0f) {
    SamplingParams p;
    p.temp = temp;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = 1;
    return p;
}

std::vector<int32_t> ids(const Sampler& s) {
    std::vector<int32_t> out;
    for (const TokenProb& t : s.candidates()) out.push_back(t.id);
    return out;
}

// logits log(p) for p = {0.5, 0.25, 0.125, 0.0625, 0.0625}
const std::vector<float> kLogits = {std::log(0.5f), std::log(0.25f), std::log(0.125f), std::log(0.0625f),
                                    std::log(0.0625f)};

TEST(SamplerExtended, TopNSigmaKeepsLogitsNearTheMax) {
    SamplingParams p = base();
    p.top_n_sigma = 1.0f;  // logits: -0.69 -1.39 -2.08 -2.77 -2.77: mean -1.94, σ 0.81 -> cut at -1.50
    Sampler s(p, 5);
    s.apply(kLogits.data());
    EXPECT_EQ(ids(s), (std::vector<int32_t>{0, 1}));
    EXPECT_NEAR(s.prob_of(0), 2.0f / 3.0f, 1e-6);
}

TEST(SamplerExtended, TypicalKeepsTokensNearTheEntropy) {
    // entropy H = 1.875 bits = 1.2997 nats; surprises -ln p: 0.69 1.39 2.08 2.77 2.77; |s - H|: 0.61 0.09
    // 0.78 1.47 1.47 -> order 1, 0, 2, 3, 4; cumulative p 0.25, 0.75, 0.875: p = 0.8 keeps {1, 0, 2}
    SamplingParams p = base();
    p.typical_p = 0.8f;
    Sampler s(p, 5);
    s.apply(kLogits.data());
    EXPECT_EQ(ids(s), (std::vector<int32_t>{0, 1, 2}));
    EXPECT_NEAR(s.prob_of(0), 0.5 / 0.875, 1e-6);
    p.typical_p = 0.2f;  // the first token in that order already passes
    p.min_keep = 2;      // ... but two must stay
    Sampler k(p, 5);
    k.apply(kLogits.data());
    EXPECT_EQ(ids(k), (std::vector<int32_t>{0, 1}));
}

TEST(SamplerExtended, XtcDropsTheTopChoices) {
    SamplingParams p = base();
    p.xtc_probability = 1.0f;
    p.xtc_threshold = 0.2f;  // tokens 0 (0.5) and 1 (0.25) are above: all but the least likely go
    Sampler s(p, 5);
    s.apply(kLogits.data());
    EXPECT_EQ(ids(s), (std::vector<int32_t>{1, 2, 3, 4}));
    p.xtc_threshold = 0.3f;  // only one token above: nothing to exclude
    Sampler one(p, 5);
    one.apply(kLogits.data());
    EXPECT_EQ(ids(one).size(), 5u);
    p.xtc_threshold = 0.2f;
    p.xtc_probability = 1e-9f;  // the coin (almost) never says yes
    Sampler rare(p, 5);
    rare.apply(kLogits.data());
    EXPECT_EQ(ids(rare).size(), 5u);
}

TEST(SamplerExtended, DynamicTemperatureFollowsTheEntropy) {
    const std::vector<float> flat = {0, 0, 0, 0};
    SamplingParams p = base(1.0f);
    p.dynatemp_range = 0.5f;  // flat: normalized entropy 1 -> temp 1.5; a sharp one -> close to 0.5
    Sampler s(p, 4);
    s.apply(flat.data());
    EXPECT_NEAR(s.prob_of(2), 0.25f, 1e-6);
    const std::vector<float> sharp = {10, 0, 0, 0};
    Sampler t(p, 4);
    t.apply(sharp.data());
    // p0 at temp 1: 0.99986, entropy 0.0017 nats / ln 4 -> T = 0.5 + 1.0 * 0.0012 ~ 0.5012
    const double T =
        0.5 + std::pow(-(0.999864 * std::log(0.999864) + 3 * 4.54e-5 * std::log(4.54e-5)) / std::log(4.0), 1.0);
    const double z = std::exp(10 / T) + 3;
    EXPECT_NEAR(t.prob_of(1), 1 / z, 1e-7);
}

TEST(SamplerExtended, MinKeepHoldsTopPAndMinP) {
    SamplingParams p = base();
    p.top_p = 0.4f;  // alone: keeps token 0 (0.5)
    p.min_keep = 3;
    Sampler s(p, 5);
    s.apply(kLogits.data());
    EXPECT_EQ(ids(s), (std::vector<int32_t>{0, 1, 2}));
    p.top_p = 1.0f;
    p.min_p = 0.9f;
    Sampler m(p, 5);
    m.apply(kLogits.data());
    EXPECT_EQ(ids(m), (std::vector<int32_t>{0, 1, 2}));
}

// The full chain with only a non-binding min_keep on gives the default chain's candidates and probabilities.
TEST(SamplerExtended, FullChainAgreesWithTheDefaultChain) {
    std::vector<float> l(1000);
    for (size_t i = 0; i < l.size(); i++) l[i] = (float)std::sin(0.37 * (double)i) * 4.0f;
    for (int variant = 0; variant < 3; variant++) {
        SamplingParams p;  // defaults: top-k 40, top-p 0.95, min-p 0.05, temp 0.8
        if (variant == 1) p.top_k = 0;
        if (variant == 2) p.top_p = 1.0f;
        Sampler fast(p, 1000);
        fast.apply(l.data());
        p.min_keep = 2;
        ASSERT_TRUE(p.extended());
        Sampler full(p, 1000);
        full.apply(l.data());
        ASSERT_EQ(fast.candidates().size(), full.candidates().size()) << variant;
        for (const TokenProb& t : full.candidates())
            EXPECT_NEAR(fast.prob_of(t.id), t.p, 1e-6) << variant << " " << t.id;
    }
}

// Mirostat 2.0: surprises (bits) of kLogits are 1, 2, 3, 4, 4 (the float logits put 3 a hair above 3.0);
// mu starts at 2·tau and follows the accepted tokens' surprises in the truncated distribution.
TEST(SamplerExtended, MirostatTwoCapsSurpriseAndAdapts) {
    SamplingParams p = base();
    p.top_k = 40;  // ignored: mirostat replaces the filters
    p.mirostat = 2;
    p.mirostat_tau = 1.6f;  // mu = 3.2 bits: tokens 0, 1, 2 stay
    p.mirostat_eta = 1.0f;
    Sampler s(p, 5);
    s.apply(kLogits.data());
    EXPECT_EQ(ids(s), (std::vector<int32_t>{0, 1, 2}));
    EXPECT_NEAR(s.prob_of(1), 0.25 / 0.875, 1e-6);
    s.accept(1);  // surprise log2(0.875 / 0.25) = 1.807 bits: mu = 3.2 - (1.807 - 1.6) = 2.993
    s.apply(kLogits.data());
    EXPECT_EQ(ids(s), (std::vector<int32_t>{0, 1}));  // token 2's 3 bits are now over the cap
    s.accept(4);                                      // not offered (a forced token): mu stays
    s.apply(kLogits.data());
    EXPECT_EQ(ids(s).size(), 2u);
    s.accept(0);  // surprise log2(0.75 / 0.5) = 0.585: mu = 2.993 + (1.6 - 0.585) = 4.008: all five stay
    s.apply(kLogits.data());
    EXPECT_EQ(ids(s).size(), 5u);
    s.reset();  // mu back to 2·tau
    s.apply(kLogits.data());
    EXPECT_EQ(ids(s).size(), 3u);
    p.mirostat = 3;
    EXPECT_THROW(Sampler(p, 5), Error);
}

TEST(SamplerExtended, DefaultsAreTheDefaultChain) {
    SamplingParams p;  // llama-cli defaults: top-k 40, top-p 0.95, min-p 0.05, temp 0.8
    EXPECT_FALSE(p.extended());
    p.min_keep = 1;  // 1 is what every filter keeps anyway
    EXPECT_FALSE(p.extended());
    p.dynatemp_exponent = NAN;
    EXPECT_THROW(Sampler(p, 5), Error);
}

}  // namespace
}  // namespace bee
