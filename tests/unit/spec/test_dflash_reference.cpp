// tests/unit/spec/test_dflash_reference: the DFlash drafter's forward against the float64 numpy reference of
// tests/reference/dflash_reference.py (drafters in both GGUF dialects, written into the build tree at test
// time): context K/V from the target's features, a block after the context and one after a cut, alone and
// together in one pass, bit-identical however the context was added or trimmed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "gguf/gguf.h"
#include "model/forward.h"
#include "spec/dflash/dflash_model.h"

namespace bee::test {
namespace {

// Written by tests/reference/dflash_reference.py into the build tree (ctest's dflash_reference_data runs it first).
const std::string kDir = std::string(BEE_DFLASH_DATA) + "/";

struct RefCase {
    GgufFile io;
    DflashTarget target;
    std::unique_ptr<DflashModel> drafter;
    template <class T>
    std::vector<T> tensor(const char* name) const {
        const GgufTensor* t = io.find_tensor(name);
        EXPECT_NE(t, nullptr) << name;
        if (!t) return {};
        const T* p = (const T*)t->data;
        return std::vector<T>(p, p + t->n_elements());
    }
    DflashBlock block(const char* name, const DflashContext& ctx) const {
        const std::vector<int32_t> b = tensor<int32_t>(name);  // last token, position, n_draft
        return {&ctx, b[0], b[1], b[2]};
    }
};

RefCase load_case(const std::string& name) {
    if (access((kDir + name + ".io.gguf").c_str(), R_OK) != 0)
        ADD_FAILURE() << kDir << name << ".io.gguf is missing: run `python3 tests/reference/dflash_reference.py --out "
                      << kDir << "` (ctest runs it before test_spec)";
    RefCase c{GgufFile::open(kDir + name + ".io.gguf"), {}, nullptr};
    const GgufTensor* embd = c.io.find_tensor("target.token_embd");
    c.target.name = "reference target";
    c.target.n_layer = (int)c.io.get_int("ref.target_n_layer");
    c.target.n_vocab = (int)c.io.get_int("ref.target_n_vocab");
    c.target.n_embd = (int)embd->ne[0];
    c.target.tok_embd = bind_weight(c.io, "target.token_embd", c.target.n_embd, c.target.n_vocab);
    c.target.output = bind_weight(c.io, "target.output", c.target.n_embd, c.target.n_vocab);
    c.drafter = DflashModel::load(kDir + name + ".drafter.gguf", c.target);
    return c;
}

// max |a - b| relative to max |b| (logits span tens).
double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
    EXPECT_EQ(a.size(), b.size());
    double d = 0, m = 1e-6;
    for (size_t i = 0; i < b.size() && i < a.size(); i++) {
        d = std::max(d, (double)std::fabs(a[i] - b[i]));
        m = std::max(m, (double)std::fabs(b[i]));
    }
    return d / m;
}

std::vector<float> draft(const RefCase& c, ThreadPool& pool, std::vector<DflashBlock> blocks, int cross_ctx) {
    int rows = 0;
    for (const DflashBlock& b : blocks) rows += b.n_draft;
    std::vector<float> logits((size_t)rows * c.drafter->hparams().n_draft_vocab);
    c.drafter->draft(pool, blocks.data(), (int)blocks.size(), cross_ctx, logits.data());
    return logits;
}

class DflashReference : public ::testing::TestWithParam<std::string> {};

TEST_P(DflashReference, LoadsTheDialect) {
    const RefCase c = load_case(GetParam());
    const DflashHParams& hp = c.drafter->hparams();
    EXPECT_EQ(hp.dialect, GetParam() == "fork" ? DflashDialect::fork : DflashDialect::llama_cpp);
    EXPECT_EQ(hp.mask_token, (int32_t)c.io.get_int("ref.mask"));
    EXPECT_EQ(hp.block_size, (int)c.io.get_int("ref.block_size"));
    const std::vector<int64_t> layers = c.io.get_int_array("ref.bee_layers");
    EXPECT_EQ(hp.target_layers, std::vector<int32_t>(layers.begin(), layers.end()));
    if (const GgufTensor* t = c.io.find_tensor("d2t")) {
        ASSERT_EQ(c.drafter->d2t().size(), (size_t)t->ne[0]);
        for (int i = 0; i < (int)t->ne[0]; i++) EXPECT_EQ(c.drafter->target_id(i), ((const int64_t*)t->data)[i]);
    } else {
        EXPECT_TRUE(c.drafter->d2t().empty());
        EXPECT_EQ(c.drafter->weights().tok_embd.data, c.target.tok_embd.data);  // the fork case shares them
        EXPECT_EQ(c.drafter->weights().output.data, c.target.output.data);
    }
}

TEST_P(DflashReference, MatchesNumpyForward) {
    const RefCase c = load_case(GetParam());
    ThreadPool pool(2);
    const int cross_ctx = (int)c.io.get_int("ref.cross_ctx");
    const std::vector<float> feats = c.tensor<float>("features");
    const std::vector<int32_t> pos = c.tensor<int32_t>("ctx_pos");
    const int n = (int)pos.size(), nf = c.drafter->hparams().n_features();

    DflashContext ctx;
    c.drafter->add_context(pool, ctx, feats.data(), pos.data(), n);
    ASSERT_EQ(ctx.n_cells(), n);
    const std::vector<float> a = draft(c, pool, {c.block("block_a", ctx)}, cross_ctx);
    EXPECT_LT(rel_err(a, c.tensor<float>("logits_a")), 1e-5);

    DflashContext cut = ctx;  // a rejected draft: the context rolls back to block B's position
    const DflashBlock bb = c.block("block_b", cut);
    cut.cut(bb.pos);
    EXPECT_EQ(cut.n_cells(), bb.pos);
    const std::vector<float> b = draft(c, pool, {bb}, cross_ctx);
    EXPECT_LT(rel_err(b, c.tensor<float>("logits_b")), 1e-5);

    // Both blocks in one pass: the same bits as alone.
    std::vector<float> ab = draft(c, pool, {c.block("block_a", ctx), bb}, cross_ctx);
    EXPECT_TRUE(std::equal(a.begin(), a.end(), ab.begin()));
    EXPECT_TRUE(std::equal(b.begin(), b.end(), ab.begin() + (long)a.size()));

    // The context added row by row, then trimmed to the window: the same K/V and logits.
    DflashContext rows;
    for (int i = 0; i < n; i++) c.drafter->add_context(pool, rows, feats.data() + (size_t)i * nf, &pos[i], 1);
    EXPECT_EQ(rows.k, ctx.k);
    EXPECT_EQ(rows.v, ctx.v);
    rows.drop_before(n - cross_ctx);
    EXPECT_EQ(rows.n_cells(), std::min(n, cross_ctx));
    EXPECT_EQ(draft(c, pool, {c.block("block_a", rows)}, cross_ctx), a);
}

TEST_P(DflashReference, ScatterThroughD2t) {
    const RefCase c = load_case(GetParam());
    const int nd = c.drafter->hparams().n_draft_vocab, nv = c.target.n_vocab;
    std::vector<float> d(nd), full(nv);
    for (int i = 0; i < nd; i++) d[i] = (float)i;
    c.drafter->scatter_logits(d.data(), full.data(), nv);
    int finite = 0;
    for (float x : full) finite += std::isfinite(x);
    EXPECT_EQ(finite, nd);
    for (int i = 0; i < nd; i++) EXPECT_EQ(full[c.drafter->target_id(i)], (float)i);
}

INSTANTIATE_TEST_SUITE_P(Dialects, DflashReference, ::testing::Values("llama", "fork"));

// The message of the Error `f` throws must hold `want`.
template <class F>
void expect_error(F f, const std::string& want) {
    try {
        f();
        ADD_FAILURE() << "no error; expected one with: " << want;
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
}

TEST(DflashReference, RefusesBadBlocks) {
    const RefCase c = load_case("llama");
    ThreadPool pool(1);
    const std::vector<float> feats = c.tensor<float>("features");
    const std::vector<int32_t> pos = c.tensor<int32_t>("ctx_pos");
    DflashContext ctx;
    c.drafter->add_context(pool, ctx, feats.data(), pos.data(), 3);
    expect_error([&] { c.drafter->add_context(pool, ctx, feats.data(), pos.data(), 1); },
                 "context row 0 at position 0 does not follow position 2");
    EXPECT_EQ(ctx.n_cells(), 3);
    std::vector<float> logits(16 * 40);
    const int bs = c.drafter->hparams().block_size;
    DflashBlock b{&ctx, 5, 3, bs};
    expect_error([&] { c.drafter->draft(pool, &b, 1, 512, logits.data()); }, "drafts 5 tokens: the drafter's block");
    b = {&ctx, 96, 3, 2};
    expect_error([&] { c.drafter->draft(pool, &b, 1, 512, logits.data()); }, "token 96 is out of range");
    b = {&ctx, 5, 2, 2};
    expect_error([&] { c.drafter->draft(pool, &b, 1, 512, logits.data()); },
                 "at position 2 is not after its context (last cell at 2)");
    const RefCase other = load_case("fork");
    DflashContext foreign;
    other.drafter->add_context(pool, foreign, other.tensor<float>("features").data(), pos.data(), 2);
    b = {&foreign, 5, 2, 2};
    expect_error([&] { c.drafter->draft(pool, &b, 1, 512, logits.data()); },
                 "block 0's context was built by another drafter");
}

}  // namespace
}  // namespace bee::test
