// tests/unit/model/test_qwen35: the hybrid qwen35 architecture on its tiny synthetic model: the layout it
// loads, batch invariance, the recurrent state's exact cuts (speculative rollback), its refusals (draft
// trees, position gaps), save/load with recurrent state, checkpoints, and every KV type on the attention layers.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine_test_util.h"
#include "gguf/gguf_override.h"
#include "kv/kv_state.h"
#include "qwen35_test_util.h"
#include "tiny_model.h"

namespace bee::test {
namespace {

std::vector<int32_t> tokens(int n, uint32_t seed) { return tiny_tokens(n, 32000, seed); }

EngineParams q35_params(int n_threads = 2, int n_ubatch = 512, int n_seq = 1) {
    EngineParams p = engine_params(n_threads, n_ubatch, n_seq, GgmlType::F16, 256);
    return p;
}

// Decodes `toks` from position pos0 of seq 0 as one batch; returns the logits of its last row.
std::vector<float> decode_batch(Engine& eng, const std::vector<int32_t>& toks, int32_t pos0) {
    Batch b;
    for (size_t i = 0; i < toks.size(); i++) b.add(toks[i], pos0 + (int32_t)i, 0, i + 1 == toks.size());
    DecodeOutput out;
    eng.decode(b, out);
    return std::vector<float>(out.logits.begin(), out.logits.end());
}

TEST(Qwen35, LoadsTheHybridLayout) {
    const Model* m = qwen35_tiny();
    if (!m) return;
    const HParams& hp = m->hparams();
    EXPECT_EQ(hp.n_layer, 4);  // block_count 5 holds the MTP block
    EXPECT_EQ(hp.n_nextn, 1);
    EXPECT_EQ(hp.n_recurrent_layers(), 3);
    EXPECT_EQ(hp.n_kv_layers(), 1);
    EXPECT_EQ(hp.layers[3].kv_layer, 0);  // full attention every 4th layer
    EXPECT_EQ(hp.layers[2].recurrent_layer, 2);
    EXPECT_EQ(hp.ssm.n_k_heads, 2);
    EXPECT_EQ(hp.ssm.n_v_heads, 4);
    EXPECT_EQ(hp.layers[3].rope.n_rot, 8);
    Engine eng(*m, q35_params());
    EXPECT_EQ(eng.kv().params().n_layer, 1);
    EXPECT_EQ(eng.memory().policy(), CutPolicy::recurrent);  // whatever EngineParams::cut_policy said
    EXPECT_FALSE(eng.memory().can_move(0));
    EXPECT_FALSE(eng.memory().can_prune_rows(0));
    EXPECT_FALSE(eng.memory().can_decode_trees());
}

// Token by token, one batch, chunks of 7 in ubatches of 5 on 2 threads: the same bits (DESIGN.md
// invariant 2 holds through the recurrence too).
TEST(Qwen35, BatchInvariant) {
    const Model* m = qwen35_tiny();
    if (!m) return;
    const std::vector<int32_t> toks = tokens(23, 1);
    for (Isa isa : all_isas()) {
        IsaScope scope(isa);
        Engine one(*m, q35_params(1));
        const std::vector<float> base = decode_chunks(one, toks, 0, 0, 1);
        Engine batch(*m, q35_params(2));
        EXPECT_TRUE(same_bits(decode_chunks(batch, toks, 0, 0, 23), base)) << isa_name(isa);
        Engine chunks(*m, q35_params(2, 5));
        EXPECT_TRUE(same_bits(decode_chunks(chunks, toks, 0, 0, 7), base)) << isa_name(isa);
    }
}

// Two sequences whose rows interleave in one batch each get their own recurrent state.
TEST(Qwen35, SequencesInOneBatchKeepTheirOwnState) {
    const Model* m = qwen35_tiny();
    if (!m) return;
    const std::vector<int32_t> a = tokens(9, 2), b = tokens(9, 3);
    Engine solo(*m, q35_params());
    const std::vector<float> la = decode_chunks(solo, a, 0, 0, 9);
    solo.memory().clear(0);
    const std::vector<float> lb = decode_chunks(solo, b, 0, 0, 9);
    Engine both(*m, q35_params(2, 512, 2));
    Batch batch;
    for (int i = 0; i < 9; i++) {
        batch.add(a[i], i, 0, true);
        batch.add(b[i], i, 1, true);
    }
    DecodeOutput out;
    both.decode(batch, out);
    const size_t nv = (size_t)out.n_vocab;
    for (int i = 0; i < 9; i++) {
        EXPECT_TRUE(same_bits(out.logits_for_row(2 * i), la.data() + i * nv, nv)) << "row " << i;
        EXPECT_TRUE(same_bits(out.logits_for_row(2 * i + 1), lb.data() + i * nv, nv)) << "row " << i;
    }
}

// What the memory holds for sequence 0, byte for byte: KV rows and the recurrent state.
::testing::AssertionResult same_state(const SeqState& a, const SeqState& b) {
    if (a.pos != b.pos) return ::testing::AssertionFailure() << "positions differ";
    if (a.k != b.k || a.v != b.v) return ::testing::AssertionFailure() << "K/V rows differ";
    if (a.recurrent.empty()) return ::testing::AssertionFailure() << "no recurrent state saved";
    return same_bits(a.recurrent, b.recurrent);
}

// Speculative rollback: a verify batch of 6 rows cut back to keep k + 1 of them leaves exactly the state of
// a sequence that never saw the other rows, with no re-decode (the cut point is there), and the next
// tokens' logits are the same bits.
TEST(Qwen35, RollbackIsExact) {
    const Model* m = qwen35_tiny();
    if (!m) return;
    const std::vector<int32_t> prompt = tokens(10, 4), verify = tokens(6, 5), next = tokens(3, 6);
    const int32_t P = (int32_t)prompt.size();
    for (int k = 0; k < 6; k++) {
        SCOPED_TRACE("accepted " + std::to_string(k));
        Engine spec(*m, q35_params());
        decode_batch(spec, prompt, 0);
        decode_batch(spec, verify, P);
        const int32_t keep = P + k + 1;
        ASSERT_EQ(spec.memory().cut_point(0, keep), keep);
        EXPECT_EQ(spec.rewind(0, keep, P, verify), 0);  // a cut, nothing decoded again
        Engine plain(*m, q35_params());
        decode_batch(plain, prompt, 0);
        decode_batch(plain, std::vector<int32_t>(verify.begin(), verify.begin() + k + 1), P);
        EXPECT_TRUE(same_state(spec.memory().save(0), plain.memory().save(0)));
        EXPECT_TRUE(same_bits(decode_chunks(spec, next, keep, 0, 1), decode_chunks(plain, next, keep, 0, 1)));
    }
}

// A batch longer than recurrent_keep keeps cut points on its last rows only; below them the memory says 0
// (the caller re-decodes), and a cut there is exact.
TEST(Qwen35, CutPointsCoverTheLastRowsOfTheLastBatch) {
    const Model* m = qwen35_tiny();
    if (!m) return;
    EngineParams ep = q35_params();
    ep.recurrent_keep = 4;
    const std::vector<int32_t> toks = tokens(12, 7);
    Engine eng(*m, ep);
    decode_batch(eng, toks, 0);
    for (int32_t p = 0; p <= 12; p++) EXPECT_EQ(eng.memory().cut_point(0, p), p < 8 ? 0 : p) << "p " << p;
    decode_batch(eng, {toks[0]}, 12);  // a one-row batch keeps the cut points (still a prefix)
    EXPECT_EQ(eng.memory().cut_point(0, 10), 10);
    EXPECT_EQ(eng.memory().cut_point(0, 13), 13);
    EXPECT_EQ(eng.memory().cut_point(0, 12), 12);
    eng.memory().cut(0, 9);
    Engine ref(*m, ep);
    decode_batch(ref, std::vector<int32_t>(toks.begin(), toks.begin() + 9), 0);
    EXPECT_TRUE(same_state(eng.memory().save(0), ref.memory().save(0)));
    EXPECT_EQ(eng.memory().cut_point(0, 8), 8);  // the rows before the cut stay cuttable
    EXPECT_EQ(eng.rewind(0, 5, 0, toks), 5);     // below the checkpoint: from empty, 5 tokens again
    Engine five(*m, ep);
    decode_chunks(five, std::vector<int32_t>(toks.begin(), toks.begin() + 5), 0, 0, 1);
    EXPECT_TRUE(same_state(eng.memory().save(0), five.memory().save(0)));
}

TEST(Qwen35, RefusesTreesAndPositionGaps) {
    const Model* m = qwen35_tiny();
    if (!m) return;
    Engine eng(*m, q35_params());
    decode_batch(eng, tokens(4, 8), 0);
    const SeqState before = eng.memory().save(0);
    Batch tree;  // root with two children
    tree.add(5, 4, 0, true);
    tree.add(6, 5, 0, true);
    tree.add(7, 5, 0, true);
    tree.parent = {-1, 0, 0};
    DecodeOutput out;
    try {
        eng.decode(tree, out);
        ADD_FAILURE() << "a draft tree was decoded";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("draft tree"), std::string::npos) << e.what();
    }
    Batch chain;  // parents given, but a chain: fine
    chain.add(5, 4, 0, true);
    chain.add(6, 5, 0, true);
    chain.parent = {-1, 0};
    Batch gap;
    gap.add(5, 6, 0, true);
    try {
        eng.decode(gap, out);
        ADD_FAILURE() << "a position gap was decoded";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("without gaps"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(same_state(eng.memory().save(0), before));  // refused batches touch nothing
    eng.decode(chain, out);
    EXPECT_EQ(eng.memory().n_pos(0), 6);
}

// Save / load (RAM prompt cache, slot files) carry the recurrent state: a restored sequence continues with
// the same bits; a state without it (or from another model) is refused.
TEST(Qwen35, SaveAndLoadCarryTheRecurrentState) {
    const Model* m = qwen35_tiny();
    if (!m) return;
    const std::vector<int32_t> prompt = tokens(11, 9), next = tokens(4, 10);
    EngineParams ep = q35_params();
    ep.recurrent_keep = 4;  // cut points 7..11
    Engine a(*m, ep);
    decode_batch(a, prompt, 0);
    const SeqState st = a.memory().save(0);
    EXPECT_EQ((int64_t)st.recurrent.size(), a.memory().recurrent()->seq_floats());
    const std::string path = temp_path("q35_slot") + ".bin";
    seq_file_write(path, SeqFile{"qwen35 tiny", prompt, st});
    size_t n_read = 0;
    const SeqFile f = seq_file_read(path, &n_read);
    EXPECT_TRUE(same_bits(f.state.recurrent, st.recurrent));
    Engine b(*m, q35_params());
    ASSERT_TRUE(b.memory().load(0, f.state));
    EXPECT_TRUE(same_bits(decode_chunks(b, next, 11, 0, 1), decode_chunks(a, next, 11, 0, 1)));
    SeqState no_rs = st;
    no_rs.recurrent.clear();
    Engine c(*m, q35_params());
    EXPECT_THROW(c.memory().load(0, no_rs), Error);
    EXPECT_THROW(a.memory().save(0, 3), Error);  // not a cut point of this sequence
    Engine nine(*m, ep);  // a state saved at a cut point inside the batch: the shorter sequence's
    decode_batch(nine, std::vector<int32_t>(prompt.begin(), prompt.begin() + 9), 0);
    EXPECT_TRUE(same_state(a.memory().save(0, 9), nine.memory().save(0)));
}

// Checkpoints (--ctx-checkpoints): states kept at batch starts every checkpoint_every_n positions make cuts
// below the last batch exact, with nothing decoded again; a cut drops those above it; save / load (the RAM
// prompt cache) carry them; the oldest go beyond the limit, and with 0 there are none.
TEST(Qwen35, CheckpointsMakeEarlierCutsExact) {
    const Model* m = qwen35_tiny();
    if (!m) return;
    const std::vector<int32_t> toks = tokens(40, 11), next = tokens(3, 12);
    EngineParams ep = q35_params();
    ep.recurrent_keep = 4;
    ep.checkpoint_every_n = 8;
    Engine eng(*m, ep);
    decode_chunks(eng, toks, 0, 0, 6);  // batches start at 0, 6, ..., 36: checkpoints at 12, 24, 36
    EXPECT_EQ(eng.memory().checkpoints(0), (std::vector<int32_t>{12, 24, 36}));
    EXPECT_EQ(eng.memory().cut_point(0, 11), 0);
    EXPECT_EQ(eng.memory().cut_point(0, 20), 12);
    EXPECT_EQ(eng.memory().cut_point(0, 30), 24);
    EXPECT_EQ(eng.memory().cut_point(0, 38), 38);  // the last batch's kept rows
    const SeqState saved = eng.memory().save(0);
    EXPECT_EQ(saved.recurrent_cp_pos, (std::vector<int32_t>{12, 24, 36}));

    EXPECT_EQ(eng.rewind(0, 24, 0, toks), 0);  // a cut at the checkpoint, nothing decoded again
    EXPECT_EQ(eng.memory().checkpoints(0), (std::vector<int32_t>{12, 24}));
    Engine ref(*m, q35_params());
    decode_chunks(ref, std::vector<int32_t>(toks.begin(), toks.begin() + 24), 0, 0, 5);
    EXPECT_TRUE(same_state(eng.memory().save(0), ref.memory().save(0)));
    EXPECT_TRUE(same_bits(decode_chunks(eng, next, 24, 0, 1), decode_chunks(ref, next, 24, 0, 1)));

    Engine loaded(*m, ep);  // the saved state brings its checkpoints along
    ASSERT_TRUE(loaded.memory().load(0, saved));
    EXPECT_EQ(loaded.memory().checkpoints(0), (std::vector<int32_t>{12, 24, 36}));
    loaded.memory().cut(0, 12);
    Engine twelve(*m, q35_params());
    decode_chunks(twelve, std::vector<int32_t>(toks.begin(), toks.begin() + 12), 0, 0, 12);
    EXPECT_TRUE(same_state(loaded.memory().save(0), twelve.memory().save(0)));

    // The server's own checkpoint near a prompt end: at a kept row, not too near another one.
    Engine end(*m, ep);
    decode_batch(end, toks, 0);                    // one batch: no periodic checkpoint, rows 36..39 kept
    EXPECT_FALSE(end.memory().checkpoint(0, 20));  // not a cut point
    EXPECT_TRUE(end.memory().checkpoint(0, 37));
    EXPECT_FALSE(end.memory().checkpoint(0, 38));  // within RecurrentState::kCheckpointMinGap of 37
    decode_batch(end, next, 40);                   // the kept rows move on; the checkpoint stays
    EXPECT_EQ(end.memory().cut_point(0, 39), 37);
    end.memory().cut(0, 37);
    Engine ref37(*m, q35_params());
    decode_batch(ref37, std::vector<int32_t>(toks.begin(), toks.begin() + 37), 0);
    EXPECT_TRUE(same_state(end.memory().save(0), ref37.memory().save(0)));

    ep.ctx_checkpoints = 2;  // the oldest go first
    Engine two(*m, ep);
    decode_chunks(two, toks, 0, 0, 6);
    EXPECT_EQ(two.memory().checkpoints(0), (std::vector<int32_t>{24, 36}));
    ep.ctx_checkpoints = 0;
    Engine none(*m, ep);
    decode_chunks(none, toks, 0, 0, 6);
    EXPECT_TRUE(none.memory().checkpoints(0).empty());
    EXPECT_EQ(none.memory().cut_point(0, 30), 0);
}

// checkpoint_ahead: the forward copies the state as it passes the asked row, so a checkpoint there needs
// neither a cut point nor a replay, and equals the state of a sequence that decoded only up to it.
TEST(Qwen35, CheckpointAheadIsCopiedByTheForward) {
    const Model* m = qwen35_tiny();
    if (!m) return;
    const std::vector<int32_t> toks = tokens(20, 13);
    EngineParams ep = q35_params();
    ep.recurrent_keep = 4;  // the tape keeps rows 16..19 only
    Engine eng(*m, ep);
    eng.memory().checkpoint_ahead(0, 10);
    decode_chunks(eng, toks, 0, 0, 7);  // 10 inside the second batch [7, 14)
    EXPECT_EQ(eng.memory().cut_point(0, 10), 0);
    ASSERT_TRUE(eng.memory().checkpoint(0, 10));
    EXPECT_EQ(eng.memory().cut_point(0, 12), 10);
    eng.memory().cut(0, 10);
    Engine ref(*m, q35_params());
    decode_batch(ref, std::vector<int32_t>(toks.begin(), toks.begin() + 10), 0);
    EXPECT_TRUE(same_state(eng.memory().save(0), ref.memory().save(0)));
    Engine none(*m, ep);  // without it, position 10 is no cut point and cannot be kept
    decode_chunks(none, toks, 0, 0, 7);
    EXPECT_FALSE(none.memory().checkpoint(0, 10));
}

// Every KV type runs on the attention layers (the recurrent state stays f32): batch-invariant, and close to
// f32 K/V.
TEST(Qwen35, EveryKvType) {
    const Model* m = qwen35_tiny();
    if (!m) return;
    const std::vector<int32_t> toks = tokens(12, 11);
    Engine f32(*m, engine_params(2, 512, 1, GgmlType::F32, 256));
    const std::vector<float> base = decode_chunks(f32, toks, 0, 0, 12);
    for (GgmlType t : {GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
                       GgmlType::Q5_1, GgmlType::TURBO2, GgmlType::TURBO3, GgmlType::TURBO4, GgmlType::TURBO3_TCQ}) {
        SCOPED_TRACE(ggml_type_name(t));
        EngineParams p = engine_params(2, 512, 1, t, 256);
        p.kv_auto_asymmetric = false;
        Engine batch(*m, p), one(*m, p);
        const std::vector<float> l = decode_chunks(batch, toks, 0, 0, 12);
        EXPECT_TRUE(same_bits(decode_chunks(one, toks, 0, 0, 1), l));
        double err = 0, ref = 0;
        for (size_t i = 0; i < l.size(); i++) err += std::fabs(l[i] - base[i]), ref += std::fabs(base[i]);
        EXPECT_LT(err / ref, 0.25);
    }
}

TEST(Qwen35, RefusesBadHparams) {
    if (!qwen35_tiny()) return;
    const std::pair<const char*, const char*> cases[] = {{"qwen35.ssm.time_step_rank=int:3", "Gated DeltaNet"},
                                                         {"qwen35.ssm.inner_size=int:100", "Gated DeltaNet"},
                                                         {"qwen35.nextn_predict_layers=int:5",
                                                          "nextn_predict_layers is 5"},
                                                         {"qwen35.full_attention_interval=int:0",
                                                          "full_attention_interval is 0"}};
    for (const auto& [kv, want] : cases) {
        ModelLoadParams lp;
        lp.kv_overrides = parse_gguf_overrides(kv);
        try {
            Model::load(BEE_QWEN35_TINY, lp);
            ADD_FAILURE() << kv << " was accepted";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
        }
    }
}

}  // namespace
}  // namespace bee::test
