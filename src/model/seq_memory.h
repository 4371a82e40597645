// model/seq_memory: the one owner of what a sequence has cached: its KV cells and, for Gated DeltaNet
// layers, its recurrent state (model/recurrent_state.h). Everything above model/ changes a sequence's
// cached state here — cut, clear, move, tree commit, export/import — never through the KV cache itself.
//
// Not every memory can be cut anywhere. Attention KV can drop any suffix; a recurrent layer's state
// only exists at the points where it was kept (the end of the sequence, the rows of its last batch,
// checkpoints: `checkpoint`, --ctx-checkpoints). Callers ask first (`cut_point`, `can_move`, `can_prune_rows`) and fall back when the
// answer is no: cut at the returned point and re-decode the rest (`Engine::rewind`), or re-process the
// prompt. CutPolicy::checkpoints applies the recurrent rules to any model, so the fall-backs are tested
// on attention-only models; CutPolicy::recurrent is the real thing, reported by models with recurrent
// layers whatever EngineParams asked.
#pragma once
#include <cstdint>
#include <vector>

#include "kv/kv_cache.h"
#include "kv/kv_state.h"

namespace bee {

class Offload;
class RecurrentState;

enum class CutPolicy {
    any,          // attention KV: any suffix can be dropped, ranges moved, tree rows pruned
    checkpoints,  // recurrent rules: cut only at the end, at the start of the sequence's last batch, or to empty
    // a model with recurrent layers: cut at the end, to empty, or at any position of the last n_keep rows of
    // the sequence's last multi-row batch (RecurrentState); nothing moved or pruned, no tree batches
    recurrent,
};

class SeqMemory {
public:
    // rs: the recurrent layers' state (the policy is then CutPolicy::recurrent), or nullptr.
    SeqMemory(KvCache& kv, CutPolicy policy, RecurrentState* rs = nullptr)
        : kv_(kv), policy_(rs ? CutPolicy::recurrent : policy), rs_(rs) {}

    CutPolicy policy() const { return policy_; }
    const KvCache& kv() const { return kv_; }

    // Positions held by `seq`: its highest position + 1 (0 when empty).
    int32_t n_pos(int seq) const { return kv_.seq_pos_max(seq) + 1; }
    // The largest position c <= p such that the sequence can be cut to [0, c) exactly. With
    // CutPolicy::any that is p itself; otherwise the end, the start of the last batch (checkpoints) or
    // a kept row (recurrent), or 0.
    int32_t cut_point(int seq, int32_t p) const;
    // Keeps positions [0, p) of `seq`. Throws Error unless cut_point(seq, p) == p.
    void cut(int seq, int32_t p);
    void clear(int seq);
    void clear_all();

    // Whether a range can be dropped from the middle with the rest moved down (context shift, chunk reuse).
    bool can_move(int /*seq*/) const { return policy_ == CutPolicy::any; }
    // Drops positions [p0, p1) and moves [p1, p_end) down by p1 - p0 (their keys are re-rotated at the
    // next decode). Throws Error when !can_move(seq) or when cells are shared with another sequence.
    void move_down(int seq, int32_t p0, int32_t p1, int32_t p_end);

    // Adds delta to the positions in [p0, p1) of seq (p1 < 0: to the end); keys are re-rotated at the
    // next decode. Throws Error when !can_move(seq) or when cells are shared with another sequence.
    void shift(int seq, int32_t p0, int32_t p1, int32_t delta);
    // Sequence dst also holds src's positions [p0, p1) (p1 < 0: to the end), sharing the cells (a fork).
    // With recurrent state only a whole sequence can be copied (p0 = 0, p1 at its end), else Error.
    void copy(int src, int dst, int32_t p0 = 0, int32_t p1 = -1);

    // Whether single rows of the sequence's last (tree) batch can be freed (speculative tree commit).
    bool can_prune_rows(int /*seq*/) const { return policy_ == CutPolicy::any; }
    // The last batch of `seq` was a tree of keep.size() rows at positions >= pos0; frees the rows whose
    // keep[i] is 0 (kv/kv_tree.h). Throws Error when !can_prune_rows(seq).
    void prune_rows(int seq, int32_t pos0, const std::vector<uint8_t>& keep);
    // Whether a batch may hold a draft tree for this memory (Batch::parent with branches): recurrent
    // state follows one path only, so a hybrid model verifies chains.
    bool can_decode_trees() const { return rs_ == nullptr; }
    // The recurrent state, or nullptr for attention-only models.
    const RecurrentState* recurrent() const { return rs_; }

    // The state of `seq` below position p1 (p1 < 0: all), and back into an empty sequence (false: no room).
    // With recurrent state p1 must be a cut point (save throws otherwise) and the state travels along.
    SeqState save(int seq, int32_t p1 = -1) const;
    bool load(int seq, const SeqState& st);

    // Checkpoints (recurrent state only; model/recurrent_state.h): keeps the state of `seq` at p, which must
    // be a cut point (or the position checkpoint_ahead asked for), so later cuts down to p are exact. False when the memory has no recurrent state,
    // checkpoints are off, or one is already near p. The positions of those kept, ascending.
    bool checkpoint(int seq, int32_t p);
    // The coming batches copy the state at p (p >= the sequence's end) as the forward passes it, so a
    // checkpoint there costs no replay. Nothing without recurrent state or with checkpoints off.
    void checkpoint_ahead(int seq, int32_t p);
    std::vector<int32_t> checkpoints(int seq) const;

    // Benchmarks of deep contexts: extends `seq` (which holds positions [0, n_pos)) by n positions whose
    // K/V rows repeat its existing rows, without decoding them. False if the cache has no room.
    bool fill_repeating(int seq, int n);

    // Engine::decode tells the memory where each sequence's batch starts and how many rows it has (a
    // checkpoint under the recurrent rules).
    void begin_batch(int seq, int32_t pos0, int n_rows);

    // LoRA scales (model/lora.h) the sequence's cached rows were computed under, one per adapter of the
    // engine; Engine::decode applies them to the sequence's rows. They change only while the sequence is
    // empty (K/V computed under other scales must never be reused): set_lora throws otherwise. save()
    // carries them and load() restores them; copy() gives the destination the source's.
    const std::vector<float>& lora(int seq) const { return lora_[seq]; }
    void set_lora(int seq, const std::vector<float>& scales);
    // The adapter count and every sequence's first scales (the Engine, at start-up).
    void init_lora(const std::vector<float>& scales) { lora_.assign(kMaxSequences, scales); }

    // The device holding some layers' K/V (model/offload.h), set by the Engine: rows are pulled into the
    // host cache before they are read (save, fill_repeating, load's other cells) and pushed back after
    // they were rewritten. Cuts, copies and tree commits change cell bookkeeping only and need neither.
    void set_offload(Offload* o) { offload_ = o; }

private:
    KvCache& kv_;
    CutPolicy policy_;
    RecurrentState* rs_ = nullptr;
    Offload* offload_ = nullptr;
    std::vector<int32_t> batch_start_ = std::vector<int32_t>(kMaxSequences, -1);             // per sequence, -1: none
    std::vector<std::vector<float>> lora_ = std::vector<std::vector<float>>(kMaxSequences);  // per sequence
};

}  // namespace bee
