// tests/unit/spec/test_dflash_drafter: the dflash drafter over a tiny llama target with random drafters in both
// dialects. Its context must follow the target exactly: at every step its draft equals the draft of a fresh drafter
// shown the whole history in one prompt batch (accepted tokens, drafted by it or by another drafter, enter its context;
// stale cells leave it), also when several sequences draft in one pass; greedy output is unchanged, flat and DDTree;
// the tree is the best-first one over the block's marginals within the (scaled) budget, pruned by the row cost; sampled
// drafts keep the target's distribution; -md picks the kind by the file and what cannot apply is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "../model/tiny_model.h"
#include "base/error.h"
#include "dflash_test_drafter.h"
#include "hidden_drafter_test_util.h"
#include "spec/dflash/dflash_model.h"
#include "spec/draft_marginals.h"
#include "spec_loop.h"
#include "spec_test_util.h"

namespace bee::test {
namespace {

struct Fixture {
    std::unique_ptr<Model> target;
    std::string llama_cpp, fork;  // drafters: llama.cpp's dialect with a compact vocabulary; the fork's
};

const Fixture& fixture() {
    static Fixture f = [] {
        Fixture x;
        x.target = tiny_drafter_target("dflash_drafter_target");
        DrafterSpec s;
        s.n_draft = 120;
        s.own_output = true;
        x.llama_cpp = write_drafter(s);
        DrafterSpec k;
        k.fork = true;
        k.layers = {0, 2, 3};  // HF ids: Bee's 1, 3, 4 (the last one the final hidden state)
        k.n_swa = 3;
        x.fork = write_drafter(k);
        return x;
    }();
    return f;
}

SpecParams dflash_params(const std::string& file, int n_max) {
    SpecParams p;
    p.types = {"dflash"};
    p.draft_model = file;
    p.draft_n_max = n_max;
    p.depth.adaptive = false;  // draft every step at full depth
    return p;
}

std::unique_ptr<Engine> engine(int n_ctx = 256) {
    EngineParams ep;
    ep.n_ctx = n_ctx;
    ep.n_threads = 2;
    return std::make_unique<Engine>(*fixture().target, ep);
}

std::vector<int32_t> generate(Speculator* spec, const std::vector<int32_t>& prompt, int n) {
    std::unique_ptr<Engine> eng = engine();
    SamplingParams s;
    s.temp = 0;
    Sampler sampler(s, 300);
    GenerateOptions go;
    go.n_predict = n;
    go.n_batch = 16;  // the prompt arrives in chunks
    go.ignore_eos = true;
    return generate_tokens(*eng, sampler, spec, prompt, go).tokens;
}

std::unique_ptr<Drafter> make(SpecShared& shared) {
    const DrafterEnv env{shared.params(), *fixture().target, shared.get("dflash"), &shared.pool()};
    return find_drafter_kind("dflash")->make(env);
}

// `d` shown `history` in one prefill batch, only the rows [row0, row0 + n) of each given range.
void show(Drafter& d, const std::vector<int32_t>& history, const std::vector<std::pair<int, int>>& ranges = {}) {
    std::unique_ptr<Engine> eng = engine();
    Batch b;
    for (size_t i = 0; i < history.size(); i++) b.add(history[i], (int32_t)i, 0, i + 1 == history.size());
    b.capture_layers = d.capture_layers();
    DecodeOutput out;
    eng->decode(b, out);
    if (ranges.empty()) d.observe_target(TargetRows{b, out, 0, b.size(), true});
    for (auto [row0, n] : ranges) d.observe_target(TargetRows{b, out, row0, n, true});
}

// A fresh drafter shown history in one prefill batch: its draft for (history, id_last).
std::vector<int32_t> draft_from_scratch(SpecShared& shared, const std::vector<int32_t>& history, int32_t id_last,
                                        int n_max, double row_cost = -1) {
    std::unique_ptr<Drafter> d = make(shared);
    show(*d, history);
    DraftTree t;
    DraftRequest req{history, id_last, n_max, 0.0f};
    req.row_cost = row_cost;
    d->draft(req, t);
    return tree_tokens(t);
}

struct Case {
    const char* name;
    bool fork;
    int branch_budget;
};
class DflashEveryDraft : public testing::TestWithParam<Case> {};

TEST_P(DflashEveryDraft, EqualsAFreshDrafterShownTheWholeHistory) {
    const Case c = GetParam();
    const std::vector<int32_t> prompt = prompt_tokens(40);
    const std::vector<int32_t> truth = generate(nullptr, prompt, 40);
    SpecParams p = dflash_params(c.fork ? fixture().fork : fixture().llama_cpp, 5);
    p.branch_budget = c.branch_budget;
    p.draft_top_k = c.branch_budget ? 3 : 1;
    SpecShared shared(p, *fixture().target);
    Speculator spec(shared, {});
    spec.add_drafter(std::make_unique<Oracle>(truth, (int)prompt.size()), "oracle");
    auto rec = std::make_unique<Recorder>(make(shared));
    Recorder* r = rec.get();
    spec.add_drafter(std::move(rec), "dflash");
    EXPECT_EQ(generate(&spec, prompt, 40), truth);
    ASSERT_GE(r->steps.size(), 6u);
    size_t longest = 0;
    for (const Recorder::Step& s : r->steps) {
        ASSERT_FALSE(s.tree.empty()) << "no draft at history length " << s.history.size();
        EXPECT_EQ(s.tree, draft_from_scratch(shared, s.history, s.id_last, s.n_max, s.row_cost))
            << "history length " << s.history.size();
        if (c.branch_budget) {
            EXPECT_GT(s.tree.size(), 2u * s.n_max) << "a tree";
        }
        longest = std::max(longest, s.history.size());
    }
    EXPECT_GT(longest, prompt.size() + 20);  // the oracle's accepted steps moved the sequence on
}

TEST_P(DflashEveryDraft, QueuedTogetherEqualsAlone) {
    const Case c = GetParam();
    SpecParams p = dflash_params(c.fork ? fixture().fork : fixture().llama_cpp, 5);
    p.branch_budget = c.branch_budget;
    p.draft_top_k = c.branch_budget ? 3 : 1;
    SpecShared shared(p, *fixture().target);
    expect_queued_drafts_equal_alone(shared, *fixture().target, "dflash", 5,
                                     [&](const std::vector<int32_t>& h, int32_t id_last) {
                                         return draft_from_scratch(shared, h, id_last, 5);
                                     });
}

INSTANTIATE_TEST_SUITE_P(DflashDrafter, DflashEveryDraft,
                         testing::Values(Case{"LlamaCppChains", false, 0}, Case{"ForkTrees", true, 6}),
                         [](const testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

TEST(DflashDrafter, GreedyOutputIsUnchangedFlatDdtreeAndAdaptive) {
    const std::vector<int32_t> prompt = prompt_tokens(30);
    const std::vector<int32_t> plain = generate(nullptr, prompt, 48);
    for (int branches : {0, 8}) {
        SpecParams p = dflash_params(fixture().llama_cpp, 6);
        p.branch_budget = branches;
        p.draft_top_k = branches ? 3 : 1;
        SpecShared shared(p, *fixture().target);
        Speculator spec(shared);
        EXPECT_EQ(generate(&spec, prompt, 48), plain) << "branch budget " << branches;
        EXPECT_GT(spec.stats().draft_n(), 100) << "it drafted";
    }
    // The depth controller choosing the block length (and the tree shrinking with it).
    SpecParams p = dflash_params(fixture().fork, 6);
    p.depth.adaptive = true;
    p.depth.controller = "fringe";
    p.branch_budget = 8;
    p.draft_top_k = 3;
    SpecShared shared(p, *fixture().target);
    Speculator spec(shared);
    EXPECT_EQ(generate(&spec, prompt, 48), plain) << "adaptive depth";
}

TEST(DflashDrafter, StaleCellsLeaveTheContext) {
    // The drafter saw history A; the sequence now holds B, which differs from A at position 9, and only B's
    // rows from 20 on reached the drafter (the rest was decoded while another Speculator served the slot).
    // The cells from 9 on may hold A's states: its draft must equal that of a drafter shown B's rows 0..8.
    std::vector<int32_t> a = prompt_tokens(30), b = a;
    b[9] = (b[9] + 1) % 300;
    SpecShared shared(dflash_params(fixture().fork, 4), *fixture().target);
    std::unique_ptr<Drafter> d = make(shared), want = make(shared);
    show(*d, a);
    show(*d, b, {{20, 10}});
    show(*want, b, {{0, 9}});
    DraftTree got_t, want_t;
    d->draft(DraftRequest{b, 7, 4, 0.0f}, got_t);
    want->draft(DraftRequest{b, 7, 4, 0.0f}, want_t);
    EXPECT_EQ(tree_tokens(got_t), tree_tokens(want_t));
    EXPECT_NE(tree_tokens(got_t), draft_from_scratch(shared, b, 7, 4)) << "the context matters here";
}

// The block's top-k marginals, straight from the model (target ids).
std::vector<DepthTop> marginals(SpecShared& shared, const std::vector<int32_t>& history, int32_t id_last, int n,
                                int k) {
    const DrafterTarget target = drafter_target_of(*fixture().target);
    const std::unique_ptr<DflashModel> model = DflashModel::load(shared.params().draft_model, target);
    std::unique_ptr<Drafter> d = make(shared);
    // The features, the way the drafter reads them: decode the history with the drafter's taps.
    std::unique_ptr<Engine> eng = engine();
    Batch b;
    for (size_t i = 0; i < history.size(); i++) b.add(history[i], (int32_t)i, 0, i + 1 == history.size());
    b.capture_layers = d->capture_layers();
    DecodeOutput out;
    eng->decode(b, out);
    const DflashHParams& hp = model->hparams();
    std::vector<float> feat;
    std::vector<int32_t> pos;
    for (int i = 0; i < b.size(); i++) {
        pos.push_back(i);
        for (int32_t il : hp.target_layers) {
            const int slot =
                (int)(std::find(out.hidden_layers.begin(), out.hidden_layers.end(), il) - out.hidden_layers.begin());
            const float* h = out.hidden_for_row(i, slot);
            feat.insert(feat.end(), h, h + hp.n_embd);
        }
    }
    DflashContext ctx;
    model->add_context(shared.pool(), ctx, feat.data(), pos.data(), b.size());
    const DflashBlock block{&ctx, id_last, (int32_t)history.size(), n};
    std::vector<float> logits((size_t)n * hp.n_draft_vocab);
    model->draft(shared.pool(), &block, 1, shared.params().dflash_cross_ctx, logits.data());
    std::vector<DepthTop> t(n);
    for (int i = 0; i < n; i++) {
        top_candidates(logits.data() + (size_t)i * hp.n_draft_vocab, hp.n_draft_vocab, k, t[i]);
        for (int32_t& id : t[i].id) id = model->target_id(id);
    }
    return t;
}

// Every path of ranks < k down to depth n with its log-probability (the DDTree candidates).
void enumerate(const std::vector<DepthTop>& m, std::vector<int>& ranks, double lp,
               std::map<std::vector<int32_t>, double>& paths, std::vector<int32_t>& tokens) {
    if (ranks.size() == m.size()) return;
    const DepthTop& t = m[ranks.size()];
    for (int r = 0; r < (int)t.id.size(); r++) {
        ranks.push_back(r);
        tokens.push_back(t.id[r]);
        paths[tokens] = lp + t.lp[r];
        enumerate(m, ranks, lp + t.lp[r], paths, tokens);
        ranks.pop_back();
        tokens.pop_back();
    }
}

// The tree's nodes as token paths from the root.
std::vector<std::vector<int32_t>> node_paths(const DraftTree& t) {
    std::vector<std::vector<int32_t>> p(t.size());
    for (int i = 0; i < t.size(); i++) {
        if (t.nodes[i].parent >= 0) p[i] = p[t.nodes[i].parent];
        p[i].push_back(t.nodes[i].token);
    }
    return p;
}

TEST(DflashDrafter, DdtreeIsTheBestFirstTreeOverTheMarginals) {
    const std::vector<int32_t> history = prompt_tokens(24);
    const int32_t id_last = 9;
    const int base = 4, k = 3;
    for (auto [n, row_cost] : {std::pair{4, -1.0}, std::pair{2, -1.0}, std::pair{4, 0.1}}) {
        SpecParams p = dflash_params(fixture().llama_cpp, base);
        p.branch_budget = 7;
        p.draft_top_k = k;
        SpecShared shared(p, *fixture().target);
        std::vector<DepthTop> m = marginals(shared, history, id_last, n, k);
        std::unique_ptr<Drafter> d = make(shared);
        show(*d, history);
        DraftTree t;
        DraftRequest req{history, id_last, n, 0.0f};
        req.row_cost = row_cost;
        d->draft(req, t);
        // The main path first: the top-1 of each row, while its chance of acceptance pays for its row (with
        // a row cost s: q_d > s (1 + E) / (1 + s d), q_d = product of the top-1 probabilities, E = sum of q).
        int n_main = n;
        if (row_cost > 0) {
            double q = 1, e = 0;
            for (n_main = 0; n_main < n; n_main++) {
                q *= std::exp(m[n_main].lp[0]);
                if (q <= row_cost * (1 + e) / (1 + row_cost * n_main)) break;
                e += q;
            }
            EXPECT_LT(n_main, n) << "this drafter's chain is cut by a row cost of " << row_cost;
            m.resize(n_main);
        }
        ASSERT_GE(t.size(), n_main);
        for (int i = 0; i < n_main; i++) {
            EXPECT_EQ(t.nodes[i].token, m[i].id[0]) << i;
            EXPECT_EQ(t.nodes[i].parent, i - 1) << i;
        }
        // The branches: the best paths off the main path, as many as the budget (7, or 7 * 2 / 4 = 4 when
        // the depth policy halved the horizon) and the row cost allow.
        std::map<std::vector<int32_t>, double> all;
        std::vector<int> ranks;
        std::vector<int32_t> tokens;
        enumerate(m, ranks, 0, all, tokens);
        std::vector<std::pair<double, std::vector<int32_t>>> off;
        std::vector<int32_t> main;
        for (int i = 0; i < n_main; i++) {
            main.push_back(m[i].id[0]);
            all.erase(main);
        }
        for (auto& [path, lp] : all)
            if (row_cost < 0 || std::exp(lp) > row_cost) off.push_back({lp, path});
        std::sort(off.begin(), off.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
        const int budget = ddtree_branch_budget(base, n, 7, k);
        EXPECT_EQ(budget, n == base ? 7 : 4);
        off.resize(std::min((int)off.size(), budget));
        std::vector<std::vector<int32_t>> got = node_paths(t);
        got.erase(got.begin(), got.begin() + n_main);
        std::vector<std::vector<int32_t>> want;
        for (auto& [lp, path] : off) want.push_back(path);
        EXPECT_EQ(got, want) << "n " << n << ", row cost " << row_cost;
        EXPECT_FALSE(got.empty());
        if (row_cost > 0) {
            EXPECT_LT((int)got.size(), budget) << "the row cost pruned some";
        }
    }
}

TEST(DflashDrafter, BranchBudgetRules) {
    // min(base + budget, base * max(1, k)) nodes in all; a horizon below base scales the branches.
    EXPECT_EQ(ddtree_branch_budget(15, 15, 20, 4), 20);
    EXPECT_EQ(ddtree_branch_budget(15, 15, 100, 2), 15);  // capped at base * k
    EXPECT_EQ(ddtree_branch_budget(15, 15, 20, 1), 0);    // top-1: no branches
    EXPECT_EQ(ddtree_branch_budget(15, 5, 20, 4), 7);     // round(5 * 20 / 15)
    EXPECT_EQ(ddtree_branch_budget(4, 3, 100, 8), 21);    // round(3 * 28 / 4)
    EXPECT_EQ(ddtree_branch_budget(4, 4, 0, 8), 0);
}

TEST(DflashDrafter, SampledDraftsKeepTheTargetsDistribution) {
    // The first token of each step must follow the target's distribution at temperature 1, whatever the
    // drafter draws (exact rejection sampling with its q).
    const std::vector<int32_t> prompt = prompt_tokens(12);
    SpecParams p = dflash_params(fixture().llama_cpp, 3);
    p.draft_temp = 1.0f;
    SpecShared shared(p, *fixture().target);
    std::unique_ptr<Drafter> d = make(shared);
    show(*d, prompt);
    std::unique_ptr<Engine> eng = engine(64);
    Batch b;
    for (size_t i = 0; i < prompt.size(); i++) b.add(prompt[i], (int32_t)i, 0, true);
    DecodeOutput out;
    eng->decode(b, out);
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
    eng->decode(b, out);
    std::vector<double> expect(300);
    {
        const float* l = out.logits_at(0);
        const float mx = *std::max_element(l, l + 300);
        double z = 0;
        for (int i = 0; i < 300; i++) z += expect[i] = std::exp((double)l[i] - mx);
        for (double& e : expect) e /= z;
    }
    eng->memory().cut(0, P);
    std::vector<long> counts(300, 0);
    const int trials = 3000;
    int drafted = 0;
    for (int t = 0; t < trials; t++) {
        DraftTree tree;
        d->draft(DraftRequest{prompt, id_last, 3, 1.0f}, tree);
        ASSERT_EQ(tree.q.size(), (size_t)tree.size());
        ASSERT_TRUE(tree.is_chain());
        drafted += tree.size();
        b.clear();
        b.add(id_last, P, 0, true);
        for (const DraftNode& n : tree.nodes) b.add(n.token, P + n.depth, 0, true);
        eng->decode(b, out);
        std::vector<const float*> rows;
        for (int i = 0; i < b.size(); i++) rows.push_back(out.logits_at(i));
        const VerifyResult r = verify_tree(tree, rows, sampler);
        counts[r.tokens[0]]++;
        eng->memory().cut(0, P);
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

// SpecShared must throw an Error whose message holds `want`.
void expect_refused(const SpecParams& p, const std::string& want) {
    try {
        SpecShared s(p, *fixture().target);
        ADD_FAILURE() << "started; expected an error with: " << want;
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
}

TEST(DflashDrafter, MdPicksTheKindByTheFileAndWhatCannotApplyIsRefused) {
    EXPECT_EQ(std::string(drafter_kind_for_file(fixture().llama_cpp).name), "dflash");
    EXPECT_EQ(std::string(drafter_kind_for_file(fixture().fork).name), "dflash");
    EXPECT_EQ(parse_spec_types("draft-dflash,ngram-mod"), (std::vector<std::string>{"ngram-mod", "dflash"}));
    SpecParams p = dflash_params(fixture().fork, 4);
    p.types = {"draft-eagle3"};
    expect_refused(p, "is a 'dflash-draft' file, which --spec-type draft-eagle3 cannot use: use --spec-type dflash");
    p.types = {"draft"};
    p.draft_model = fixture().llama_cpp;
    expect_refused(p, "use --spec-type dflash");
    const std::string model = temp_path("dflash_not_a_drafter");
    write_tiny_model(tiny_config("llama"), model);
    p.types = {"dflash"};
    p.draft_model = model;
    expect_refused(p, "use --spec-type draft");
    p.draft_model.clear();
    expect_refused(p, "--spec-type dflash needs a DFlash drafter: give it with -md DRAFTER.gguf");
    p.draft_model = fixture().fork;
    p.draft_temp = 0.5f;
    p.branch_budget = 4;
    p.draft_top_k = 2;
    expect_refused(p, "--spec-draft-temp 0.5 samples chains, which cannot be DDTree trees");
}

TEST(DflashDrafter, MaxSlotsLeavesTheOtherSlotsWithoutIt) {
    SpecParams p = dflash_params(fixture().fork, 4);
    const std::vector<std::string> types = {"ngram-mod", "dflash"};
    for (int slot = 0; slot < 4; slot++) EXPECT_EQ(spec_types_for_slot(p, types, slot), types) << "0: every slot";
    p.dflash_max_slots = 2;
    EXPECT_EQ(spec_types_for_slot(p, types, 1), types);
    EXPECT_EQ(spec_types_for_slot(p, types, 2), std::vector<std::string>{"ngram-mod"});
    EXPECT_TRUE(spec_types_for_slot(p, {"dflash"}, 3).empty());
}

}  // namespace
}  // namespace bee::test
