// kv/kv_cache: cell bookkeeping and sequence operations.
#include "kv/kv_cache.h"

#include <algorithm>

#include "base/error.h"

namespace bee {

static bool kv_type_supported(GgmlType t) { return t == GgmlType::F32 || t == GgmlType::F16; }

static bool in_range(int32_t pos, int32_t p0, int32_t p1) {
    return pos >= (p0 < 0 ? 0 : p0) && (p1 < 0 || pos < p1);
}

KvCache::KvCache(const KvCacheParams& p) : p_(p) {
    if (!kv_type_supported(p.type_k))
        fail("KV cache: K type %s is not supported (use f32 or f16)", ggml_type_name(p.type_k));
    if (!kv_type_supported(p.type_v))
        fail("KV cache: V type %s is not supported (use f32 or f16)", ggml_type_name(p.type_v));
    if (p.n_cells <= 0 || p.n_layer <= 0) fail("KV cache: needs at least one cell and one layer");
    k_row_bytes_ = ggml_row_size(p.type_k, p.n_embd_k);
    v_row_bytes_ = ggml_row_size(p.type_v, p.n_embd_v);
    cells_.resize(p.n_cells);
    shift_.assign(p.n_cells, 0);
    k_.resize(p.n_layer);
    v_.resize(p.n_layer);
    for (int il = 0; il < p.n_layer; il++) {
        k_[il].assign(k_row_bytes_ * p.n_cells, 0);
        v_[il].assign(v_row_bytes_ * p.n_cells, 0);
    }
}

bool KvCache::alloc(int n, const int32_t* pos, const int32_t* seq, int32_t* cells_out) {
    if (n > p_.n_cells - n_used_) return false;
    int k = 0;
    for (int c = 0; c < p_.n_cells && k < n; c++) {
        if (cells_[c].used()) continue;
        cells_[c].pos = pos[k];
        cells_[c].seq_mask = 1ull << seq[k];
        shift_[c] = 0;
        cells_out[k++] = c;
    }
    n_used_ += n;
    return true;
}

void KvCache::free_cells(const int32_t* cells, int n) {
    for (int i = 0; i < n; i++) {
        KvCell& c = cells_[cells[i]];
        if (c.used()) n_used_--;
        c = KvCell{};
        shift_[cells[i]] = 0;
    }
}

void KvCache::seq_rm(int seq, int32_t p0, int32_t p1) {
    for (int i = 0; i < p_.n_cells; i++) {
        KvCell& c = cells_[i];
        if (!c.used() || !in_range(c.pos, p0, p1)) continue;
        if (seq < 0) c.seq_mask = 0;
        else c.seq_mask &= ~(1ull << seq);
        if (!c.used()) {
            c.pos = -1;
            shift_[i] = 0;
            n_used_--;
        }
    }
}

void KvCache::seq_cp(int src, int dst, int32_t p0, int32_t p1) {
    if (src == dst) return;
    for (KvCell& c : cells_)
        if (c.has_seq(src) && in_range(c.pos, p0, p1)) c.seq_mask |= 1ull << dst;
}

void KvCache::seq_keep(int seq) {
    for (int i = 0; i < p_.n_cells; i++) {
        KvCell& c = cells_[i];
        if (!c.used()) continue;
        c.seq_mask &= 1ull << seq;
        if (!c.used()) {
            c.pos = -1;
            shift_[i] = 0;
            n_used_--;
        }
    }
}

void KvCache::seq_shift(int seq, int32_t p0, int32_t p1, int32_t delta) {
    if (delta == 0) return;
    // Checked before anything moves, so a refused shift leaves the cache as it was.
    for (int i = 0; i < p_.n_cells; i++) {
        const KvCell& c = cells_[i];
        if (c.has_seq(seq) && in_range(c.pos, p0, p1) && c.seq_mask != (1ull << seq))
            fail("KV cache: cannot shift positions of sequence %d: cell %d is shared with other sequences", seq, i);
    }
    for (int i = 0; i < p_.n_cells; i++) {
        KvCell& c = cells_[i];
        if (!c.has_seq(seq) || !in_range(c.pos, p0, p1)) continue;
        c.pos += delta;
        shift_[i] += delta;
        has_shift_ = true;
        if (c.pos < 0) {  // shifted out of the context: drop it, as llama.cpp does
            c = KvCell{};
            shift_[i] = 0;
            n_used_--;
        }
    }
}

void KvCache::clear() {
    for (KvCell& c : cells_) c = KvCell{};
    std::fill(shift_.begin(), shift_.end(), 0);
    has_shift_ = false;
    n_used_ = 0;
}

int32_t KvCache::seq_pos_max(int seq) const {
    int32_t m = -1;
    for (const KvCell& c : cells_)
        if (c.has_seq(seq) && c.pos > m) m = c.pos;
    return m;
}

int32_t KvCache::seq_pos_min(int seq) const {
    int32_t m = -1;
    for (const KvCell& c : cells_)
        if (c.has_seq(seq) && (m < 0 || c.pos < m)) m = c.pos;
    return m;
}

int KvCache::seq_n_cells(int seq) const {
    int n = 0;
    for (const KvCell& c : cells_) n += c.has_seq(seq);
    return n;
}

void KvCache::seq_cells_sorted(int seq, std::vector<std::pair<int32_t, int32_t>>& out) const {
    out.clear();
    for (int i = 0; i < p_.n_cells; i++)
        if (cells_[i].has_seq(seq)) out.emplace_back(cells_[i].pos, i);
    std::sort(out.begin(), out.end());
}

bool KvCache::take_shifts(std::vector<int32_t>& delta_per_cell) {
    if (!has_shift_) return false;
    delta_per_cell = shift_;
    std::fill(shift_.begin(), shift_.end(), 0);
    has_shift_ = false;
    return true;
}

}  // namespace bee
