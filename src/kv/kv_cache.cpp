// kv/kv_cache: cell bookkeeping and sequence operations.
#include "kv/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "quant/quant.h"
#include "quant/turbo.h"

namespace bee {

namespace {

const GgmlType kKvTypes[] = {
    GgmlType::F32,       GgmlType::F16,       GgmlType::BF16,       GgmlType::Q8_0,
    GgmlType::Q4_0,      GgmlType::Q4_1,      GgmlType::Q5_0,       GgmlType::Q5_1,
    GgmlType::TURBO2,    GgmlType::TURBO3,    GgmlType::TURBO4,     GgmlType::TURBO2_64,
    GgmlType::TURBO3_64, GgmlType::TURBO4_64, GgmlType::TURBO2_TCQ, GgmlType::TURBO3_TCQ,
};

}  // namespace

bool kv_type_supported(GgmlType t) {
    for (GgmlType k : kKvTypes)
        if (k == t) return true;
    return false;
}

const char* kv_type_names() {
    static const std::string names = [] {
        std::string s;
        for (GgmlType k : kKvTypes) s += (s.empty() ? "" : ", ") + std::string(ggml_type_name(k));
        return s;
    }();
    return names.c_str();
}

GgmlType kv_type_from_name(const std::string& name, const char* flag) {
    GgmlType t;
    if (!ggml_type_from_name(name.c_str(), &t) || !kv_type_supported(t))
        fail("invalid value '%s' for %s: supported KV cache types are %s", name.c_str(), flag, kv_type_names());
    return t;
}

GgmlType kv_protect_k_type(GgmlType type_k, int n_head, int n_head_kv, int64_t n_embd, std::string* why) {
    if (!is_turbo_type(type_k) || n_head_kv <= 0) return type_k;
    const int gqa = n_head / n_head_kv;
    if (gqa >= 6) *why = strfmt("grouped-query ratio %d >= 6", gqa);
    else if (n_embd <= 2048) *why = strfmt("small model (n_embd %lld <= 2048)", (long long)n_embd);
    else return type_k;
    return GgmlType::Q8_0;
}

int kv_rot_group(GgmlType t, int head_dim, bool rotate) {
    switch (t) {
        case GgmlType::Q8_0:
        case GgmlType::Q4_0:
        case GgmlType::Q4_1:
        case GgmlType::Q5_0:
        case GgmlType::Q5_1:
            if (!rotate || head_dim % 64 != 0) return 0;
            return head_dim % 128 == 0 ? 128 : 64;
        default: return 0;
    }
}

static bool in_range(int32_t pos, int32_t p0, int32_t p1) { return pos >= (p0 < 0 ? 0 : p0) && (p1 < 0 || pos < p1); }

KvCache::KvCache(const KvCacheParams& p) : p_(p) {
    if (!kv_type_supported(p.type_k))
        fail("KV cache: K type %s is not supported (use one of %s)", ggml_type_name(p.type_k), kv_type_names());
    if (!kv_type_supported(p.type_v))
        fail("KV cache: V type %s is not supported (use one of %s)", ggml_type_name(p.type_v), kv_type_names());
    if (!p.type_v_layer.empty() && (int)p.type_v_layer.size() != p.n_layer)
        fail("KV cache: %zu per-layer V types given for %d layers", p.type_v_layer.size(), p.n_layer);
    for (size_t il = 0; il < p.type_v_layer.size(); il++)
        if (!kv_type_supported(p.type_v_layer[il]))
            fail("KV cache: V type %s of layer %zu is not supported (use one of %s)",
                 ggml_type_name(p.type_v_layer[il]) ? ggml_type_name(p.type_v_layer[il]) : "(unknown)", il,
                 kv_type_names());
    if (p.n_cells <= 0 || p.n_layer <= 0) fail("KV cache: needs at least one cell and one layer");
    if (p.n_partitions < 1 || p.n_partitions > kMaxSequences || p.n_partitions > p.n_cells)
        fail("KV cache: %d sequence ranges for %d cells (1..%d, at most one per cell)", p.n_partitions, p.n_cells,
             kMaxSequences);
    n_head_ = p.n_head_kv > 0 ? p.n_head_kv : 1;
    head_dim_k_ = p.head_dim_k > 0 ? p.head_dim_k : (int)p.n_embd_k;
    head_dim_v_ = p.head_dim_v > 0 ? p.head_dim_v : (int)p.n_embd_v;
    if ((int64_t)n_head_ * head_dim_k_ != p.n_embd_k || (int64_t)n_head_ * head_dim_v_ != p.n_embd_v)
        fail("KV cache: %d heads of %d (K) / %d (V) values do not make rows of %lld / %lld", n_head_, head_dim_k_,
             head_dim_v_, (long long)p.n_embd_k, (long long)p.n_embd_v);
    rot_k_ = kv_rot_group(p.type_k, head_dim_k_, p.rotate);
    k_row_bytes_ = n_head_ * kv_head_bytes(p.type_k, head_dim_k_);
    v_base_ = make_v_layer(p.type_v);
    cells_.resize(p.n_cells);
    shift_.assign(p.n_cells, 0);
    k_.resize(p.n_layer);
    v_.reserve(p.n_layer);
    for (int il = 0; il < p.n_layer; il++) {
        k_[il].assign(k_row_bytes_ * p.n_cells, 0);
        v_.push_back(make_v_layer(p.type_v_layer.empty() ? p.type_v : p.type_v_layer[il]));
        v_.back().data.assign(v_.back().row_bytes * p.n_cells, 0);
    }
}

KvCache::VLayer KvCache::make_v_layer(GgmlType t) const {
    VLayer l;
    l.type = t;
    l.rot = kv_rot_group(t, head_dim_v_, p_.rotate);
    l.alpha = turbo_v_alpha(t);
    l.row_bytes = n_head_ * kv_head_bytes(t, head_dim_v_);
    return l;
}

size_t KvCache::bytes_per_token() const {
    size_t n = k_row_bytes_ * (size_t)p_.n_layer;
    for (const VLayer& l : v_) n += l.row_bytes;
    return n;
}

std::vector<int> KvCache::v_promoted_layers() const {
    std::vector<int> out;
    for (int il = 0; il < p_.n_layer; il++)
        if (v_[il].type != p_.type_v) out.push_back(il);
    return out;
}

// note: heads are encoded one by one through a zero-padded scratch, so a 64-wide head in a 128-group
// type fills half a rotation group with zeros (the rotation keeps dot products, spec §2 step 1).
// rot > 0 (kv_rot_group: head_dim is a multiple of it, so nothing is padded) rotates each group first;
// alpha is the TurboQuant norm alpha (1 for K, turbo_v_alpha for V).
void KvCache::encode(GgmlType t, int head_dim, int rot, float alpha, const float* src, uint8_t* dst) const {
    const int padded = kv_padded_dim(t, head_dim);
    const size_t head_bytes = kv_head_bytes(t, head_dim);
    const QuantTraits* qt = quant_traits(t);
    static thread_local std::vector<float> buf;
    buf.assign(padded, 0.0f);
    for (int h = 0; h < n_head_; h++) {
        memcpy(buf.data(), src + (size_t)h * head_dim, (size_t)head_dim * sizeof(float));
        for (int g = 0; rot > 0 && g < head_dim; g += rot) turbo_rotate(buf.data() + g, rot);
        if (is_turbo_type(t)) quantize_row_turbo(t, buf.data(), dst + h * head_bytes, padded, alpha);
        else qt->quantize_row(buf.data(), dst + h * head_bytes, padded);
    }
}

void KvCache::decode(GgmlType t, int head_dim, int rot, const uint8_t* src, float* dst) const {
    const int padded = kv_padded_dim(t, head_dim);
    const size_t head_bytes = kv_head_bytes(t, head_dim);
    const QuantTraits* qt = quant_traits(t);
    static thread_local std::vector<float> buf;
    buf.resize(padded);
    for (int h = 0; h < n_head_; h++) {
        qt->dequantize_row(src + h * head_bytes, buf.data(), padded);
        for (int g = 0; rot > 0 && g < head_dim; g += rot) turbo_unrotate(buf.data() + g, rot);
        memcpy(dst + (size_t)h * head_dim, buf.data(), (size_t)head_dim * sizeof(float));
    }
}

// Cells for a batch in the sequences' own ranges (KvCacheParams::n_partitions), lowest free first within
// each; false (nothing taken) when a range is full or a sequence has no range.
bool KvCache::alloc_partitioned(int n, const int32_t* pos, const int32_t* seq, int32_t* cells_out) {
    const int P = p_.n_partitions;
    const int64_t cells = p_.n_cells;
    int next[kMaxSequences];  // per partition: where its search continues
    for (int i = 0; i < P; i++) next[i] = (int)(cells * i / P);
    for (int k = 0; k < n; k++) {
        const int s = seq[k];
        if (s < 0 || s >= P) {
            for (int j = 0; j < k; j++) cells_[cells_out[j]] = KvCell{};
            return false;
        }
        const int end = (int)(cells * (s + 1) / P);
        int c = next[s];
        while (c < end && cells_[c].used()) c++;
        if (c == end) {  // full: undo this batch's cells
            for (int j = 0; j < k; j++) cells_[cells_out[j]] = KvCell{};
            return false;
        }
        cells_[c].pos = pos[k];
        cells_[c].seq_mask = 1ull << s;
        shift_[c] = 0;
        cells_out[k] = c;
        next[s] = c + 1;
    }
    for (int k = 0; k < n; k++) end_ = std::max(end_, cells_out[k] + 1);
    n_used_ += n;
    return true;
}

bool KvCache::alloc(int n, const int32_t* pos, const int32_t* seq, int32_t* cells_out) {
    if (n > p_.n_cells - n_used_) return false;
    if (p_.n_partitions > 1 && alloc_partitioned(n, pos, seq, cells_out)) return true;
    int k = 0;
    for (int c = 0; c < p_.n_cells && k < n; c++) {
        if (cells_[c].used()) continue;
        cells_[c].pos = pos[k];
        cells_[c].seq_mask = 1ull << seq[k];
        shift_[c] = 0;
        cells_out[k++] = c;
        end_ = std::max(end_, c + 1);
    }
    n_used_ += n;
    return true;
}

void KvCache::trim_end() {
    while (end_ > 0 && !cells_[end_ - 1].used()) end_--;
}

void KvCache::free_cells(const int32_t* cells, int n) {
    for (int i = 0; i < n; i++) {
        KvCell& c = cells_[cells[i]];
        if (c.used()) n_used_--;
        c = KvCell{};
        shift_[cells[i]] = 0;
    }
    trim_end();
}

void KvCache::seq_rm(int seq, int32_t p0, int32_t p1) {
    for (int i = 0; i < end_; i++) {
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
    trim_end();
}

void KvCache::seq_cp(int src, int dst, int32_t p0, int32_t p1) {
    if (src == dst) return;
    for (int i = 0; i < end_; i++) {
        KvCell& c = cells_[i];
        if (c.has_seq(src) && in_range(c.pos, p0, p1)) c.seq_mask |= 1ull << dst;
    }
}

void KvCache::seq_keep(int seq) {
    for (int i = 0; i < end_; i++) {
        KvCell& c = cells_[i];
        if (!c.used()) continue;
        c.seq_mask &= 1ull << seq;
        if (!c.used()) {
            c.pos = -1;
            shift_[i] = 0;
            n_used_--;
        }
    }
    trim_end();
}

void KvCache::seq_shift(int seq, int32_t p0, int32_t p1, int32_t delta) {
    if (delta == 0) return;
    // Checked before anything moves, so a refused shift leaves the cache as it was.
    for (int i = 0; i < end_; i++) {
        const KvCell& c = cells_[i];
        if (c.has_seq(seq) && in_range(c.pos, p0, p1) && c.seq_mask != (1ull << seq))
            fail("KV cache: cannot shift positions of sequence %d: cell %d is shared with other sequences", seq, i);
    }
    for (int i = 0; i < end_; i++) {
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
    trim_end();
}

void KvCache::clear() {
    for (KvCell& c : cells_) c = KvCell{};
    std::fill(shift_.begin(), shift_.end(), 0);
    has_shift_ = false;
    n_used_ = 0;
    end_ = 0;
}

int32_t KvCache::seq_pos_max(int seq) const {
    int32_t m = -1;
    for (int i = 0; i < end_; i++)
        if (cells_[i].has_seq(seq) && cells_[i].pos > m) m = cells_[i].pos;
    return m;
}

int32_t KvCache::seq_pos_min(int seq) const {
    int32_t m = -1;
    for (int i = 0; i < end_; i++)
        if (cells_[i].has_seq(seq) && (m < 0 || cells_[i].pos < m)) m = cells_[i].pos;
    return m;
}

int KvCache::seq_n_cells(int seq) const {
    int n = 0;
    for (int i = 0; i < end_; i++) n += cells_[i].has_seq(seq);
    return n;
}

void KvCache::seq_cells_sorted(int seq, std::vector<std::pair<int32_t, int32_t>>& out) const {
    out.clear();
    for (int i = 0; i < end_; i++)
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
