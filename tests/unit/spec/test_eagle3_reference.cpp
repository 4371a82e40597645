// tests/unit/spec/test_eagle3_reference: the EAGLE-3 head's forward against the float64 numpy reference
// of tests/reference/eagle3_reference.py (heads in llama.cpp's layout, written into the build tree at test
// time): features -> fc, a prompt's rows, then one draft step fed the head's own
// output; whole batches, row by row, and after a KV cut.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "gguf/gguf.h"
#include "hidden_drafter_test_util.h"
#include "spec/eagle3/eagle3_head.h"

namespace bee::test {
namespace {

// Written by tests/reference/eagle3_reference.py into the build tree (ctest's eagle3_reference_data runs it first).
const std::string kDir = std::string(BEE_EAGLE3_DATA) + "/";

struct RefCase {
    GgufFile io;
    DrafterTarget target;
    std::unique_ptr<Eagle3Head> head;
    template <class T>
    std::vector<T> tensor(const char* name) const {
        return tensor_values<T>(io, name);
    }
};

RefCase load_case(const std::string& name) {
    if (access((kDir + name + ".io.gguf").c_str(), R_OK) != 0)
        ADD_FAILURE() << kDir << name << ".io.gguf is missing: run `python3 tests/reference/eagle3_reference.py --out "
                      << kDir << "` (ctest runs it before test_spec)";
    RefCase c{GgufFile::open(kDir + name + ".io.gguf"), {}, nullptr};
    c.target.name = "reference target";
    c.target.n_layer = (int)c.io.get_int("ref.target_n_layer");
    c.target.n_vocab = (int)c.io.get_int("ref.target_n_vocab");
    c.target.n_embd = (int)(c.io.find_tensor("features")->ne[0] / 3);
    c.head = Eagle3Head::load(kDir + name + ".head.gguf", c.target);
    return c;
}

// max |a - b| relative to max |b| (logits span tens; hidden states a few units).
double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
    double d = 0, m = 1e-6;
    for (size_t i = 0; i < b.size(); i++) {
        d = std::max(d, (double)std::fabs(a[i] - b[i]));
        m = std::max(m, (double)std::fabs(b[i]));
    }
    return d / m;
}

int argmax(const float* x, int n) { return (int)(std::max_element(x, x + n) - x); }

class Eagle3Reference : public ::testing::TestWithParam<std::string> {};

TEST_P(Eagle3Reference, MatchesNumpyForward) {
    const RefCase c = load_case(GetParam());
    const Eagle3HParams& hp = c.head->hparams();
    ThreadPool pool(2);
    const std::vector<float> feats = c.tensor<float>("features");
    const std::vector<int32_t> tokens = c.tensor<int32_t>("tokens");
    const int n = (int)tokens.size(), e = hp.n_embd, nd = hp.n_draft_vocab;

    std::vector<float> g((size_t)n * e);
    c.head->encode(pool, feats.data(), n, g.data());
    EXPECT_LT(rel_err(g, c.tensor<float>("g")), 1e-5);

    // The prompt's rows in one batch, then the draft step at position n fed the last row's output.
    std::vector<int32_t> pos(n);
    for (int i = 0; i < n; i++) pos[i] = i;
    Eagle3Kv kv;
    std::vector<float> hidden((size_t)n * e), logits((size_t)n * nd);
    c.head->decode(pool, kv, {n, tokens.data(), pos.data(), g.data()}, hidden.data(), logits.data());
    EXPECT_LT(rel_err(hidden, c.tensor<float>("hidden_a")), 1e-5);
    EXPECT_LT(rel_err(logits, c.tensor<float>("logits_a")), 1e-5);

    const int32_t token_b = c.head->target_id(argmax(logits.data() + (size_t)(n - 1) * nd, nd));
    EXPECT_EQ(token_b, c.tensor<int32_t>("token_b")[0]);
    const std::vector<float> g_b(hidden.end() - e, hidden.end());
    std::vector<float> hidden_b(e), logits_b(nd);
    const int32_t pos_b = n;
    c.head->decode(pool, kv, {1, &token_b, &pos_b, g_b.data()}, hidden_b.data(), logits_b.data());
    EXPECT_LT(rel_err(hidden_b, c.tensor<float>("hidden_b")), 1e-5);
    EXPECT_LT(rel_err(logits_b, c.tensor<float>("logits_b")), 1e-5);

    // Cut the draft row and decode the prompt's rows one at a time into a fresh KV: the same bits.
    kv.cut(n);
    EXPECT_EQ(kv.n_cells(), n);
    Eagle3Kv kv1;
    for (int i = 0; i < n; i++) {
        std::vector<float> h1(e), l1(nd);
        c.head->decode(pool, kv1, {1, &tokens[i], &pos[i], g.data() + (size_t)i * e}, h1.data(), l1.data());
        EXPECT_TRUE(std::equal(h1.begin(), h1.end(), hidden.begin() + (size_t)i * e)) << "row " << i;
        EXPECT_TRUE(std::equal(l1.begin(), l1.end(), logits.begin() + (size_t)i * nd)) << "row " << i;
    }
    EXPECT_EQ(kv1.k, kv.k);
    EXPECT_EQ(kv1.v, kv.v);
}

TEST_P(Eagle3Reference, ScatterThroughD2t) {
    const RefCase c = load_case(GetParam());
    const int nd = c.head->hparams().n_draft_vocab, nv = c.target.n_vocab;
    std::vector<float> draft(nd), full(nv);
    for (int i = 0; i < nd; i++) draft[i] = (float)i;
    c.head->scatter_logits(draft.data(), full.data(), nv);
    int finite = 0;
    for (int t = 0; t < nv; t++) finite += std::isfinite(full[t]);
    EXPECT_EQ(finite, nd);
    for (int i = 0; i < nd; i++) EXPECT_EQ(full[c.head->target_id(i)], (float)i);
    EXPECT_EQ(argmax(full.data(), nv), c.head->target_id(nd - 1));
}

TEST(Eagle3Reference, RefusesRowsBehindTheKv) {
    const RefCase c = load_case("a");
    ThreadPool pool(1);
    const int e = c.head->hparams().n_embd;
    std::vector<float> g(e, 0.5f), h(e);
    const int32_t tok = 3, p5 = 5, p4 = 4;
    Eagle3Kv kv;
    c.head->decode(pool, kv, {1, &tok, &p5, g.data()}, h.data(), nullptr);
    try {
        c.head->decode(pool, kv, {1, &tok, &p4, g.data()}, h.data(), nullptr);
        FAIL() << "a row at position 4 after 5 must be refused";
    } catch (const Error& err) {
        EXPECT_NE(std::string(err.what()).find("does not follow position 5"), std::string::npos) << err.what();
    }
    EXPECT_EQ(kv.n_cells(), 1);
}

INSTANTIATE_TEST_SUITE_P(Cases, Eagle3Reference, ::testing::Values("a", "b"));

}  // namespace
}  // namespace bee::test
