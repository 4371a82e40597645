// model/seq_memory: cut points, cuts, moves, tree commits and state transfer of one sequence.
#include "model/seq_memory.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "kv/kv_tree.h"
#include "model/offload.h"
#include "model/recurrent_state.h"

namespace bee {

int32_t SeqMemory::cut_point(int seq, int32_t p) const {
    const int32_t end = n_pos(seq);
    if (p >= end) return end;
    if (p <= 0) return 0;
    if (policy_ == CutPolicy::any) return p;
    if (rs_) return rs_->cut_point(seq, p, end);
    const int32_t b = batch_start_[seq];
    return b >= 0 && b <= p ? b : 0;
}

void SeqMemory::cut(int seq, int32_t p) {
    if (p >= n_pos(seq)) return;
    if (cut_point(seq, p) != p)
        fail("sequence memory: sequence %d cannot be cut at position %d (nearest cut point %d; ask cut_point first)",
             seq, p, cut_point(seq, p));
    if (rs_) rs_->cut(seq, p, n_pos(seq));
    kv_.seq_rm(seq, p, -1);
    if (batch_start_[seq] > p) batch_start_[seq] = -1;
}

void SeqMemory::clear(int seq) {
    if (rs_) rs_->clear(seq);
    kv_.seq_rm(seq, 0, -1);
    batch_start_[seq] = -1;
}

void SeqMemory::clear_all() {
    if (rs_) rs_->clear_all();
    kv_.clear();
    batch_start_.assign(batch_start_.size(), -1);
}

void SeqMemory::move_down(int seq, int32_t p0, int32_t p1, int32_t p_end) {
    if (!can_move(seq)) fail("sequence memory: sequence %d cannot drop a middle range (recurrent state)", seq);
    kv_.seq_rm(seq, p0, p1);
    kv_.seq_shift(seq, p1, p_end, p0 - p1);
    batch_start_[seq] = -1;
}

void SeqMemory::shift(int seq, int32_t p0, int32_t p1, int32_t delta) {
    if (!can_move(seq)) fail("sequence memory: sequence %d cannot move positions (recurrent state)", seq);
    kv_.seq_shift(seq, p0, p1, delta);
    batch_start_[seq] = -1;
}

void SeqMemory::copy(int src, int dst, int32_t p0, int32_t p1) {
    if (rs_) {
        if (p0 != 0 || (p1 >= 0 && p1 < n_pos(src)))
            fail("sequence memory: sequence %d has recurrent state: only all of it can be copied, not [%d, %d)", src,
                 p0, p1);
        if (n_pos(dst) > 0) fail("sequence memory: copy of recurrent state into non-empty sequence %d", dst);
        rs_->copy(src, dst);
    }
    set_lora(dst, lora_[src]);
    kv_.seq_cp(src, dst, p0, p1);
    batch_start_[dst] = -1;
}

void SeqMemory::prune_rows(int seq, int32_t pos0, const std::vector<uint8_t>& keep) {
    if (!can_prune_rows(seq)) fail("sequence memory: sequence %d cannot free single rows of a tree batch", seq);
    kv_tree_commit(kv_, seq, pos0, keep);
    batch_start_[seq] = -1;
}

void SeqMemory::set_lora(int seq, const std::vector<float>& scales) {
    if (scales == lora_[seq]) return;
    if (scales.size() != lora_[seq].size())
        fail("sequence memory: %zu LoRA scales given for sequence %d, the engine has %zu adapters", scales.size(), seq,
             lora_[seq].size());
    if (n_pos(seq) > 0)
        fail("sequence memory: sequence %d holds K/V computed under other LoRA scales: clear it first", seq);
    lora_[seq] = scales;
}

SeqState SeqMemory::save(int seq, int32_t p1) const {
    if (offload_) offload_->pull_kv(kv_);
    SeqState st = seq_state_export(kv_, seq, p1);
    if (rs_) {
        const int32_t p = p1 < 0 ? n_pos(seq) : std::min(p1, n_pos(seq));
        st.recurrent = rs_->state_at(seq, p, n_pos(seq));
        rs_->export_checkpoints(seq, p, st.recurrent_cp_pos, st.recurrent_cp);
    }
    st.lora = lora_[seq];
    return st;
}

bool SeqMemory::load(int seq, const SeqState& st) {
    if (rs_ && (int64_t)st.recurrent.size() != rs_->seq_floats())
        fail(
            "sequence memory: the saved state has %zu recurrent values, this model needs %lld (saved from another "
            "model?)",
            st.recurrent.size(), (long long)rs_->seq_floats());
    if (!rs_ && !st.recurrent.empty())
        fail("sequence memory: the saved state has recurrent values but this model has no recurrent layers");
    // A state saved without adapters (or before they existed) was computed with every scale 0.
    const std::vector<float> lora = st.lora.empty() ? std::vector<float>(lora_[seq].size(), 0.0f) : st.lora;
    if (lora.size() != lora_[seq].size())
        fail("the saved state was computed with %zu LoRA adapters; this engine has %zu", st.lora.size(),
             lora_[seq].size());
    if (offload_) offload_->pull_kv(kv_);  // whole layers go back: the other sequences' rows must be current
    if (!seq_state_import(kv_, seq, st)) return false;
    if (rs_) {
        rs_->set_state(seq, st.recurrent);
        rs_->import_checkpoints(seq, st.recurrent_cp_pos, st.recurrent_cp);
    }
    if (offload_) offload_->push_kv(kv_);
    batch_start_[seq] = -1;
    lora_[seq] = lora;
    return true;
}

bool SeqMemory::fill_repeating(int seq, int n) {
    std::vector<std::pair<int32_t, int32_t>> src;  // (pos, cell) of what the sequence holds
    kv_.seq_cells_sorted(seq, src);
    if (src.empty() || n <= 0) return n <= 0;
    const int32_t p0 = n_pos(seq);
    std::vector<int32_t> pos(n), seqs(n, seq), cells(n);
    for (int i = 0; i < n; i++) pos[i] = p0 + i;
    if (!kv_.alloc(n, pos.data(), seqs.data(), cells.data())) return false;
    if (offload_) offload_->pull_kv(kv_);
    for (int il = 0; il < kv_.params().n_layer; il++)
        for (int i = 0; i < n; i++) {
            const int32_t from = src[(size_t)i % src.size()].second;
            std::memcpy(kv_.k_row(il, cells[i]), kv_.k_row(il, from), kv_.k_row_bytes());
            std::memcpy(kv_.v_row(il, cells[i]), kv_.v_row(il, from), kv_.v_row_bytes(il));
        }
    if (offload_) offload_->push_kv(kv_);
    batch_start_[seq] = -1;
    return true;
}

bool SeqMemory::checkpoint(int seq, int32_t p) {
    if (!rs_ || p > n_pos(seq) || (cut_point(seq, p) != p && !rs_->has_capture(seq, p))) return false;
    return rs_->add_checkpoint(seq, p, n_pos(seq));
}

void SeqMemory::checkpoint_ahead(int seq, int32_t p) {
    if (rs_ && rs_->max_checkpoints() > 0) rs_->capture_at(seq, p);
}

std::vector<int32_t> SeqMemory::checkpoints(int seq) const {
    return rs_ ? rs_->checkpoints(seq) : std::vector<int32_t>{};
}

void SeqMemory::begin_batch(int seq, int32_t pos0, int n_rows) {
    batch_start_[seq] = pos0;
    if (rs_) rs_->begin_batch(seq, pos0, n_rows);
}

}  // namespace bee
