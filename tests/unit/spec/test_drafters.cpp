// tests/unit/spec/test_drafters: each model-free drafter's proposals on hand-made histories, and the
// registry's --spec-type parsing.
#include <gtest/gtest.h>

#include <cstdio>

#include "base/error.h"
#include "spec/drafters/ngram_cache.h"
#include "spec_test_util.h"

namespace bee::test {

namespace {

const Model& target() { return *tiny_model("llama").model; }

// history = [50, 51, run(20), 60, 61, 62, run(0..k)]: the last tokens repeat the start of the run.
std::vector<int32_t> repeated(int k) {
    std::vector<int32_t> h{50, 51};
    h = concat(h, run_of(20));
    h = concat(h, {60, 61, 62});
    h = concat(h, run_of(k));
    return h;
}

}  // namespace

TEST(Registry, ParsesListsInPriorityOrder) {
    EXPECT_EQ(parse_spec_types("suffix,ngram-simple"), (std::vector<std::string>{"ngram-simple", "suffix"}));
    EXPECT_TRUE(parse_spec_types("none").empty());
    EXPECT_TRUE(parse_spec_types("ngram-mod,none").empty());
    EXPECT_TRUE(parse_spec_types("").empty());
    EXPECT_EQ(parse_spec_types("copyspec,copyspec"), (std::vector<std::string>{"copyspec"}));
    try {
        parse_spec_types("ngram-simple,eagle9");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("unknown speculative type: 'eagle9'"), std::string::npos) << e.what();
    }
}

TEST(NgramSimple, DraftsWhatFollowedTheMostRecentMatch) {
    SpecParams p;
    p.ngram_simple = {3, 5, 1};
    auto d = make_drafter("ngram-simple", p, target());
    std::vector<int32_t> h = repeated(4);  // ends 100 101 102 103; id_last 104? use 103 as key end
    h.pop_back();                          // ... 100 101 102, id_last = 103
    EXPECT_EQ(draft_chain(*d, h, 103), (std::vector<int32_t>{104, 105, 106, 107, 108}));
    EXPECT_EQ(draft_chain(*d, h, 103, 2), (std::vector<int32_t>{104, 105}));  // depth cap
    EXPECT_TRUE(draft_chain(*d, h, 7).empty());                               // no match
}

TEST(NgramMapK, DraftShrinksToLastAcceptedLength) {
    SpecParams p;
    p.ngram_map_k = {3, 6, 1};
    auto d = make_drafter("ngram-map-k", p, target());
    d->begin({});
    std::vector<int32_t> h = repeated(3);
    h.pop_back();
    EXPECT_EQ(draft_chain(*d, h, 102), (std::vector<int32_t>{103, 104, 105, 106, 107, 108}));
    d->accept(2, false);
    EXPECT_EQ(draft_chain(*d, h, 102), (std::vector<int32_t>{103, 104}));
    d->accept(0, false);  // 0 is ignored: the key keeps drafting
    EXPECT_EQ(draft_chain(*d, h, 102).size(), 2u);
}

TEST(NgramMapK4v, DraftsOnlyADominantContinuation) {
    SpecParams p;
    p.ngram_map_k4v = {2, 2, 1};
    auto d = make_drafter("ngram-map-k4v", p, target());
    d->begin({});
    // key (7, 8) followed by (1, 2) twice and (3, 4) once: (1, 2) dominates (2 >= 2 * 1)
    std::vector<int32_t> h{7, 8, 1, 2, 9, 7, 8, 1, 2, 9, 7, 8, 3, 4, 9, 9, 9, 9, 7};
    EXPECT_EQ(draft_chain(*d, h, 8), (std::vector<int32_t>{1, 2}));
    // its own setting: min_hits 3 silences a key seen once
    p.ngram_map_k4v.min_hits = 3;
    auto d2 = make_drafter("ngram-map-k4v", p, target());
    d2->begin({});
    EXPECT_TRUE(draft_chain(*d2, h, 8).empty());
    // a tie (1 vs 1) is not dominant
    SpecParams q;
    q.ngram_map_k4v = {2, 2, 1};
    auto d4 = make_drafter("ngram-map-k4v", q, target());
    d4->begin({});
    std::vector<int32_t> tie{7, 8, 1, 2, 9, 7, 8, 3, 4, 9, 9, 9, 9, 9, 7};
    EXPECT_TRUE(draft_chain(*d4, tie, 8).empty());
}

