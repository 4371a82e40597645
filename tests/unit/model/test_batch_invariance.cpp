// tests/unit/model/test_batch_invariance: DESIGN.md invariant 2 — a row's logits are bit-identical however it is batched.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine_test_util.h"
#include "tiny_model.h"

namespace bee::test {
namespace {

constexpr int kN = 16;  // tokens of the sequence under test

struct InvCase {
    const char* preset;
    Isa isa;
};

std::vector<InvCase> inv_cases() {
    std::vector<InvCase> v;
    for (const char* p : {"llama", "gemma3", "llama_q8_0", "llama_q4_k"})
        for (Isa isa : all_isas()) v.push_back({p, isa});
    return v;
}

class BatchInvariance : public ::testing::TestWithParam<InvCase> {
protected:
    void SetUp() override {
        scope_ = std::make_unique<IsaScope>(GetParam().isa);
        tm_ = &tiny_model(GetParam().preset);
        nv_ = tm_->cfg.n_vocab;
        toks_ = tiny_tokens(kN, nv_, 21);
        base_ = token_by_token(toks_);
    }
    // Logits of `toks` decoded one token per call, 1 thread, one sequence: the baseline.
    std::vector<float> token_by_token(const std::vector<int32_t>& toks, GgmlType kv = GgmlType::F16) {
        Engine eng(*tm_->model, engine_params(1, 512, 1, kv));
        return decode_chunks(eng, toks, 0, 0, 1);
    }
    const float* base_row(int i) const { return base_.data() + (size_t)i * nv_; }

