// tests/unit/server/test_prompt_cache: the --cache-ram store — longest-prefix lookup, entries covered by
// a longer one dropped, least recently used evicted beyond the byte limit.
#include <gtest/gtest.h>

#include "runtime/prompt_cache.h"

using bee::SeqState;
using bee::runtime::PromptCacheRam;

namespace {

// A state of n cells with 100 bytes of K and V per cell (contents do not matter here).
SeqState state_of(int n) {
    SeqState st;
    st.pos.resize(n);
    st.k.resize((size_t)n * 100);
    st.v.resize((size_t)n * 100);
    return st;
}

std::vector<int32_t> seq(int from, int n) {
    std::vector<int32_t> t(n);
    for (int i = 0; i < n; i++) t[i] = from + i;
    return t;
}

}  // namespace

TEST(PromptCacheRam, BestIsLongestCommonPrefix) {
    PromptCacheRam c(1 << 20);
    c.save(seq(0, 10), state_of(10));
    c.save(seq(100, 20), state_of(20));
    std::vector<int32_t> prompt = seq(100, 15);
    prompt.push_back(7);
    size_t n = 0;
    const PromptCacheRam::Entry* e = c.best(prompt, {}, 1, &n);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(n, 15u);
    EXPECT_EQ(e->tokens, seq(100, 20));
    EXPECT_EQ(c.best(seq(500, 5), {}, 1, &n), nullptr);
    EXPECT_EQ(c.best(prompt, {}, 16, &n), nullptr);  // shares 15 < the minimum asked
}

TEST(PromptCacheRam, LongerEntryReplacesItsPrefixAndDuplicates) {
    PromptCacheRam c(1 << 20);
    c.save(seq(0, 10), state_of(10));
    c.save(seq(0, 10), state_of(10));
    EXPECT_EQ(c.size(), 1u);
    c.save(seq(0, 30), state_of(30));
    EXPECT_EQ(c.size(), 1u);
    EXPECT_EQ(c.bytes(), state_of(30).bytes() + 30 * sizeof(int32_t));
}

TEST(PromptCacheRam, EvictsLeastRecentlyUsed) {
    const size_t one = state_of(10).bytes() + 10 * sizeof(int32_t);
    PromptCacheRam c(2 * one);
    c.save(seq(0, 10), state_of(10));
    c.save(seq(100, 10), state_of(10));
    size_t n = 0;
    ASSERT_NE(c.best(seq(0, 10), {}, 1, &n), nullptr);  // touch the first: the second is now the oldest
    c.save(seq(200, 10), state_of(10));
    EXPECT_EQ(c.size(), 2u);
    EXPECT_NE(c.best(seq(0, 10), {}, 1, &n), nullptr);
    EXPECT_EQ(c.best(seq(100, 10), {}, 1, &n), nullptr);
    c.save(seq(300, 1000), state_of(1000));  // larger than the whole limit: not kept
    EXPECT_EQ(c.best(seq(300, 10), {}, 1, &n), nullptr);
    EXPECT_LE(c.bytes(), 2 * one);
}

// Entries computed under other LoRA scales are never returned, and never replace each other.
TEST(PromptCacheRam, LoraScalesKeepEntriesApart) {
    PromptCacheRam c(1 << 20);
    SeqState plain = state_of(10), scaled = state_of(20);
    plain.lora = {0.0f};
    scaled.lora = {0.5f};
    c.save(seq(0, 10), plain);
    c.save(seq(0, 20), scaled);  // longer, but computed under another scale: both stay
    EXPECT_EQ(c.size(), 2u);
    size_t n = 0;
    const PromptCacheRam::Entry* e = c.best(seq(0, 30), {0.0f}, 1, &n);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(n, 10u);
    e = c.best(seq(0, 30), {0.5f}, 1, &n);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(n, 20u);
    EXPECT_EQ(c.best(seq(0, 30), {1.0f}, 1, &n), nullptr);
}
