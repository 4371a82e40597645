// model/recurrent_state: the state of every sequence in the Gated DeltaNet layers (conv window and delta-rule
// state per layer, f32), and what makes a recurrent sequence cuttable inside its last multi-row batch: a
// checkpoint (the state before the batch's last n_keep rows) and a tape (per later row and layer, the
// recurrence's inputs: raw q|k|v, decay, beta). A cut there restores the checkpoint and replays the tape
// with the forward's own per-token code (model/gdn.h), so the state is bit-identical to one that never saw
// the rows cut away (../shared/specs/drafters.md §2.8: rollback without re-decoding the target).
// Checkpoints (--ctx-checkpoints) are whole copies of a sequence's state at chosen earlier positions, so a
// later prompt that leaves the sequence below its last batch restarts from the nearest one instead of from 0.
// Owned by the Engine; SeqMemory (model/seq_memory.h) is the only caller above the forward.
#pragma once
#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "model/gdn.h"
#include "model/hparams.h"
#include "model/weights.h"

namespace bee {

class RecurrentState {
public:
    // n_seq sequences, each cuttable at the positions of the last n_keep rows of its last batch of two
    // rows or more (and after them). Checkpoint and tape memory is taken per sequence when first needed.
    RecurrentState(const HParams& hp, const ModelWeights& w, int n_seq, int n_keep, ThreadPool& pool);

    const GdnShape& shape() const { return shape_; }
    int n_layers() const { return (int)taps_.size(); }
    int n_keep() const { return n_keep_; }
    // One sequence's state: per recurrent layer its conv window (d_conv - 1, conv_ch) then its delta-rule
    // state (H_v, d, d).
    int64_t seq_floats() const { return (int64_t)n_layers() * layer_floats(); }
    float* conv(int seq, int rl) { return seqs_[seq].cur.data() + (int64_t)rl * layer_floats(); }
    float* ssm(int seq, int rl) { return conv(seq, rl) + shape_.conv_floats(); }
    // Bytes of the current state of one sequence, and the most its checkpoint and tape can take.
    size_t state_bytes() const { return (size_t)seq_floats() * sizeof(float); }
    size_t rollback_bytes() const;

    // Before the forward of a batch of n rows of `seq` at positions pos0, pos0 + 1, ... (the sequence holds
    // [0, pos0)). With n >= 2 the checkpoint moves to position pos0 + n - min(n, n_keep); a one-row batch
    // keeps the previous one (its positions are still a prefix of the sequence).
    void begin_batch(int seq, int32_t pos0, int n);
    // Forward hooks. The checkpoint is the state before the row at base_pos(seq) (-1: none): the forward
    // copies each layer's state there (base_conv, base_ssm) before running that row. tape_row is where the
    // row at `pos` records its inputs (nullptr: not kept).
    int32_t base_pos(int seq) const { return seqs_[seq].base_pos; }
    float* base_conv(int seq, int rl) { return seqs_[seq].base.data() + (int64_t)rl * layer_floats(); }
    float* base_ssm(int seq, int rl) { return base_conv(seq, rl) + shape_.conv_floats(); }
    float* tape_row(int seq, int rl, int32_t pos);
    // A copy of the state before the row at capture_pos(seq) (-1: none), taken by the forward like the tape's
    // base: a checkpoint there (add_checkpoint) then needs no replay. Set with capture_at before the batch.
    int32_t capture_pos(int seq) const { return seqs_[seq].capture_pos; }
    float* capture_conv(int seq, int rl) { return seqs_[seq].capture.data() + (int64_t)rl * layer_floats(); }
    float* capture_ssm(int seq, int rl) { return capture_conv(seq, rl) + shape_.conv_floats(); }
    void capture_at(int seq, int32_t pos);
    bool has_capture(int seq, int32_t pos) const { return seqs_[seq].captured && seqs_[seq].capture_pos == pos; }

    // Checkpoints: at most max_per_seq per sequence (0: none; the oldest go first), one taken by begin_batch
    // when a batch starts every_n positions or more past the sequence's last one (<= 0: never by itself).
    void set_checkpoint_limits(int max_per_seq, int every_n);
    int max_checkpoints() const { return cp_max_; }
    // Keeps the state after position p - 1 as a checkpoint; p must be a cut point below or at end, or the
    // captured position (has_capture: copied, not replayed). Returns
    // false (and keeps nothing) when checkpoints are off, p < kCheckpointMinPos, or another is within
    // kCheckpointMinGap positions of p.
    bool add_checkpoint(int seq, int32_t p, int32_t end);
    static constexpr int32_t kCheckpointMinPos = 4, kCheckpointMinGap = 64;
    // Positions of the checkpoints of `seq`, ascending.
    std::vector<int32_t> checkpoints(int seq) const;
    size_t checkpoint_bytes(int seq) const { return seqs_[seq].cps.size() * state_bytes(); }
    // The checkpoints of `seq` below or at p (positions and their states, seq_floats() each, one after the
    // other), and back (replacing the sequence's; the states must have seq_floats() values each).
    void export_checkpoints(int seq, int32_t p, std::vector<int32_t>& pos, std::vector<float>& states) const;
    void import_checkpoints(int seq, const std::vector<int32_t>& pos, const std::vector<float>& states);

    // The largest c <= p at which `seq` (holding [0, end)) can be cut exactly: end, a kept row, a
    // checkpoint, or 0.
    int32_t cut_point(int seq, int32_t p, int32_t end) const;
    // The state becomes the one after position p - 1; p must be a cut point below end.
    void cut(int seq, int32_t p, int32_t end);
    // The state after position p - 1 (p = end: the current one); throws Error if p is not a cut point.
    std::vector<float> state_at(int seq, int32_t p, int32_t end) const;
    // Replaces the state of `seq` (seq_floats() values); the kept rows and checkpoints are dropped.
    void set_state(int seq, const std::vector<float>& st);
    void clear(int seq);
    void clear_all();
    void copy(int src, int dst);

private:
    struct Seq {
        std::vector<float> cur;      // seq_floats()
        int32_t base_pos = -1;       // the checkpoint: the state before this position
        int32_t n_tape = 0;          // positions base_pos .. base_pos + n_tape - 1 are on the tape
        std::vector<float> base;     // seq_floats(), taken on first use
        std::vector<float> tape;     // (n_keep, n_layers, tape_floats)
        int32_t capture_pos = -1;    // the forward copies the state before this row into `capture`
        bool captured = false;       // `capture` holds the state before capture_pos
        std::vector<float> capture;  // seq_floats(), taken on first use
        struct Checkpoint {
            int32_t pos;               // the state after position pos - 1
            std::vector<float> state;  // seq_floats()
        };
        std::vector<Checkpoint> cps;  // ascending positions
    };
    // The checkpoint of `s` at exactly p, or nullptr.
    static const Seq::Checkpoint* checkpoint_at(const Seq& s, int32_t p);
    void keep_checkpoint(Seq& s, int32_t p, std::vector<float> state);
    int64_t layer_floats() const { return shape_.conv_floats() + shape_.ssm_floats(); }
    // state = the checkpoint, then the first n_rows rows of the tape replayed.
    void replay(const Seq& s, int32_t n_rows, float* state) const;

    GdnShape shape_;
    int n_keep_ = 0;
    int cp_max_ = 0, cp_every_ = 0;
    ThreadPool& pool_;
    std::vector<const float*> taps_;  // [recurrent layer] conv taps (d_conv, conv_ch)
    std::vector<Seq> seqs_;
};

}  // namespace bee
