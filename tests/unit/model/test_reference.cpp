// tests/unit/model/test_reference: Engine logits of every tiny architecture vs the float64 reference forward.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine_test_util.h"
#include "ref_forward.h"
#include "tiny_model.h"

namespace bee::test {
namespace {

constexpr int kPrompt = 12;  // prefill rows, all wanting logits
constexpr int kSteps = 4;    // then single-token decode steps

struct RefCase {
    const char* preset;
    GgmlType kv;
    // Bound: max |engine - reference| <= rel * max|reference logit| + abs.
    double rel, abs;
};

// Bounds, from what each path rounds:
// - F32 weights, F32 KV: only float32 accumulation (dot products of <= 96 terms, ~1e-7 relative each)
//   through a few layers; measured <= 4e-7 relative, bound 2e-5 relative (50x margin).
// - F16 KV: K and V rounded to half (relative 2^-11 = 4.9e-4 per element); attention averages those
//   errors and the layers compound them; measured <= 5e-4 relative, bound 5e-3.
// - Q8_0 / Q4_K weights against the pure reference: the weights are exact (the reference uses the
//   dequantized values) but activations are rounded to Q8_0 / Q8_K (step amax/127 per block of 32 /
//   256, up to 0.4% of the block's max per element) before every matmul, which perturbs each product
//   by roughly amax/(440·rms) ~ 0.5%, compounded over 2 layers and the head; measured ~2e-2
//   relative, bound 5e-2 (this bound only catches gross errors: a wrong scale or block layout).
//   A reference that rounds activations the same way agrees to ~2e-7, except where float and double
//   inputs straddle a rounding boundary: each such flip moves later logits by up to ~1e-2 (seen on
//   the scalar path), so that comparison cannot be tight without being fragile and is not made here.
constexpr GgmlType F32 = GgmlType::F32, F16 = GgmlType::F16;
const RefCase kCases[] = {
    {"llama", F32, 2e-5, 1e-5},      {"llama", F16, 5e-3, 1e-4},      {"llama_tied", F32, 2e-5, 1e-5},
    {"qwen2", F32, 2e-5, 1e-5},      {"qwen2", F16, 5e-3, 1e-4},      {"qwen3", F32, 2e-5, 1e-5},
    {"qwen3", F16, 5e-3, 1e-4},      {"gemma3", F32, 2e-5, 1e-5},     {"gemma3", F16, 5e-3, 1e-4},
    {"llama_q8_0", F32, 5e-2, 1e-4}, {"llama_q8_0", F16, 5e-2, 1e-4}, {"llama_q4_k", F32, 5e-2, 1e-4},
};

// Asserts the error bound of rc on logits `got` (rows of nv) and that every row's argmax agrees with
// the reference (unless the reference's top two are too close for the bound to tell apart).
void check_against_reference(const RefCase& rc, Isa isa, const std::vector<float>& got, const std::vector<double>& ref,
                             int nv) {
    double max_ref = 0, max_err = 0;
    size_t worst = 0;
    for (size_t i = 0; i < ref.size(); i++) {
        max_ref = std::max(max_ref, std::fabs(ref[i]));
        const double e = std::fabs(got[i] - ref[i]);
        if (e > max_err) max_err = e, worst = i;
    }
    const double bound = rc.rel * max_ref + rc.abs;
    printf("[ reference ] %-10s %-6s kv %-3s max|logit| %6.3f  max abs err %.2e (%.2e rel)  bound %.2e\n", rc.preset,
           isa_name(isa), ggml_type_name(rc.kv), max_ref, max_err, max_err / max_ref, bound);
    EXPECT_LE(max_err, bound) << "row " << worst / nv << " token " << worst % nv << ": engine " << got[worst]
                              << " reference " << ref[worst];
    int argmax_diff = 0;
    for (size_t r = 0; r < got.size() / nv; r++) {
        const auto row_g = got.begin() + r * nv;
        const auto row_r = ref.begin() + r * nv;
        const size_t ag = std::max_element(row_g, row_g + nv) - row_g;
        const size_t ar = std::max_element(row_r, row_r + nv) - row_r;
        if (ag != ar && std::fabs(ref[r * nv + ag] - ref[r * nv + ar]) > 2 * bound) argmax_diff++;
    }
    EXPECT_EQ(argmax_diff, 0);
}

class ReferenceTest : public ::testing::TestWithParam<RefCase> {};

// Prefill of kPrompt rows then kSteps single-token steps, on every ISA, against one reference.
TEST_P(ReferenceTest, PrefillAndDecodeMatchFloat64Reference) {
    const RefCase& rc = GetParam();
    const TinyModel& tm = tiny_model(rc.preset);
    const int nv = tm.cfg.n_vocab;
    ASSERT_EQ(tm.model->hparams().n_vocab, nv);
    const std::vector<int32_t> toks = tiny_tokens(kPrompt + kSteps, nv, 11);
    std::vector<int32_t> pos(toks.size());
    for (size_t i = 0; i < pos.size(); i++) pos[i] = (int32_t)i;
    const std::vector<double> ref = reference_logits(tm.cfg, tm.w, toks, pos);
    const std::vector<int32_t> prompt(toks.begin(), toks.begin() + kPrompt), rest(toks.begin() + kPrompt, toks.end());
    for (Isa isa : all_isas()) {
        SCOPED_TRACE(isa_name(isa));
        IsaScope scope(isa);
        Engine eng(*tm.model, engine_params(2, 512, 1, rc.kv));
        std::vector<float> got = decode_chunks(eng, prompt, 0, 0, kPrompt);
        const std::vector<float> steps = decode_chunks(eng, rest, kPrompt, 0, 1);
        got.insert(got.end(), steps.begin(), steps.end());
        ASSERT_EQ(got.size(), ref.size());
        check_against_reference(rc, isa, got, ref, nv);
    }
}

std::string case_name(const ::testing::TestParamInfo<RefCase>& info) {
    return std::string(info.param.preset) + "_kv_" + ggml_type_name(info.param.kv);
}

INSTANTIATE_TEST_SUITE_P(TinyModels, ReferenceTest, ::testing::ValuesIn(kCases), case_name);

// The reference must see what the arch claims: sliding-window layers really limit attention (the
// logits of the last row change if the window is ignored), so a swapped mask would not pass unnoticed.
TEST(ReferenceSelfCheck, Gemma3WindowMatters) {
    const TinyModel& tm = tiny_model("gemma3");
    const std::vector<int32_t> toks = tiny_tokens(kPrompt, tm.cfg.n_vocab, 11);
    std::vector<int32_t> pos(toks.size());
    for (size_t i = 0; i < pos.size(); i++) pos[i] = (int32_t)i;
    TinyConfig no_window = tm.cfg;
    no_window.n_swa = 1000;  // same layers, bases and scales; only the window no longer cuts
    const std::vector<double> a = reference_logits(tm.cfg, tm.w, toks, pos);
    const std::vector<double> b = reference_logits(no_window, tm.w, toks, pos);
    double d = 0;
    for (size_t i = 0; i < a.size(); i++) d = std::max(d, std::fabs(a[i] - b[i]));
    EXPECT_GT(d, 1e-2);
}

}  // namespace
}  // namespace bee::test