    std::unique_ptr<IsaScope> scope_;
    const TinyModel* tm_ = nullptr;
    int nv_ = 0;
    std::vector<int32_t> toks_;
    std::vector<float> base_;  // (kN, n_vocab)
};

// (b) the whole sequence as one prefill batch; also with an F32 cache against its own baseline.
TEST_P(BatchInvariance, OnePrefillBatch) {
    Engine eng(*tm_->model, engine_params(1));
    EXPECT_TRUE(same_bits(decode_chunks(eng, toks_, 0, 0, kN), base_));
    Engine eng32(*tm_->model, engine_params(1, 512, 1, GgmlType::F32));
    EXPECT_TRUE(same_bits(decode_chunks(eng32, toks_, 0, 0, kN), token_by_token(toks_, GgmlType::F32)));
}

// (c) one batch split by the engine into ubatches of 3, 5 or 512 rows, and decode calls of several sizes.
TEST_P(BatchInvariance, UbatchSizesAndPrefillChunks) {
    for (int ub : {3, 5, 512}) {
        SCOPED_TRACE("n_ubatch " + std::to_string(ub));
        Engine eng(*tm_->model, engine_params(1, ub));
        EXPECT_TRUE(same_bits(decode_chunks(eng, toks_, 0, 0, kN), base_));
    }
    for (int chunk : {3, 5, 7}) {
        SCOPED_TRACE("chunk " + std::to_string(chunk));
        Engine eng(*tm_->model, engine_params(1, 4));
        EXPECT_TRUE(same_bits(decode_chunks(eng, toks_, 0, 0, chunk), base_));
    }
}

// (d) rows of sequence 0 interleaved with rows of three other sequences with other histories (one of
// them sharing cells with another through seq_cp), some of which ask for no logits.
TEST_P(BatchInvariance, OtherSequencesInTheBatch) {
    Engine eng(*tm_->model, engine_params(2, 6, 4));
    std::vector<std::vector<int32_t>> other = {{},
                                               tiny_tokens(40, nv_, 31),
                                               tiny_tokens(40, nv_, 32),
                                               tiny_tokens(40, nv_, 33)};
    std::vector<int32_t> next_pos = {0, 0, 0, 0};
    Batch b;
    DecodeOutput out;
    for (int i = 0; i < 7; i++) {  // histories: seq 1 seven tokens, seq 2 three
        b.add(other[1][i], next_pos[1]++, 1, false);
        if (i < 3) b.add(other[2][i], next_pos[2]++, 2, i == 2);
    }
    eng.decode(b, out);
    eng.memory().copy(1, 3);  // seq 3 starts from seq 1's cells, then diverges
    next_pos[3] = next_pos[1];
    int t = 0;
    for (int chunk : {4, 1, 3, 5, 2, 1}) {
        b.clear();
        std::vector<int> target_rows;
        for (int i = 0; i < chunk; i++, t++) {
            const int s = 1 + (t % 3);
            b.add(other[s][next_pos[s] + 7], next_pos[s], s, t % 2 == 0);
            next_pos[s]++;
            target_rows.push_back(b.size());
            b.add(toks_[t], t, 0, true);
            if (t % 4 == 1) b.add(other[3][next_pos[3]], next_pos[3], 3, true), next_pos[3]++;
        }
        eng.decode(b, out);
        int n_want = 0;
        for (uint8_t w : b.logits) n_want += w;
        ASSERT_EQ((int)out.rows.size(), n_want);  // only the rows that asked, in batch order
        EXPECT_TRUE(std::is_sorted(out.rows.begin(), out.rows.end()));
        for (size_t i = 0; i < target_rows.size(); i++) {
            const int row = t - chunk + (int)i;
            const float* got = out.logits_for_row(target_rows[i]);
            ASSERT_NE(got, nullptr);
            EXPECT_TRUE(same_bits(got, base_row(row), nv_)) << "sequence 0 row " << row;
        }
    }
    ASSERT_EQ(t, kN);
}

// (e) a tree verify batch: the rows on the accepted path match the linear decode, and rows on the
// other branches match a linear decode of their own branch.
TEST_P(BatchInvariance, TreeVerifyMatchesLinearDecode) {
    Engine eng(*tm_->model, engine_params(2, 512, 2));
    const std::vector<int32_t> prompt(toks_.begin(), toks_.begin() + 12);
    const std::vector<float> pre = decode_chunks(eng, prompt, 0, 0, 12);
    EXPECT_TRUE(same_bits(pre.data(), base_.data(), pre.size()));
    // Sequence 1 holds another history, and has a chain of its own in the same tree batch.
    const std::vector<int32_t> other = tiny_tokens(8, nv_, 41);
    decode_chunks(eng, std::vector<int32_t>(other.begin(), other.begin() + 5), 0, 1, 5);

    const std::vector<int32_t> alt = tiny_tokens(3, nv_, 42);  // tokens of the rejected branches
    Batch b;
    //       row: 0          1         2          3          4          5          6
    // token:     t12        alt0      t13        alt1       t14        alt2       t15
    // parent:    -1         0         0          1          2          4          4
    const int32_t tok[] = {toks_[12], alt[0], toks_[13], alt[1], toks_[14], alt[2], toks_[15]};
    const int32_t par[] = {-1, 0, 0, 1, 2, 4, 4};
    const int32_t pos[] = {12, 13, 13, 14, 14, 15, 15};
    // Batch rows: tree rows 0-2, then sequence 1's chain (rows 3, 4), then tree rows 3-6.
    auto row_of = [](int r) { return r <= 2 ? r : r + 2; };
    for (int r = 0; r < 7; r++) {
        b.add(tok[r], pos[r], 0, true);
        b.parent.push_back(par[r] < 0 ? -1 : row_of(par[r]));
        if (r == 2) {
            b.add(other[5], 5, 1, true);
            b.parent.push_back(-1);
            b.add(other[6], 6, 1, true);
            b.parent.push_back(3);
        }
    }
    DecodeOutput out;
    eng.decode(b, out);
    const int path[] = {0, 2, 4, 6};
    for (int k = 0; k < 4; k++)
        EXPECT_TRUE(same_bits(out.logits_for_row(row_of(path[k])), base_row(12 + k), nv_)) << "path row " << k;

    std::vector<int32_t> branch_b(toks_.begin(), toks_.begin() + 13);  // t0..t12 alt0 alt1
    branch_b.push_back(alt[0]);
    branch_b.push_back(alt[1]);
    const std::vector<float> lin_b = token_by_token(branch_b);
    EXPECT_TRUE(same_bits(out.logits_for_row(row_of(1)), lin_b.data() + 13 * (size_t)nv_, nv_));
    EXPECT_TRUE(same_bits(out.logits_for_row(row_of(3)), lin_b.data() + 14 * (size_t)nv_, nv_));
    std::vector<int32_t> branch_c(toks_.begin(), toks_.begin() + 15);  // t0..t14 alt2
    branch_c.push_back(alt[2]);
    const std::vector<float> lin_c = token_by_token(branch_c);
    EXPECT_TRUE(same_bits(out.logits_for_row(row_of(5)), lin_c.data() + 15 * (size_t)nv_, nv_));

    const std::vector<float> lin_o = token_by_token(std::vector<int32_t>(other.begin(), other.begin() + 7));
    EXPECT_TRUE(same_bits(out.logits_for_row(3), lin_o.data() + 5 * (size_t)nv_, nv_));
    EXPECT_TRUE(same_bits(out.logits_for_row(4), lin_o.data() + 6 * (size_t)nv_, nv_));
}

// (f) one thread vs two threads, token by token and in ubatches; and 17 threads (more than this machine's
// cores, an odd count: correctness on many-core machines, where the work splits differently).
TEST_P(BatchInvariance, ThreadCount) {
    Engine eng(*tm_->model, engine_params(2));
    EXPECT_TRUE(same_bits(decode_chunks(eng, toks_, 0, 0, 1), base_));
    Engine eng5(*tm_->model, engine_params(2, 5));
    EXPECT_TRUE(same_bits(decode_chunks(eng5, toks_, 0, 0, kN), base_));
    Engine eng17(*tm_->model, engine_params(17, 5));
    EXPECT_TRUE(same_bits(decode_chunks(eng17, toks_, 0, 0, kN), base_));
}

std::string inv_name(const ::testing::TestParamInfo<InvCase>& info) {
    return std::string(info.param.preset) + "_" + isa_name(info.param.isa);
}

INSTANTIATE_TEST_SUITE_P(TinyModels, BatchInvariance, ::testing::ValuesIn(inv_cases()), inv_name);

}  // namespace
}  // namespace bee::test
