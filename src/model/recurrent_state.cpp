// model/recurrent_state: recurrent state per sequence, checkpoint + tape, exact cuts by replay.
#include "model/recurrent_state.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "base/error.h"

namespace bee {

RecurrentState::RecurrentState(const HParams& hp, const ModelWeights& w, int n_seq, int n_keep, ThreadPool& pool)
    : shape_(hp), n_keep_(std::max(n_keep, 0)), pool_(pool) {
    for (int il = 0; il < hp.n_layer; il++)
        if (hp.layers[il].recurrent_layer >= 0) taps_.push_back(w.layers[il].conv_taps);
    seqs_.resize(n_seq);
    for (Seq& s : seqs_) s.cur.assign((size_t)seq_floats(), 0.0f);
}

size_t RecurrentState::rollback_bytes() const {
    if (n_keep_ == 0) return 0;
    return (size_t)(seq_floats() + (int64_t)n_keep_ * n_layers() * shape_.tape_floats()) * sizeof(float);
}

void RecurrentState::set_checkpoint_limits(int max_per_seq, int every_n) {
    cp_max_ = std::max(max_per_seq, 0);
    cp_every_ = every_n;
    for (Seq& s : seqs_)
        if ((int)s.cps.size() > cp_max_) s.cps.erase(s.cps.begin(), s.cps.end() - cp_max_);
}

const RecurrentState::Seq::Checkpoint* RecurrentState::checkpoint_at(const Seq& s, int32_t p) {
    for (const Seq::Checkpoint& c : s.cps)
        if (c.pos == p) return &c;
    return nullptr;
}

void RecurrentState::keep_checkpoint(Seq& s, int32_t p, std::vector<float> state) {
    auto at = std::find_if(s.cps.begin(), s.cps.end(), [p](const Seq::Checkpoint& c) { return c.pos > p; });
    s.cps.insert(at, Seq::Checkpoint{p, std::move(state)});
    if ((int)s.cps.size() > cp_max_) s.cps.erase(s.cps.begin());  // the oldest (lowest) goes first
}

bool RecurrentState::add_checkpoint(int seq, int32_t p, int32_t end) {
    if (cp_max_ == 0 || p < kCheckpointMinPos || p > end) return false;
    Seq& s = seqs_[seq];
    for (const Seq::Checkpoint& c : s.cps)
        if (std::abs(c.pos - p) < kCheckpointMinGap) return false;
    keep_checkpoint(s, p, has_capture(seq, p) ? s.capture : state_at(seq, p, end));  // copied: no replay
    return true;
}

void RecurrentState::capture_at(int seq, int32_t pos) {
    Seq& s = seqs_[seq];
    s.capture_pos = pos;
    s.captured = false;
    if (pos >= 0 && s.capture.empty()) s.capture.assign((size_t)seq_floats(), 0.0f);
}

std::vector<int32_t> RecurrentState::checkpoints(int seq) const {
    std::vector<int32_t> out;
    for (const Seq::Checkpoint& c : seqs_[seq].cps) out.push_back(c.pos);
    return out;
}

void RecurrentState::export_checkpoints(int seq, int32_t p, std::vector<int32_t>& pos,
                                        std::vector<float>& states) const {
    pos.clear();
    states.clear();
    for (const Seq::Checkpoint& c : seqs_[seq].cps) {
        if (p >= 0 && c.pos > p) break;
        pos.push_back(c.pos);
        states.insert(states.end(), c.state.begin(), c.state.end());
    }
}

void RecurrentState::import_checkpoints(int seq, const std::vector<int32_t>& pos, const std::vector<float>& states) {
    if ((int64_t)states.size() != (int64_t)pos.size() * seq_floats())
        fail("recurrent state: %zu checkpoint values for %zu checkpoints of %lld values each", states.size(),
             pos.size(), (long long)seq_floats());
    Seq& s = seqs_[seq];
    s.cps.clear();
    for (size_t i = 0; i < pos.size(); i++) {
        const float* st = states.data() + (int64_t)i * seq_floats();
        keep_checkpoint(s, pos[i], std::vector<float>(st, st + seq_floats()));
    }
}

void RecurrentState::begin_batch(int seq, int32_t pos0, int n) {
    Seq& s = seqs_[seq];
    // the sequence holds [0, pos0): its current state is the one at pos0
    if (cp_every_ > 0 && cp_max_ > 0 && pos0 >= kCheckpointMinPos &&
        pos0 - (s.cps.empty() ? 0 : s.cps.back().pos) >= cp_every_)
        keep_checkpoint(s, pos0, s.cur);
    // the forward copies the state before the capture row if this batch has it (a later batch keeps it)
    if (s.capture_pos >= pos0 && s.capture_pos < pos0 + n) s.captured = true;
    if (n < 2 || n_keep_ == 0) return;
    const int keep = std::min(n, n_keep_);
    s.base_pos = pos0 + n - keep;
    s.n_tape = keep;
    if (s.base.empty()) s.base.assign((size_t)seq_floats(), 0.0f);
    if (s.tape.empty()) s.tape.assign((size_t)n_keep_ * n_layers() * shape_.tape_floats(), 0.0f);
}

float* RecurrentState::tape_row(int seq, int rl, int32_t pos) {
    Seq& s = seqs_[seq];
    if (s.base_pos < 0 || pos < s.base_pos || pos >= s.base_pos + s.n_tape) return nullptr;
    const int64_t j = pos - s.base_pos;
    return s.tape.data() + (j * n_layers() + rl) * shape_.tape_floats();
}

int32_t RecurrentState::cut_point(int seq, int32_t p, int32_t end) const {
    if (p >= end) return end;
    if (p <= 0) return 0;
    const Seq& s = seqs_[seq];
    int32_t c = 0;
    if (s.base_pos >= 0 && p >= s.base_pos) c = std::min(p, s.base_pos + s.n_tape);
    for (const Seq::Checkpoint& k : s.cps)
        if (k.pos <= p) c = std::max(c, k.pos);
    return c;
}

// note: the layers are independent, so each task copies and replays one layer: the conv over every kept row,
// then each value head through all of them at once (gdn_head_tokens, the forward's bits).
void RecurrentState::replay(const Seq& s, int32_t n_rows, float* state) const {
    const GdnShape& sh = shape_;
    const int64_t lf = layer_floats(), row_stride = (int64_t)n_layers() * sh.tape_floats();
    pool_.run(n_layers(), [&](int rl, int) {
        float* conv = state + (int64_t)rl * lf;
        float* ssm = conv + sh.conv_floats();
        memcpy(conv, s.base.data() + (int64_t)rl * lf, (size_t)lf * sizeof(float));
        if (n_rows <= 0) return;
        std::vector<float> rows((size_t)n_rows * sh.conv_ch), o((size_t)n_rows * sh.d);
        const float* t0 = s.tape.data() + (int64_t)rl * sh.tape_floats();  // row j at t0 + j * row_stride
        for (int32_t j = 0; j < n_rows; j++) {
            float* row = rows.data() + (int64_t)j * sh.conv_ch;
            gdn_conv(sh, conv, taps_[rl], t0 + j * row_stride, row, 0, sh.conv_ch);
            gdn_conv_finish(sh, row);
        }
        const float* g = t0 + sh.conv_ch;
        for (int h = 0; h < sh.n_v_heads; h++)
            gdn_head_tokens(sh, ssm, h, n_rows, rows.data(), g + h, g + sh.n_v_heads + h, row_stride, o.data(), sh.d);
    });
}

void RecurrentState::cut(int seq, int32_t p, int32_t end) {
    if (p >= end) return;
    if (cut_point(seq, p, end) != p)
        fail("recurrent state: sequence %d cannot be cut at position %d (nearest cut point %d)", seq, p,
             cut_point(seq, p, end));
    if (p == 0) return clear(seq);
    Seq& s = seqs_[seq];
    if (s.base_pos >= 0 && p >= s.base_pos && p <= s.base_pos + s.n_tape) {
        replay(s, p - s.base_pos, s.cur.data());
        s.n_tape = p - s.base_pos;
    } else {  // below the kept rows: a checkpoint, whose later rows are gone with the cut
        s.cur = checkpoint_at(s, p)->state;
        s.base_pos = -1;
        s.n_tape = 0;
    }
    while (!s.cps.empty() && s.cps.back().pos > p) s.cps.pop_back();
    if (s.capture_pos > p) s.capture_pos = -1, s.captured = false;
}

std::vector<float> RecurrentState::state_at(int seq, int32_t p, int32_t end) const {
    const Seq& s = seqs_[seq];
    if (p < 0 || p >= end) return s.cur;
    if (cut_point(seq, p, end) != p)
        fail("recurrent state: sequence %d has no state kept at position %d (nearest %d)", seq, p,
             cut_point(seq, p, end));
    std::vector<float> st((size_t)seq_floats(), 0.0f);
    if (p == 0) return st;
    if (s.base_pos >= 0 && p >= s.base_pos && p <= s.base_pos + s.n_tape) replay(s, p - s.base_pos, st.data());
    else st = checkpoint_at(s, p)->state;
    return st;
}

void RecurrentState::set_state(int seq, const std::vector<float>& st) {
    if ((int64_t)st.size() != seq_floats())
        fail("recurrent state: %zu values for sequence %d, this model's state has %lld", st.size(), seq,
             (long long)seq_floats());
    Seq& s = seqs_[seq];
    s.cur = st;
    s.base_pos = -1;
    s.n_tape = 0;
    s.cps.clear();
    s.capture_pos = -1;
    s.captured = false;
}

void RecurrentState::clear(int seq) {
    Seq& s = seqs_[seq];
    std::fill(s.cur.begin(), s.cur.end(), 0.0f);
    s.base_pos = -1;
    s.n_tape = 0;
    s.cps.clear();
    s.capture_pos = -1;
    s.captured = false;
}

void RecurrentState::clear_all() {
    for (int i = 0; i < (int)seqs_.size(); i++) clear(i);
}

void RecurrentState::copy(int src, int dst) {
    if (src == dst) return;
    seqs_[dst] = seqs_[src];
}

}  // namespace bee
