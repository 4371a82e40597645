// tests/unit/spec/test_draft_grammar: speculation under a grammar. Drafts are cut at the first token the
// grammar rejects along each path (chains cut, tree subtrees pruned, the constraint itself untouched);
// verification samples every row under the grammar state reached along its path, so greedy output and
// the grammar's final state equal token-by-token sampling, sampled output keeps the constrained
// distribution (chi-square), a grammar with no way on stops after the accepted drafts, and on a tiny
// model the Speculator's verify batches never hold a token the grammar rejects.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "spec/draft_grammar.h"
#include "spec/verify.h"
#include "spec_loop.h"
#include "spec_test_util.h"

namespace bee::test {

namespace {

constexpr int V = 7;
constexpr int32_t kEog = 5;

// The toy vocabulary of tests/unit/sample/grammar_test: texts, one end-of-generation token (id 5).
std::shared_ptr<const GrammarVocab> toy_vocab() {
    auto v = std::make_shared<GrammarVocab>();
    v->text = {"a", "b", "ab", "x", "", "", "ba"};
    v->is_eog = {0, 0, 0, 0, 0, 1, 0};
    return v;
}

GrammarConstraint toy(const char* gbnf) { return GrammarConstraint(Grammar::parse(gbnf), toy_vocab()); }

std::vector<int32_t> tokens_of(const DraftTree& t) {
    std::vector<int32_t> v;
    for (const DraftNode& n : t.nodes) v.push_back(n.token);
    return v;
}

std::vector<int32_t> parents_of(const DraftTree& t) {
    std::vector<int32_t> v;
    for (const DraftNode& n : t.nodes) v.push_back(n.parent);
    return v;
}

// Whether every node of `t` is allowed after its ancestors, checked by accepting each path's tokens one
// by one into a fresh copy of the constraint (independently of cut_draft_to_grammar).
bool every_path_allowed(const DraftTree& t, const GrammarConstraint& g) {
    for (int i = 0; i < t.size(); i++) {
        std::vector<int32_t> path;
        for (int32_t n = i; n >= 0; n = t.nodes[n].parent) path.insert(path.begin(), t.nodes[n].token);
        GrammarConstraint c = g;
        for (int32_t tok : path) {
            if (!c.allowed(tok)) return false;
            c.accept(tok);
        }
    }
    return true;
}

// Target logits after token `prev` (a Markov toy target, as in test_verify).
std::vector<float> target_row(int prev) {
    std::vector<float> r(V);
    for (int n = 0; n < V; n++) r[n] = (float)std::sin(1.7 * prev + 2.3 * n) * 2.0f;
    return r;
}

}  // namespace

TEST(DraftGrammar, ChainIsCutAtTheFirstRejectedToken) {
    GrammarConstraint g = toy("root ::= (\"a\" \"b\")+");
    const std::vector<uint32_t> key = g.state().state_key();
    DraftTree t;
    const int32_t chain[] = {0, 1, 2, 3, 1};  // a b ab | x b: "x" is rejected, "b" goes with it
    t.add_chain(chain, 5);
    for (int i = 0; i < 5; i++) t.q.push_back({{chain[i], 0.5f}});
    EXPECT_EQ(cut_draft_to_grammar(t, g), 2);
    EXPECT_EQ(tokens_of(t), (std::vector<int32_t>{0, 1, 2}));
    ASSERT_EQ(t.q.size(), 3u);  // q stays with its node: rejection sampling still applies
    EXPECT_EQ(t.q[2][0].id, 2);
    ASSERT_EQ(t.q_cut.size(), 1u);  // and the removed "x"'s q, for the draw after the last kept node
    EXPECT_EQ(t.q_cut[0].id, 3);
    EXPECT_EQ(g.state().state_key(), key);  // the constraint did not move
    EXPECT_TRUE(g.allowed(0) && !g.allowed(1));

    DraftTree first;  // rejected at once: no node left; sampled, it is still a draft (its q_cut)
    first.add_chain(chain + 1, 3);
    DraftTree sampled = first;
    EXPECT_EQ(cut_draft_to_grammar(first, g), 3);
    EXPECT_TRUE(first.empty() && !first.drafted());
    for (int i = 1; i < 4; i++) sampled.q.push_back({{chain[i], 1.0f}});
    EXPECT_EQ(cut_draft_to_grammar(sampled, g), 3);
    EXPECT_TRUE(sampled.empty() && sampled.drafted());
    EXPECT_EQ(sampled.q_cut[0].id, 1);
}

TEST(DraftGrammar, TreeLosesRejectedSubtreesPerPath) {
    GrammarConstraint g = toy("root ::= \"ab\" | \"ba\"");
    DraftTree t;
    const int a = t.add(0, -1);   // 0 "a"
    t.add(1, a);                  // 1 "ab"       kept
    t.add(0, a);                  // 2 "aa"       rejected, though "a" is allowed at the root
    t.add(6, a);                  // 3 "aba"      rejected
    const int b = t.add(1, -1);   // 4 "b"
    t.add(0, b);                  // 5 "ba"       kept
    const int bb = t.add(1, b);   // 6 "bb"       rejected
    t.add(0, bb);                 // 7            below a rejected node
    const int x = t.add(3, -1);   // 8 "x"        rejected
    t.add(1, x);                  // 9            below a rejected node
    const int ab = t.add(2, -1);  // 10 "ab"      kept
    t.add(kEog, ab);              // 11 end       kept: the grammar is complete there
    t.add(kEog, -1);              // 12 end       rejected: nothing generated yet
    EXPECT_EQ(cut_draft_to_grammar(t, g), 7);
    EXPECT_EQ(tokens_of(t), (std::vector<int32_t>{0, 1, 1, 0, 2, kEog}));
    EXPECT_EQ(parents_of(t), (std::vector<int32_t>{-1, 0, -1, 2, -1, 4}));
    EXPECT_EQ(t.max_depth(), 2);
    EXPECT_TRUE(every_path_allowed(t, g));
}

TEST(DraftGrammar, CutsFromTheConstraintsCurrentState) {
    GrammarConstraint g = toy("root ::= \"ab\" | \"ba\"");
    ASSERT_TRUE(g.accept(1));  // "b" generated: only "a" may follow, then the end
    DraftTree t;
    const int a = t.add(0, -1);
    t.add(kEog, a);
    t.add(1, -1);
    EXPECT_EQ(cut_draft_to_grammar(t, g), 1);
    EXPECT_EQ(tokens_of(t), (std::vector<int32_t>{0, kEog}));
}

// Greedy: random trees (allowed and rejected tokens mixed) are cut, then verified under the grammar;
// the emitted tokens equal token-by-token constrained sampling and so does the grammar's state.
TEST(DraftGrammar, GreedyVerifyFollowsTheGrammarLikeSequentialSampling) {
    const char* gbnf = "root ::= ([ab] | \"ba\" | \"x\" [ab])+";
    SamplingParams sp;
    sp.temp = 0;
    std::vector<std::vector<float>> rows(V);
    for (int t = 0; t < V; t++) rows[t] = target_row(t);
    // the reference: one token at a time
    GrammarConstraint seq = toy(gbnf);
    Sampler s1(sp, V);
    std::vector<int32_t> want{3};  // the root token "x", already generated
    ASSERT_TRUE(seq.accept(3));
    std::vector<std::vector<uint32_t>> keys{seq.state().state_key()};
    for (int i = 0; i < 60; i++) {
        const int32_t t = seq.sample(s1, rows[want.back()].data());
        ASSERT_GE(t, 0);
        seq.accept(t);
        want.push_back(t);
        keys.push_back(seq.state().state_key());
    }
    // speculation: random trees, cut, verified
    GrammarConstraint g = toy(gbnf);
    Sampler s2(sp, V);
    ASSERT_TRUE(g.accept(3));
    std::vector<int32_t> got{3};
    std::mt19937 rng(5);
    int cut = 0, accepted = 0;
    while (got.size() < want.size()) {
        DraftTree tree;
        // the true continuation (so some drafts are accepted) with junk siblings and a junk tail
        int32_t parent = -1;
        for (size_t k = got.size(); k < want.size() && k < got.size() + 3; k++) {
            for (int j = 0; j < 2; j++) tree.add((int32_t)(rng() % V), parent);
            parent = tree.add(want[k], parent);
        }
        tree.add((int32_t)(rng() % V), parent);
        cut += cut_draft_to_grammar(tree, g);
        EXPECT_TRUE(every_path_allowed(tree, g));
        std::vector<const float*> logits{rows[got.back()].data()};
        for (const DraftNode& n : tree.nodes) logits.push_back(rows[n.token].data());
        const VerifyResult r = verify_tree(tree, logits, s2, &g);
        ASSERT_FALSE(r.stuck);
        accepted += r.n_accepted();
        for (int32_t t : r.tokens) got.push_back(t);
        const size_t n = std::min(got.size(), want.size());
        ASSERT_EQ(std::vector<int32_t>(got.begin(), got.begin() + (long)n),
                  std::vector<int32_t>(want.begin(), want.begin() + (long)n));
        if (got.size() <= want.size()) {
            EXPECT_EQ(g.state().state_key(), keys[got.size() - 1]);
        }
    }
    EXPECT_GT(cut, 10);
    EXPECT_GT(accepted, 20);
}

// The grammar can still be completed but no token of the vocabulary writes the next character: verify
// stops after the accepted drafts, without a bonus token.
TEST(DraftGrammar, VerifyStopsWhereNoTokenFits) {
    GrammarConstraint g = toy("root ::= \"a\" \"z\"");
    SamplingParams sp;
    sp.temp = 0;
    Sampler s(sp, V);
    std::vector<float> prefer_a = {5, 1, 0, 0, 0, 0, 0};
    DraftTree t;
    const int a = t.add(0, -1);
    t.add(3, a);
    EXPECT_EQ(cut_draft_to_grammar(t, g), 1);  // "x" cannot follow "a"
    std::vector<const float*> logits{prefer_a.data(), prefer_a.data()};
    const VerifyResult r = verify_tree(t, logits, s, &g);
    EXPECT_TRUE(r.stuck);
    EXPECT_EQ(r.tokens, (std::vector<int32_t>{0}));
    EXPECT_EQ(r.path, (std::vector<int32_t>{0}));
}

namespace {

// Joint distribution of the first two emitted tokens: speculation under the grammar against the exact
// constrained distribution. Drafts: sampled chains with q (rejection sampling; the drafter ignores the
// grammar, so some drafts are cut) or trees of every token (cut to the allowed ones). For chains the test
// has power: drawing the token after a cut chain from p instead of norm(max(0, p - q_cut)) fails it.
double constrained_chi_over_bound(bool chains, int trials) {
    const char* gbnf = "root ::= (\"a\" | \"b\") (\"b\" | \"x\")*";
    SamplingParams sp;
    sp.temp = 1.0f;
    sp.top_k = 0;
    sp.top_p = 1.0f;
    sp.min_p = 0.0f;
    sp.seed = 321;
    std::vector<std::vector<float>> rows(V);
    for (int t = 0; t < V; t++) rows[t] = target_row(t);
    const GrammarConstraint start = toy(gbnf);
    // exact: p1 at the start (after root token 3's row), p2 after each first token
    std::vector<double> expect(V * V, 0.0);
    {
        Sampler s(sp, V);
        GrammarConstraint c = start;
        std::vector<TokenProb> p1, p2;
        EXPECT_TRUE(c.distribution(s, rows[3].data(), p1));
        for (const TokenProb& a : p1) {
            GrammarConstraint c2 = start;
            c2.accept(a.id);
            EXPECT_TRUE(c2.distribution(s, rows[a.id].data(), p2));
            for (const TokenProb& b : p2) expect[a.id * V + b.id] = (double)a.p * b.p;
        }
    }
    Sampler s(sp, V);
    std::mt19937 draft_rng(77);
    std::vector<long> counts(V * V, 0);
    long accepted = 0;
    for (int trial = 0; trial < trials; trial++) {
        GrammarConstraint g = start;
        DraftTree tree;
        if (chains) {
            int prev = 3;
            for (int d = 0; d < 2; d++) {  // q: a fixed distribution over the whole vocabulary
                std::vector<TokenProb> q;
                std::vector<double> w;
                for (int n = 0; n < V; n++) w.push_back(std::exp(std::cos(0.9 * prev + 1.1 * n) * 1.5));
                double sum = 0;
                for (double x : w) sum += x;
                for (int n = 0; n < V; n++) q.push_back({n, (float)(w[n] / sum)});
                const int tok = std::discrete_distribution<int>(w.begin(), w.end())(draft_rng);
                tree.add(tok, tree.size() - 1);
                tree.q.push_back(q);
                prev = tok;
            }
        } else {
            for (int a = 0; a < V; a++) {
                const int n = tree.add(a, -1);
                for (int b = 0; b < V; b++) tree.add(b, n);
            }
        }
        cut_draft_to_grammar(tree, g);
        std::vector<const float*> logits{rows[3].data()};
        for (const DraftNode& n : tree.nodes) logits.push_back(rows[n.token].data());
        const VerifyResult r = verify_tree(tree, logits, s, &g);
        accepted += r.n_accepted();
        const int x1 = r.tokens[0];
        const int x2 = r.tokens.size() > 1 ? r.tokens[1] : g.sample(s, rows[x1].data());
        counts[x1 * V + x2]++;
    }
    EXPECT_GT(accepted, trials / 10);
    double chi = 0;
    int df = -1;
    for (int i = 0; i < V * V; i++) {
        const double e = expect[i] * trials;
        if (e == 0) {
            EXPECT_EQ(counts[i], 0) << "a pair the constrained target never produces (cell " << i << ")";
            continue;
        }
        chi += (counts[i] - e) * (counts[i] - e) / e;
        df++;
    }
    return chi / (df + 3.1 * std::sqrt(2.0 * df) + 4.0);  // the 99.9% bound, as in test_verify
}

}  // namespace

TEST(DraftGrammar, SampledChainsKeepTheConstrainedDistribution) {
    EXPECT_LT(constrained_chi_over_bound(true, 30000), 1.0);
}

TEST(DraftGrammar, SampledTreesKeepTheConstrainedDistribution) {
    EXPECT_LT(constrained_chi_over_bound(false, 20000), 1.0);
}

namespace {

// Drafts the true continuation three deep with junk: a rejected sibling at each level, and a path that
// leaves the grammar after the first true token.
class NoisyOracle : public Drafter {
public:
    NoisyOracle(std::vector<int32_t> truth, int prompt_len, std::vector<int32_t> junk)
        : truth_(std::move(truth)), n_prompt_(prompt_len), junk_(std::move(junk)) {}
    void draft(const DraftRequest& req, DraftTree& out) override {
        const size_t at = req.history.size() + 1 - n_prompt_;  // index in truth_ of the token after id_last
        int32_t parent = -1;
        for (size_t i = at; i < truth_.size() && i < at + 3 && (int)(i - at) < req.n_max; i++) {
            const int32_t j = out.add(junk_[i % junk_.size()], parent);
            out.add(truth_[(i + 1) % truth_.size()], j);
            parent = out.add(truth_[i], parent);
        }
    }
    int n_max() const override { return 3; }

private:
    std::vector<int32_t> truth_;
    int n_prompt_;
    std::vector<int32_t> junk_;
};

}  // namespace

namespace {

// Proposes the same chain every time (with q when `sampled`).
class FixedChain : public Drafter {
public:
    FixedChain(std::vector<int32_t> chain, bool sampled) : chain_(std::move(chain)), sampled_(sampled) {}
    void draft(const DraftRequest&, DraftTree& out) override {
        out.add_chain(chain_.data(), (int)chain_.size());
        if (sampled_)
            for (int32_t t : chain_) out.q.push_back({{t, 1.0f}});
    }
    int n_max() const override { return (int)chain_.size(); }

private:
    std::vector<int32_t> chain_;
    bool sampled_;
};

}  // namespace

// A draft the grammar cuts to nothing lets the next drafter try — unless it is a sampled chain: dropping
// it would depend on its draws, so it stays as the step's draft (its q_cut alone) and nobody else drafts.
TEST(DraftGrammar, SpeculatorCutsBeforeVerifyAndKeepsCutSampledChains) {
    const Model& m = *tiny_model("llama").model;
    auto vocab = std::make_shared<GrammarVocab>();
    vocab->text.assign(m.hparams().n_vocab, "b");
    vocab->is_eog.assign(m.hparams().n_vocab, 0);
    vocab->text[10] = "a";
    const GrammarConstraint g(Grammar::parse("root ::= \"a\"+"), vocab);
    SpecParams p;
    p.depth.adaptive = false;  // the drafters' own depth
    SpecShared shared(p, m);
    const std::vector<int32_t> history{1, 2, 3};
    DraftLimits lim;
    lim.grammar = &g;
    for (bool sampled : {false, true}) {
        Speculator spec(shared, {});
        spec.add_drafter(std::make_unique<FixedChain>(std::vector<int32_t>{20, 10, 10}, sampled), "junk");
        spec.add_drafter(std::make_unique<FixedChain>(std::vector<int32_t>{10, 10, 20, 10}, false), "good");
        spec.begin(history);
        const DraftTree& t = spec.draft(history, 10, lim);
        if (sampled) {
            EXPECT_TRUE(t.empty() && t.drafted());
            EXPECT_EQ(spec.n_grammar_cut(), 3);
        } else {
            EXPECT_EQ(tokens_of(t), (std::vector<int32_t>{10, 10}));  // the second drafter's, cut at "b"
            EXPECT_EQ(spec.n_grammar_cut(), 3 + 2);
        }
        EXPECT_EQ(spec.stats().n_grammar_cut, spec.n_grammar_cut());
    }
}

// A tiny model whose tokens are given letters: constrained greedy output with a drafter that proposes
// rejected tokens equals constrained output without speculation, and no verify batch holds one of them.
TEST(DraftGrammar, TinyModelGreedyUnchangedAndRejectedDraftsNeverVerified) {
    const Model& m = *tiny_model("llama").model;
    const int32_t nv = m.hparams().n_vocab;
    auto vocab = std::make_shared<GrammarVocab>();
    vocab->text.resize(nv);
    vocab->is_eog.assign(nv, 0);
    for (int32_t id = 0; id < nv; id++) {
        vocab->is_eog[id] = m.tokenizer().is_eog(id) ? 1 : 0;
        vocab->text[id] = std::string(1, (char)('a' + id % 26)) + (id % 3 ? "" : "q");
    }
    const GrammarConstraint start(Grammar::parse("root ::= ([a-m] [n-z])+"), vocab);
    std::vector<int32_t> junk;  // "nq" ... "zq": never allowed ("q" can only follow [a-m])
    for (int32_t id = 0; id < nv; id++)
        if (!vocab->is_eog[id] && vocab->text[id][0] >= 'n' && vocab->text[id].size() == 2) junk.push_back(id);
    ASSERT_FALSE(junk.empty());
    std::vector<int32_t> prompt{1};
    for (int32_t t : tiny_tokens(20, nv, 7)) prompt.push_back(t);
    GrammarConstraint* live = nullptr;  // the run's constraint (at id_last when a draft is made)
    auto run = [&](Speculator* spec, const std::function<void(const DraftTree&)>& on_draft) {
        EngineParams ep;
        ep.n_ctx = 256;
        ep.n_threads = 2;
        Engine eng(m, ep);
        SamplingParams sp;
        sp.temp = 0;
        Sampler sampler(sp, nv);
        GrammarConstraint g = start;
        live = &g;
        GenerateOptions go;
        go.n_predict = 40;
        go.ignore_eos = true;
        go.grammar = &g;
        go.on_draft = on_draft;
        return generate_tokens(eng, sampler, spec, prompt, go).tokens;
    };
    const std::vector<int32_t> truth = run(nullptr, {});
    ASSERT_EQ(truth.size(), 40u);
    SpecParams p;
    SpecShared shared(p, m);
    Speculator spec(shared, {});
    spec.add_drafter(std::make_unique<NoisyOracle>(truth, (int)prompt.size(), junk), "oracle");
    int n_verified = 0, n_bad = 0;
    const std::vector<int32_t> got = run(&spec, [&](const DraftTree& t) {
        n_verified += t.size();
        n_bad += !every_path_allowed(t, *live);
    });
    EXPECT_EQ(got, truth);
    EXPECT_EQ(n_bad, 0) << "a verify batch held a token the grammar rejects";
    EXPECT_GT(n_verified, 0);
    EXPECT_GT(spec.stats().n_grammar_cut, 20);
    EXPECT_GT(spec.stats().draft_n_accepted(), 10);
}

}  // namespace bee::test
