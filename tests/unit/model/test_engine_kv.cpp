// tests/unit/model/test_engine_kv: the engine after KV edits — rollback and re-decode, seq_cp branches, position shifts.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine_test_util.h"
#include "ref_forward.h"
#include "tiny_model.h"

namespace bee::test {
namespace {

constexpr int kN = 16;

class EngineKv : public ::testing::TestWithParam<const char*> {
protected:
    void SetUp() override {
        tm_ = &tiny_model(GetParam());
        nv_ = tm_->cfg.n_vocab;
        toks_ = tiny_tokens(kN, nv_, 51);
    }
    std::vector<int32_t> slice(int a, int b) const { return {toks_.begin() + a, toks_.begin() + b}; }
    const TinyModel* tm_ = nullptr;
    int nv_ = 0;
    std::vector<int32_t> toks_;
};

// Rolling back a tail (as a rejected draft is) and decoding the same tokens again is exact.
TEST_P(EngineKv, SeqRmTailThenRedecodeIsBitIdentical) {
    Engine eng(*tm_->model, engine_params(2));
    const std::vector<float> first = decode_chunks(eng, toks_, 0, 0, 4);
    eng.memory().cut(0, 10);
    EXPECT_EQ(eng.kv().n_used(), 10);
    EXPECT_EQ(eng.kv().seq_pos_max(0), 9);
    const std::vector<float> again = decode_chunks(eng, slice(10, kN), 10, 0, 1);
    EXPECT_TRUE(same_bits(again.data(), first.data() + 10 * (size_t)nv_, again.size()));
    // Roll back again, decode different tokens (a new draft), roll back, and the original still matches.
    eng.memory().cut(0, 12);
    decode_chunks(eng, tiny_tokens(3, nv_, 52), 12, 0, 3);
    eng.memory().cut(0, 12);
    const std::vector<float> third = decode_chunks(eng, slice(12, kN), 12, 0, 2);
    EXPECT_TRUE(same_bits(third.data(), first.data() + 12 * (size_t)nv_, third.size()));
}

// A branch made with seq_cp continues exactly as the original sequence would.
TEST_P(EngineKv, SeqCpBranchMatchesOriginal) {
    Engine eng(*tm_->model, engine_params(2, 512, 3));
    const std::vector<float> ref = decode_chunks(eng, toks_, 0, 0, kN);
    eng.memory().cut(0, 8);
    eng.memory().copy(0, 2);
    const int used = eng.kv().n_used();
    const std::vector<float> branch = decode_chunks(eng, slice(8, kN), 8, 2, 3);
    EXPECT_EQ(eng.kv().n_used(), used + kN - 8);
    EXPECT_TRUE(same_bits(branch.data(), ref.data() + 8 * (size_t)nv_, branch.size()));
}

// Positions shifted by seq_shift (K re-rotated by the delta) give the logits of decoding at the new
// positions directly. Rope depends only on relative positions, so the two runs agree in exact
// arithmetic: what differs is float rounding of the rotation (angles of up to ~40 rad, computed in
// float, are off by ~1e-6 rad; rotating twice rounds twice), plus, with an F16 cache, rounding the
// re-rotated K to half a second time (relative 2^-11 per element).
// Measured: <= 4e-7 relative with F32 K, <= 4e-4 with F16 K; bounds 2e-5 and 5e-3 of max|logit|.
struct ShiftCase {
    GgmlType kv;
    double rel;
};

class EngineShift : public ::testing::TestWithParam<std::tuple<const char*, ShiftCase>> {};

TEST_P(EngineShift, ShiftedCacheMatchesDirectDecode) {
    const TinyModel& tm = tiny_model(std::get<0>(GetParam()));
    const ShiftCase sc = std::get<1>(GetParam());
    const int nv = tm.cfg.n_vocab;
    const std::vector<int32_t> toks = tiny_tokens(kN, nv, 53);
    const std::vector<int32_t> prompt(toks.begin(), toks.begin() + 12), rest(toks.begin() + 12, toks.end());
    for (int delta : {+20, -7}) {
        SCOPED_TRACE("delta " + std::to_string(delta));
        const int p0 = delta > 0 ? 0 : -delta;  // prompt starts here, then moves to p0 + delta
        Engine shifted(*tm.model, engine_params(2, 512, 1, sc.kv));
        decode_chunks(shifted, prompt, p0, 0, 12);
        shifted.memory().shift(0, -1, -1, delta);
        EXPECT_EQ(shifted.kv().seq_pos_min(0), p0 + delta);
        EXPECT_EQ(shifted.kv().seq_pos_max(0), p0 + delta + 11);
        const std::vector<float> got = decode_chunks(shifted, rest, p0 + delta + 12, 0, 1);

        Engine direct(*tm.model, engine_params(2, 512, 1, sc.kv));
        decode_chunks(direct, prompt, p0 + delta, 0, 12);
        const std::vector<float> want = decode_chunks(direct, rest, p0 + delta + 12, 0, 1);
        const double err = max_abs_diff(got, want), bound = sc.rel * max_abs(want) + 1e-5;
        printf("[ shift ] %-8s kv %-3s delta %+3d  max abs diff %.2e (%.2e rel)  bound %.2e\n", std::get<0>(GetParam()),
               ggml_type_name(sc.kv), delta, err, err / max_abs(want), bound);
        EXPECT_LE(err, bound);
        EXPECT_GT(err, 0.0);  // it really was re-rotated, not decoded at the old positions by accident

        // And against the float64 reference at the new positions.
        std::vector<int32_t> pos(kN);
        for (int i = 0; i < kN; i++) pos[i] = p0 + delta + i;
        const std::vector<double> ref = reference_logits(tm.cfg, tm.w, toks, pos);
        double rerr = 0;
        for (size_t i = 0; i < got.size(); i++) rerr = std::max(rerr, std::fabs(got[i] - ref[12 * nv + i]));
        EXPECT_LE(rerr, bound + (sc.kv == GgmlType::F16 ? 5e-3 : 2e-5) * max_abs(want));
    }
}

// Shifting a shared cell is refused before anything moves; the engine still decodes afterwards.
TEST(EngineShiftShared, RefusedAndHarmless) {
    const TinyModel& tm = tiny_model("llama");
    Engine eng(*tm.model, engine_params(1, 512, 2));
    const std::vector<int32_t> toks = tiny_tokens(6, tm.cfg.n_vocab, 54);
    decode_chunks(eng, toks, 0, 0, 6);
    eng.memory().copy(0, 1, 0, 3);
    EXPECT_THROW(eng.memory().shift(0, -1, -1, 4), Error);
    EXPECT_EQ(eng.kv().seq_pos_max(0), 5);
    EXPECT_FALSE(eng.kv().has_shifts());
    EXPECT_NO_THROW(decode_chunks(eng, {toks[0]}, 6, 0, 1));
}

INSTANTIATE_TEST_SUITE_P(TinyModels, EngineKv, ::testing::Values("llama", "gemma3"));
INSTANTIATE_TEST_SUITE_P(TinyModels, EngineShift,
                         ::testing::Combine(::testing::Values("llama", "llama_tied", "qwen2", "gemma3"),
                                            ::testing::Values(ShiftCase{GgmlType::F32, 2e-5},
                                                              ShiftCase{GgmlType::F16, 5e-3})));

}  // namespace
}  // namespace bee::test