TEST(NgramMod, RollsTheWindowThroughTheSharedTable) {
    SpecParams p;
    p.ngram_mod_n_match = 3;
    p.ngram_mod_n_min = 2;
    p.ngram_mod_n_max = 4;
    auto d = make_drafter("ngram-mod", p, target());
    std::vector<int32_t> prompt = concat({1, 2}, run_of(10));  // 1 2 100..109
    d->begin(prompt);
    std::vector<int32_t> h = concat(prompt, {5, 100, 101});
    EXPECT_EQ(draft_chain(*d, h, 102), (std::vector<int32_t>{103, 104, 105, 106}));
    // a miss before n_min tokens: no draft
    std::vector<int32_t> h2 = concat(prompt, {5, 100, 107, 108});
    EXPECT_TRUE(draft_chain(*d, h2, 109).empty());
}

TEST(NgramCache, ContextStatisticsAndFiles) {
    SpecParams p;
    auto d = make_drafter("ngram-cache", p, target());
    std::vector<int32_t> prompt = concat(run_of(6), run_of(6));  // 100..105 twice
    d->begin(prompt);
    std::vector<int32_t> h = concat(prompt, {100, 101});
    std::vector<int32_t> got = draft_chain(*d, h, 102);
    ASSERT_GE(got.size(), 3u);
    EXPECT_EQ(got[0], 103);
    EXPECT_EQ(got[1], 104);
    EXPECT_EQ(got.size(), std::min<size_t>(8, got.size()));  // at most 8

    // file round trip, and a static-only draft (context has never seen these tokens)
    NgramCache c;
    ngram_cache_update(c, {7, 8, 9, 7, 8, 9, 7, 8, 9}, 0);
    const std::string path = temp_path("lookup");
    ngram_cache_save(c, path);
    NgramCache back = ngram_cache_load(path);
    EXPECT_EQ(back.size(), c.size());
    EXPECT_EQ(back[ngram_key(std::vector<int32_t>{7, 8}.data(), 2)][9], 3);
    p.lookup_cache_static = path;
    auto ds = make_drafter("ngram-cache", p, target());
    ds->begin({1});
    EXPECT_EQ(draft_chain(*ds, {1, 7}, 8, 2), (std::vector<int32_t>{9, 7}));
    // a truncated file: a clear error with the byte offset
    FILE* f = fopen(path.c_str(), "ab");
    fputc(1, f);
    fclose(f);
    try {
        ngram_cache_load(path);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("at byte"), std::string::npos) << e.what();
    }
    remove(path.c_str());
}

TEST(CopySpec, CopiesFromTheOccurrenceWithTheMostTokensAfterIt) {
    SpecParams p;
    p.copyspec_gamma = 3;
    p.draft_n_max = 5;
    auto d = make_drafter("copyspec", p, target());
    d->begin({});
    std::vector<int32_t> h = repeated(2);  // ... 100 101, id_last 102
    EXPECT_EQ(draft_chain(*d, h, 102), (std::vector<int32_t>{103, 104, 105, 106, 107}));
    EXPECT_TRUE(draft_chain(*d, h, 5).empty());
}

TEST(Recycle, GrowsATreeFromTheTargetsTopCandidates) {
    SpecParams p;
    p.draft_n_max = 6;
    p.recycle_k = 4;
    const Model& m = target();
    const int nv = m.hparams().n_vocab;
    auto d = make_drafter("recycle", p, m);
    d->begin({10, 11, 12});  // bigrams seed empty rows: 10 -> 11 -> 12
    EXPECT_EQ(draft_chain(*d, {}, 10), (std::vector<int32_t>{11, 12}));
    // logits after token 20 rank 30 > 31 > 32 > 33; after 30 rank 40 > 41 ...
    std::vector<std::vector<float>> l(2, std::vector<float>(nv, 0.0f));
    for (int i = 0; i < 4; i++) {
        l[0][30 + i] = 10.0f - i;
        l[1][40 + i] = 10.0f - i;
    }
    std::vector<int32_t> toks{20, 30};
    std::vector<const float*> rows{l[0].data(), l[1].data()};
    std::vector<int32_t> committed{0, 1};
    d->observe(VerifyRows{toks, rows, nv, committed});
    DraftTree t;
    DraftRequest req{std::vector<int32_t>{}, 20, 6, 0.0f};
    req.row_cost = 0;  // free verify rows: every candidate with a chance of acceptance is drafted
    d->draft(req, t);
    ASSERT_EQ(t.size(), 8);  // 4 successors of 20, 4 of 30 (the others have no row yet)
    EXPECT_FALSE(t.is_chain());
    EXPECT_EQ(t.nodes[0].token, 30);  // root's best candidate first
    int below_30 = 0;
    for (const DraftNode& n : t.nodes)
        if (n.parent == 0) {
            EXPECT_GE(n.token, 40);
            below_30++;
        }
    EXPECT_EQ(below_30, 4);
}

