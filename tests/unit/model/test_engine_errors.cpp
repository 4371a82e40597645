// tests/unit/model/test_engine_errors: Engine refuses bad batches and parameters with a clear Error, cache untouched.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine_test_util.h"
#include "tiny_model.h"

namespace bee::test {
namespace {

// An engine with a history in sequence 0 (positions 0..5) and sequence 1 (0..2), 2 sequences, 12 cells.
class EngineErrors : public ::testing::Test {
protected:
    void SetUp() override {
        tm_ = &tiny_model("llama");
        nv_ = tm_->cfg.n_vocab;
        eng_ = make_engine();
    }
    std::unique_ptr<Engine> make_engine() const {
        auto e = std::make_unique<Engine>(*tm_->model, engine_params(2, 4, 2, GgmlType::F16, 12));
        decode_chunks(*e, tiny_tokens(6, nv_, 61), 0, 0, 6);
        decode_chunks(*e, tiny_tokens(3, nv_, 62), 0, 1, 3);
        return e;
    }
    // decode(b) must throw Error whose message contains `what`, and leave the cache as it was: the
    // same cells in use and the next decode bit-identical to an engine that never saw the bad batch.
    void expect_refused(const Batch& b, const std::string& what) {
        const int used = eng_->kv().n_used();
        DecodeOutput out;
        try {
            eng_->decode(b, out);
            ADD_FAILURE() << "expected Error containing '" << what << "'";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
        }
        EXPECT_EQ(eng_->kv().n_used(), used);
        EXPECT_EQ(eng_->kv().seq_pos_max(0), 5);
        EXPECT_EQ(eng_->kv().seq_pos_max(1), 2);
        std::unique_ptr<Engine> fresh = make_engine();
        const std::vector<int32_t> next = {7};
        EXPECT_TRUE(same_bits(decode_chunks(*eng_, next, 6, 0, 1), decode_chunks(*fresh, next, 6, 0, 1)));
        eng_->memory().cut(0, 6);
    }
    Batch one(int32_t tok, int32_t pos, int32_t seq) const {
        Batch b;
        b.add(tok, pos, seq, true);
        return b;
    }

    const TinyModel* tm_ = nullptr;
    int nv_ = 0;
    std::unique_ptr<Engine> eng_;
};

TEST_F(EngineErrors, TokenOutOfRange) {
    expect_refused(one(nv_, 6, 0), "token id 300 is out of range [0, 300)");
    expect_refused(one(-1, 6, 0), "token id -1 is out of range");
    Batch b = one(5, 6, 0);
    b.add(nv_ + 7, 7, 0, true);  // a bad row after a good one: nothing of the good row stays either
    expect_refused(b, "batch row 1: token id 307");
}

TEST_F(EngineErrors, SequenceIdOutOfRange) {
    expect_refused(one(5, 0, 2), "sequence id 2 is out of range [0, 2)");
    expect_refused(one(5, 0, -1), "sequence id -1");
    expect_refused(one(5, 0, kMaxSequences), "sequence id 64");
}

TEST_F(EngineErrors, PositionNotAfterCachedPositions) {
    expect_refused(one(5, 5, 0), "position 5 of sequence 0 is not after its previous position 5");
    expect_refused(one(5, 0, 1), "position 0 of sequence 1 is not after its previous position 2");
    Batch b = one(5, 6, 0);
    b.add(6, 6, 0, true);  // repeated inside the batch
    expect_refused(b, "batch row 1: position 6 of sequence 0 is not after its previous position 6");
    expect_refused(one(5, -3, 0), "negative position -3");
}

TEST_F(EngineErrors, TreeParentPointingForward) {
    Batch b;
    b.add(5, 6, 0, true);
    b.add(6, 7, 0, true);
    b.parent = {1, 0};
    expect_refused(b, "batch row 0: parent 1 must be -1 or an earlier row");
    b.parent = {-1, 1};  // itself
    expect_refused(b, "batch row 1: parent 1 must be -1 or an earlier row");
    b.parent = {-1, -5};
    expect_refused(b, "parent -5");
}

TEST_F(EngineErrors, TreeRowsInconsistent) {
    Batch b;
    b.add(5, 6, 0, true);
    b.add(6, 8, 0, true);  // child must sit at parent position + 1
    b.parent = {-1, 0};
    expect_refused(b, "tree position 8, expected 7");
    b.clear();
    b.add(5, 6, 0, true);
    b.add(6, 3, 1, true);  // parent in another sequence
    b.parent = {-1, 0};
    expect_refused(b, "parent row 0 is in another sequence");
    b.clear();
    for (int i = 0; i < 5; i++) {  // 5 rows > n_ubatch 4: a tree cannot be split
        b.add(5, 6 + i, 0, true);
        b.parent.push_back(i - 1);
    }
    expect_refused(b, "tree batch of 5 rows is larger than n_ubatch 4");
}

TEST_F(EngineErrors, CacheFull) {
    Batch b;
    for (int i = 0; i < 4; i++) b.add(5, 6 + i, 0, true);  // 9 used + 4 > 12 cells
    expect_refused(b, "KV cache is full: the batch needs 4 cells, 3 of 12 are free");
}

TEST_F(EngineErrors, MalformedBatch) {
    expect_refused(Batch{}, "empty batch");
    Batch b = one(5, 6, 0);
    b.pos.push_back(7);
    expect_refused(b, "different lengths");
    b = one(5, 6, 0);
    b.parent = {-1, -1};
    expect_refused(b, "different lengths");
}

TEST(EngineParamsErrors, RefusedAtConstruction) {
    const Model& m = *tiny_model("llama").model;
    auto expect_refused = [&](std::function<void(EngineParams&)> edit, const std::string& what) {
        EngineParams p = engine_params(1);
        edit(p);
        try {
            Engine e(m, p);
            ADD_FAILURE() << "expected Error containing '" << what << "'";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
        }
    };
    expect_refused([](EngineParams& p) { p.n_ubatch = 0; }, "n_ubatch");
    expect_refused([](EngineParams& p) { p.n_seq_max = 0; }, "number of sequences");
    expect_refused([](EngineParams& p) { p.n_seq_max = kMaxSequences + 1; }, "number of sequences");
    expect_refused([](EngineParams& p) { p.type_k = GgmlType::Q4_K; }, "K type q4_k");
    expect_refused([](EngineParams& p) { p.type_v = GgmlType::Q6_K; }, "V type q6_k");
}

}  // namespace
}  // namespace bee::test
