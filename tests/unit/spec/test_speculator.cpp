// tests/unit/spec/test_speculator: the Speculator on tiny seeded models — tree commit leaves the cache
// exactly as linear decoding would, greedy speculation with every drafter (and a combination) gives the
// tokens plain decoding gives, the draft model drafts in lock-step and its vocabulary is checked.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "base/error.h"
#include "kv/kv_tree.h"
#include "spec_loop.h"
#include "spec_test_util.h"

namespace bee::test {

namespace {

EngineParams small_engine(int n_ctx = 256) {
    EngineParams ep;
    ep.n_ctx = n_ctx;
    ep.n_ubatch = 64;
    ep.n_threads = 2;
    ep.type_k = ep.type_v = GgmlType::F32;
    return ep;
}

std::vector<float> last_logits(const DecodeOutput& out) {
    return std::vector<float>(out.logits_at((int)out.rows.size() - 1),
                              out.logits_at((int)out.rows.size() - 1) + out.n_vocab);
}

// A prompt that repeats itself, so every drafter finds something to propose.
std::vector<int32_t> repetitive_prompt(int n_vocab) {
    std::vector<int32_t> base = tiny_tokens(14, n_vocab, 5);
    std::vector<int32_t> p{1};
    for (int r = 0; r < 5; r++) p = concat(p, base);
    return p;
}

std::vector<int32_t> generate(const Model& m, const SpecParams* sp, const std::vector<int32_t>& prompt, int n,
                              SpecStats* stats = nullptr, float temp = 0.0f) {
    Engine eng(m, small_engine());
    SamplingParams s;
    s.temp = temp;
    s.seed = 42;
    Sampler sampler(s, m.hparams().n_vocab);
    std::unique_ptr<SpecShared> shared;
    std::unique_ptr<Speculator> spec;
    if (sp) {
        shared = std::make_unique<SpecShared>(*sp, m);
        spec = std::make_unique<Speculator>(*shared);
    }
    GenerateOptions go;
    go.n_predict = n;
    GenerateResult r = generate_tokens(eng, sampler, spec.get(), prompt, go);
    if (stats && spec) *stats = spec->stats();
    // the cache holds exactly prompt + generated tokens but the last (rejected rows were removed)
    EXPECT_EQ(eng.kv().seq_n_cells(0), (int)(prompt.size() + r.tokens.size() - 1));
    EXPECT_EQ(eng.kv().seq_pos_max(0), (int32_t)(prompt.size() + r.tokens.size() - 2));
    return r.tokens;
}

}  // namespace

TEST(KvTree, CommittedPathReadsLikeLinearDecoding) {
    const Model& m = *tiny_model("llama").model;
    const std::vector<int32_t> prompt = tiny_tokens(20, m.hparams().n_vocab, 3);
    const int32_t P = (int32_t)prompt.size();
    // root r at P; children a, b at P+1; c below a and d below b at P+2; then x at P+3 after r a c.
    const int32_t r = 11, a = 12, b = 13, c = 14, d = 15, x = 16;
    DecodeOutput out;
    Engine lin(m, small_engine());
    Batch bl;
    for (int32_t i = 0; i < P; i++) bl.add(prompt[i], i, 0, false);
    for (int32_t t : {r, a, c, x}) bl.add(t, (int32_t)bl.size(), 0, true);
    lin.decode(bl, out);
    const std::vector<float> want = last_logits(out);
    const std::vector<float> want_c(out.logits_at(2), out.logits_at(2) + out.n_vocab);

    Engine eng(m, small_engine());
    Batch bp;
    for (int32_t i = 0; i < P; i++) bp.add(prompt[i], i, 0, false);
    eng.decode(bp, out);
    Batch tree;  // rows: r a b c d
    tree.add(r, P, 0, true);
    tree.add(a, P + 1, 0, true);
    tree.add(b, P + 1, 0, true);
    tree.add(c, P + 2, 0, true);
    tree.add(d, P + 2, 0, true);
    tree.parent = {-1, 0, 0, 1, 2};
    eng.decode(tree, out);
    EXPECT_EQ(0, memcmp(out.logits_at(3), want_c.data(), want_c.size() * sizeof(float)));
    eng.memory().prune_rows(0, P, {1, 1, 0, 1, 0});
    EXPECT_EQ(eng.kv().seq_n_cells(0), P + 3);
    Batch next;
    next.add(x, P + 3, 0, true);
    eng.decode(next, out);
    EXPECT_EQ(0, memcmp(out.logits_at(0), want.data(), want.size() * sizeof(float)))
        << "logits after a committed tree path differ from linear decoding";
    EXPECT_THROW(eng.memory().prune_rows(0, P, {1, 1}), Error);  // stale commit: clear error
}

TEST(Speculator, GreedyOutputEqualsPlainDecodingForEveryDrafter) {
    const TinyModel& tm = tiny_model("llama");
    const Model& m = *tm.model;
    const std::vector<int32_t> prompt = repetitive_prompt(m.hparams().n_vocab);
    const std::vector<int32_t> plain = generate(m, nullptr, prompt, 96);
    ASSERT_EQ(plain.size(), 96u);
    const std::string draft_path = temp_path("draft");
    write_tiny_model(tm.cfg, draft_path);  // the same weights as the target: every greedy draft is right
    for (const char* types : {"ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache", "copyspec",
                              "recycle", "suffix", "draft", "ngram-simple,suffix,recycle"}) {
        for (bool adaptive : {false, true}) {
            SpecParams sp;
            sp.types = parse_spec_types(types);
            sp.depth.adaptive = adaptive;
            sp.ngram_simple = sp.ngram_map_k = sp.ngram_map_k4v = {3, 8, 1};
            sp.ngram_mod_n_match = 4;
            sp.ngram_mod_n_min = 1;
            sp.draft_n_max = 6;
            sp.draft_model = draft_path;
            sp.draft_n_ctx = 256;
            SpecStats st;
            EXPECT_EQ(generate(m, &sp, prompt, 96, &st), plain) << types << (adaptive ? " adaptive" : " fixed");
            if (!adaptive) {
                EXPECT_GT(st.draft_n(), 0) << types << ": nothing was ever drafted";
            }
            if (!adaptive && std::string(types) == "draft") {
                EXPECT_EQ(st.draft_n_accepted(), st.draft_n()) << "an identical draft model is always right";
            }
        }
    }
    remove(draft_path.c_str());
}

TEST(Speculator, SampledDraftModelRunsAndStaysConsistent) {
    const TinyModel& tm = tiny_model("llama");
    const std::string draft_path = temp_path("draft_s");
    write_tiny_model(tm.cfg, draft_path);
    SpecParams sp;
    sp.types = {"draft"};
    sp.draft_model = draft_path;
    sp.draft_n_ctx = 256;
    sp.draft_temp_auto = true;
    sp.depth.adaptive = false;
    SpecStats st;
    const std::vector<int32_t> out = generate(*tm.model, &sp, repetitive_prompt(300), 64, &st, 0.8f);
    EXPECT_EQ(out.size(), 64u);
    EXPECT_GT(st.draft_n_accepted(), st.draft_n() / 2) << "same model sampling at the same temperature";
    remove(draft_path.c_str());
}

TEST(Speculator, DraftModelWithAnotherVocabularyIsRefused) {
    const TinyModel& tm = tiny_model("llama");
    TinyConfig other = tm.cfg;
    other.n_vocab = 320;
    const std::string path = temp_path("draft_vocab");
    write_tiny_model(other, path);
    SpecParams sp;
    sp.types = {"draft"};
    sp.draft_model = path;
    try {
        SpecShared shared(sp, *tm.model);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("vocabulary"), std::string::npos) << e.what();
    }
    sp.draft_model.clear();
    EXPECT_THROW(SpecShared(sp, *tm.model), Error);  // draft without -md
    remove(path.c_str());
}

}  // namespace bee::test