// Once the verify cost is known, the chain stops where the trie's path probability no longer pays for
// a row: after "1 2 3" comes 4 every time (q = 1), then 5 only half the time (q = 0.5).
TEST(Suffix, ChainStopsWhereARowNoLongerPays) {
    SpecParams p;
    p.draft_n_max = 8;
    auto d = make_drafter("suffix", p, target());
    const std::vector<int32_t> prompt{100, 101, 102, 103, 104, 105, 106, 100, 101, 102, 103, 104, 105, 106,
                                      100, 101, 102, 103, 104, 108, 108, 100, 101, 102, 103, 104, 109, 109};
    d->begin(prompt);
    const std::vector<int32_t> h = concat(prompt, {100, 101, 102});
    const auto chain = [&](double row_cost) {
        DraftTree t;
        DraftRequest req{h, 103, 8, 0.0f};
        req.row_cost = row_cost;
        d->draft(req, t);
        std::vector<int32_t> out;
        for (const DraftNode& n : t.nodes) out.push_back(n.token);
        return out;
    };
    const std::vector<int32_t> free_rows = chain(-1);  // cost not measured: min_prob alone (0.1)
    ASSERT_GE(free_rows.size(), 3u);
    EXPECT_EQ(free_rows[0], 104);
    EXPECT_EQ(free_rows[1], 105);
    EXPECT_EQ(chain(0.6), (std::vector<int32_t>{104}));  // 0.5 <= 0.6 (1 + 1) / (1 + 0.6)
    EXPECT_EQ(chain(0.3).size(), free_rows.size());      // 0.5 > 0.3 (1 + 1) / (1 + 0.3)
}

TEST(Suffix, LongestFrequentContinuationAndGlobalTree) {
    SpecParams p;
    p.draft_n_max = 8;
    auto d = make_drafter("suffix", p, target());
    std::vector<int32_t> prompt = repeated(0);
    d->begin(prompt);
    std::vector<int32_t> h = concat(prompt, {100, 101, 102});
    // suffix "100 101 102 103"? id_last 103 after 100 101 102: continuation 104.. (cap 2*p)
    std::vector<int32_t> got = draft_chain(*d, h, 103);
    ASSERT_FALSE(got.empty());
    EXPECT_EQ(got[0], 104);
    EXPECT_EQ(got.size(), 8u);
    // the global tree: an earlier response is found by a later request with an unrelated prompt
    d->end({70, 71, 72, 73, 74, 75});
    d->begin({1, 2, 3});
    EXPECT_EQ(draft_chain(*d, {1, 2, 3, 70, 71}, 72), (std::vector<int32_t>{73, 74, 75}));
}

}  // namespace bee::test

namespace bee::test {

// "1 2 3" was followed by "4 6 10" three times and by "5 7 11" once: a chain drafts the frequent path,
// tree mode adds the rarer one as a second branch (best-first by path probability, parents first). The
// context "99 1 2 3" is new, so "1 2 3" is the longest match.
TEST(Suffix, TreeModeBranchesWhereEarlierTextContinuedDifferently) {
    const std::vector<int32_t> h{1, 2, 3, 4, 6, 10, 1, 2, 3, 5, 7, 11, 1, 2, 3, 4, 6, 10, 1, 2, 3, 4, 6, 10, 99, 1, 2};
    SpecParams p;
    auto chain = make_drafter("suffix", p, target());
    chain->begin(h);
    EXPECT_EQ(draft_chain(*chain, h, 3, 3), (std::vector<int32_t>{4, 6, 10}));

    p.suffix_tree_nodes = 5;
    auto tree = make_drafter("suffix", p, target());
    tree->begin(h);
    DraftTree t;
    tree->draft(DraftRequest{h, 3, 3, 0.0f}, t);
    ASSERT_EQ(t.size(), 5);
    const std::vector<int32_t> tokens{4, 6, 10, 5, 7}, parents{-1, 0, 1, -1, 3};
    for (int i = 0; i < 5; i++) {
        EXPECT_EQ(t.nodes[i].token, tokens[i]) << i;
        EXPECT_EQ(t.nodes[i].parent, parents[i]) << i;
    }
    EXPECT_EQ(t.max_depth(), 3);  // the depth cap holds on every branch

    p.suffix_tree_nodes = 2;  // the budget cuts the tree, keeping the most probable nodes
    auto small = make_drafter("suffix", p, target());
    small->begin(h);
    EXPECT_EQ(draft_chain(*small, h, 3, 3), (std::vector<int32_t>{4, 6}));
}

}  // namespace bee::test
