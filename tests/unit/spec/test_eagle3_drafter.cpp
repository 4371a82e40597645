// tests/unit/spec/test_eagle3_drafter: the draft-eagle3 drafter over a tiny llama target with a random head. Its state
// must follow the target exactly: at every step its draft equals the draft of a fresh drafter shown the whole history
// in one prompt batch (so positions never freeze and accepted tokens, drafted by it or by another drafter, enter its
// cache), also when several sequences draft in one pass; greedy output is unchanged by it, as chains and as trees;
// sampled drafts keep the target's distribution; files for the wrong kind are refused.
#include <gtest/gtest.h>

#include <cmath>

#include "../model/tiny_model.h"
#include "base/error.h"
#include "eagle3_test_head.h"
#include "hidden_drafter_test_util.h"
#include "spec_loop.h"
#include "spec_test_util.h"

namespace bee::test {
namespace {

struct Fixture {
    std::unique_ptr<Model> target;
    std::string head;
};

const Fixture& fixture() {
    static Fixture f = [] {
        Fixture x;
        x.target = tiny_drafter_target("eagle3_drafter_target");
        HeadSpec hs;
        hs.n_draft = 120;  // a compact vocabulary
        hs.own_embd = false;
        x.head = write_head(hs);
        return x;
    }();
    return f;
}

SpecParams eagle3_params(int n_max) {
    SpecParams p;
    p.types = {"draft-eagle3"};
    p.draft_model = fixture().head;
    p.draft_n_max = n_max;
    p.depth.adaptive = false;  // draft every step at full depth
    return p;
}

std::vector<int32_t> generate(Speculator* spec, const std::vector<int32_t>& prompt, int n) {
    EngineParams ep;
    ep.n_ctx = 256;
    ep.n_threads = 2;
    Engine eng(*fixture().target, ep);
    SamplingParams s;
    s.temp = 0;
    Sampler sampler(s, 300);
    GenerateOptions go;
    go.n_predict = n;
    go.n_batch = 16;  // the prompt arrives in chunks
    go.ignore_eos = true;
    return generate_tokens(eng, sampler, spec, prompt, go).tokens;
}

// A fresh drafter shown history in one prefill batch: its draft for (history, id_last).
std::vector<int32_t> draft_from_scratch(SpecShared& shared, const std::vector<int32_t>& history, int32_t id_last,
                                        int n_max) {
    const DrafterEnv env{shared.params(), *fixture().target, shared.get("draft-eagle3"), &shared.pool()};
    std::unique_ptr<Drafter> d = find_drafter_kind("draft-eagle3")->make(env);
    EngineParams ep;
    ep.n_ctx = 256;
    ep.n_threads = 2;
    Engine eng(*fixture().target, ep);
    Batch b;
    for (size_t i = 0; i < history.size(); i++) b.add(history[i], (int32_t)i, 0, i + 1 == history.size());
    b.capture_layers = d->capture_layers();
    DecodeOutput out;
    eng.decode(b, out);
    d->observe_target(TargetRows{b, out, 0, b.size(), true});
    DraftTree t;
    d->draft(DraftRequest{history, id_last, n_max, 0.0f}, t);
    return tree_tokens(t);
}

class EveryDraft : public testing::TestWithParam<int> {};

TEST_P(EveryDraft, EqualsAFreshDrafterShownTheWholeHistory) {
    const std::vector<int32_t> prompt = prompt_tokens(40);
    const std::vector<int32_t> truth = generate(nullptr, prompt, 40);
    SpecParams p = eagle3_params(4);
    p.branch_budget = GetParam();
    p.draft_top_k = GetParam() ? 3 : 1;
    SpecShared shared(p, *fixture().target);
    Speculator spec(shared, {});
    spec.add_drafter(std::make_unique<Oracle>(truth, (int)prompt.size()), "oracle");
    const DrafterEnv env{shared.params(), *fixture().target, shared.get("draft-eagle3"), &shared.pool()};
    auto rec = std::make_unique<Recorder>(find_drafter_kind("draft-eagle3")->make(env));
    Recorder* r = rec.get();
    spec.add_drafter(std::move(rec), "eagle3");
    EXPECT_EQ(generate(&spec, prompt, 40), truth);
    ASSERT_GE(r->steps.size(), 6u);
    size_t longest = 0;
    for (const Recorder::Step& s : r->steps) {
        ASSERT_FALSE(s.tree.empty()) << "no draft at history length " << s.history.size();
        EXPECT_EQ(s.tree, draft_from_scratch(shared, s.history, s.id_last, s.n_max))
            << "history length " << s.history.size();
        longest = std::max(longest, s.history.size());
    }
    EXPECT_GT(longest, prompt.size() + 20);  // the oracle's accepted steps moved the sequence on
}

TEST_P(EveryDraft, QueuedTogetherEqualsAlone) {
    SpecParams p = eagle3_params(4);
    p.branch_budget = GetParam();
    p.draft_top_k = GetParam() ? 3 : 1;
    SpecShared shared(p, *fixture().target);
    expect_queued_drafts_equal_alone(shared, *fixture().target, "draft-eagle3", 4,
                                     [&](const std::vector<int32_t>& h, int32_t id_last) {
                                         return draft_from_scratch(shared, h, id_last, 4);
                                     });
}

INSTANTIATE_TEST_SUITE_P(Eagle3Drafter, EveryDraft, testing::Values(0, 4),
                         [](const testing::TestParamInfo<int>& i) { return i.param ? "Trees" : "Chains"; });

TEST(Eagle3Drafter, GreedyOutputIsUnchangedByChainsAndTrees) {
    const std::vector<int32_t> prompt = prompt_tokens(30);
    const std::vector<int32_t> plain = generate(nullptr, prompt, 48);
    for (int branches : {0, 5}) {
        SpecParams p = eagle3_params(5);
        p.branch_budget = branches;
        p.draft_top_k = branches ? 3 : 1;
        SpecShared shared(p, *fixture().target);
        Speculator spec(shared);
        EXPECT_EQ(generate(&spec, prompt, 48), plain) << "branch budget " << branches;
        EXPECT_GT(spec.stats().draft_n(), 100) << "it drafted";
    }
}

TEST(Eagle3Drafter, TreesAddRunnersUpAsLeavesWithinTheBudget) {
    const std::vector<int32_t> prompt = prompt_tokens(20);
    SpecParams p = eagle3_params(4);
    p.branch_budget = 3;
    p.draft_top_k = 2;
    SpecShared shared(p, *fixture().target);
    const std::vector<int32_t> chain = [&] {
        SpecParams c = p;
        c.branch_budget = 0;
        c.draft_top_k = 1;
        SpecShared s(c, *fixture().target);
        return draft_from_scratch(s, prompt, 7, 4);
    }();
    const std::vector<int32_t> tree = draft_from_scratch(shared, prompt, 7, 4);
    ASSERT_EQ(chain.size(), 8u);  // 4 nodes as (token, parent)
    ASSERT_EQ(tree.size(), 2 * (4u + 3u));
    EXPECT_TRUE(std::equal(chain.begin(), chain.end(), tree.begin())) << "the main path comes first";
    for (size_t i = 8; i < tree.size(); i += 2) {
        const int32_t parent = tree[i + 1];
        EXPECT_LT(parent, 3) << "a runner-up hangs below a main-path node";
        EXPECT_NE(tree[i], chain[2 * (parent + 1)]) << "and differs from the main path's token there";
    }
}

TEST(Eagle3Drafter, SampledDraftsKeepTheTargetsDistribution) {
    // The first token of each step must follow the target's distribution at temperature 1, whatever the
    // head drafts (exact rejection sampling with the head's q).
    const std::vector<int32_t> prompt = prompt_tokens(12);
    SpecParams p = eagle3_params(3);
    p.draft_temp = 1.0f;
    SpecShared shared(p, *fixture().target);
    const DrafterEnv env{shared.params(), *fixture().target, shared.get("draft-eagle3"), &shared.pool()};
    std::unique_ptr<Drafter> d = find_drafter_kind("draft-eagle3")->make(env);
    EngineParams ep;
    ep.n_ctx = 64;
    ep.n_threads = 2;
    Engine eng(*fixture().target, ep);
    Batch b;
    for (size_t i = 0; i < prompt.size(); i++) b.add(prompt[i], (int32_t)i, 0, true);
    b.capture_layers = d->capture_layers();
    DecodeOutput out;
    eng.decode(b, out);
    d->observe_target(TargetRows{b, out, 0, b.size(), true});
    const int32_t id_last = 5, P = (int32_t)prompt.size();
    SamplingParams s;
    s.temp = 1.0f;
    s.top_k = 0;
    s.top_p = 1.0f;
    s.min_p = 0.0f;
    s.seed = 3;
    Sampler sampler(s, 300);
    // The target's exact distribution at id_last's row.
    b.clear();
    b.add(id_last, P, 0, true);
    eng.decode(b, out);
    std::vector<double> expect(300);
    {
        const float* l = out.logits_at(0);
        const float mx = *std::max_element(l, l + 300);
        double z = 0;
        for (int i = 0; i < 300; i++) z += expect[i] = std::exp((double)l[i] - mx);
        for (double& e : expect) e /= z;
    }
    eng.memory().cut(0, P);
    std::vector<long> counts(300, 0);
    const int trials = 3000;
    int drafted = 0;
    for (int t = 0; t < trials; t++) {
        DraftTree tree;
        d->draft(DraftRequest{prompt, id_last, 3, 1.0f}, tree);
        ASSERT_EQ(tree.q.size(), (size_t)tree.size());
        drafted += tree.size();
        b.clear();
        b.add(id_last, P, 0, true);
        for (const DraftNode& n : tree.nodes) b.add(n.token, P + n.depth, 0, true);
        eng.decode(b, out);
        std::vector<const float*> rows;
        for (int i = 0; i < b.size(); i++) rows.push_back(out.logits_at(i));
        const VerifyResult r = verify_tree(tree, rows, sampler);
        counts[r.tokens[0]]++;
        eng.memory().cut(0, P);
    }
    EXPECT_GT(drafted, trials);
    // Chi-square over the tokens with an expected count >= 5, the rest pooled.
    double chi = 0, rest_e = 0;
    long rest_c = 0;
    int df = 0;
    for (int i = 0; i < 300; i++) {
        const double e = expect[i] * trials;
        if (e < 5) {
            rest_e += e, rest_c += counts[i];
            continue;
        }
        chi += (counts[i] - e) * (counts[i] - e) / e;
        df++;
    }
    if (rest_e >= 5) chi += (rest_c - rest_e) * (rest_c - rest_e) / rest_e, df++;
    df -= 1;
    ASSERT_GE(df, 3);
    EXPECT_LT(chi, df + 3.1 * std::sqrt(2.0 * df) + 4) << "chi-square above its 99.9% bound, df " << df;
}

TEST(Eagle3Drafter, FilesForTheOtherKindAreRefusedWithTheTypeToUse) {
    SpecParams p = eagle3_params(4);
    const std::string model = temp_path("eagle3_not_a_head");
    write_tiny_model(tiny_config("llama"), model);
    EXPECT_EQ(std::string(drafter_kind_for_file(fixture().head).name), "draft-eagle3");
    EXPECT_EQ(std::string(drafter_kind_for_file(model).name), "draft");
    p.types = {"draft"};
    try {
        SpecShared s(p, *fixture().target);
        FAIL() << "a head taken as a draft model";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("use --spec-type draft-eagle3"), std::string::npos) << e.what();
    }
    p.types = {"draft-eagle3"};
    p.draft_model = model;
    try {
        SpecShared s(p, *fixture().target);
        FAIL() << "a model taken as a head";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("use --spec-type draft"), std::string::npos) << e.what();
    }
    p.draft_model.clear();
    EXPECT_THROW(SpecShared(p, *fixture().target), Error);
}

}  // namespace
}  // namespace bee::test
