// kv/kv_cache: KV cells (position + set of sequences), sequence ops, and per-layer K/V storage whose
// element type is chosen separately for K and V (float, legacy 32-blocks, TurboQuant, TCQ).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gguf/ggml_type.h"

namespace bee {

constexpr int kMaxSequences = 64;  // sequence ids are 0..63 (one bit each in a cell's seq mask)

struct KvCell {
    int32_t pos = -1;      // -1: free
    uint64_t seq_mask = 0; // bit s set: the cell belongs to sequence s
    bool used() const { return seq_mask != 0; }
    bool has_seq(int s) const { return (seq_mask >> s) & 1; }
};

struct KvCacheParams {
    int n_layer = 0;
    int n_cells = 0;      // total cells (context size summed over sequences)
    int64_t n_embd_k = 0; // per layer and cell: n_head_kv * head_dim_k
    int64_t n_embd_v = 0; // per layer and cell: n_head_kv * head_dim_v
    GgmlType type_k = GgmlType::F16;
    GgmlType type_v = GgmlType::F16;
    // Heads per row and their width; 0 means one head of n_embd_k / n_embd_v values. Each head is
    // stored as whole blocks of its type, zero-padded (quant/turbo.h kv_padded_dim).
    int n_head_kv = 0;
    int head_dim_k = 0, head_dim_v = 0;
    // Store the legacy block types (q8_0 q4_0 q4_1 q5_0 q5_1) Hadamard-rotated (kv_rot_group). On by
    // default, as llama.cpp's attention rotation; --kv-rotate off turns it off.
    bool rotate = true;
};

// KV storage types: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 turbo2 turbo3 turbo4 turbo2_64 turbo3_64
// turbo4_64 turbo2_tcq turbo3_tcq.
bool kv_type_supported(GgmlType t);
// Parses a KV type name for flag `flag`; throws Error listing the supported names.
GgmlType kv_type_from_name(const std::string& name, const char* flag);
const char* kv_type_names();  // "f32, f16, ..." for help texts

// K protection (specs/kv-turboquant.md §6 "Model-level rules", §8 "GQA catastrophe"): TurboQuant K
// breaks models with a GQA ratio >= 6 and small models (n_embd <= 2048: Qwen3-0.6B, Qwen2.5-1.5B
// reach perplexities in the thousands). For such a model and a turbo K type this returns Q8_0 and
// sets *why; otherwise it returns type_k unchanged.
GgmlType kv_protect_k_type(GgmlType type_k, int n_head, int n_head_kv, int64_t n_embd, std::string* why);

// Rotation group of a legacy block type's heads (0: stored as is). A 32-value block has one scale, so
// one outlier channel costs the whole block precision; the orthonormal randomized Hadamard rotation of
// the TurboQuant types (quant/turbo.h turbo_rotate, groups of 128, or 64 for 64-wide heads) spreads
// every channel over the group first. Scores are unchanged in exact arithmetic ((Rq)·(Rk) = q·k), so
// attention rotates the query once per head and un-rotates the V sum once (kernels/attention.cpp);
// decode (read_k / read_v) returns the original domain. Needs head_dim % 64 == 0; float and turbo
// types (which rotate inside their own format) always give 0.
int kv_rot_group(GgmlType t, int head_dim, bool rotate);

class KvCache {
public:
    // Throws Error if a type is not a supported KV storage type (kv_type_supported) or the head
    // layout does not add up.
    explicit KvCache(const KvCacheParams& p);

    const KvCacheParams& params() const { return p_; }
    int n_cells() const { return p_.n_cells; }
    int n_used() const { return n_used_; }
    const KvCell& cell(int i) const { return cells_[i]; }
    // Every cell at or past this index is unused (scans can stop here).
    int cell_end() const { return end_; }

    // Storage: layer il, cell c. Row bytes are k_row_bytes() / v_row_bytes().
    uint8_t* k_row(int il, int c) { return k_[il].data() + (size_t)c * k_row_bytes_; }
    uint8_t* v_row(int il, int c) { return v_[il].data() + (size_t)c * v_row_bytes_; }
    const uint8_t* k_data(int il) const { return k_[il].data(); }
    const uint8_t* v_data(int il) const { return v_[il].data(); }
    size_t k_row_bytes() const { return k_row_bytes_; }
    size_t v_row_bytes() const { return v_row_bytes_; }
    size_t total_bytes() const { return (k_row_bytes_ + v_row_bytes_) * (size_t)p_.n_cells * p_.n_layer; }
    size_t bytes_per_token() const { return (k_row_bytes_ + v_row_bytes_) * (size_t)p_.n_layer; }

    // Encodes a K / V row of n_embd_k / n_embd_v floats (heads side by side) into cell c of layer il
    // (quantize on write), and decodes one back (K-shift, state export, tests).
    // Rows of rotated types (k_rot_group() > 0) are stored rotated; read_k / read_v un-rotate. TurboQuant
    // V is written with the norm alpha turbo_v_alpha (read_v returns it as stored).
    void write_k(int il, int c, const float* src) { encode(p_.type_k, head_dim_k_, rot_k_, 1.0f, src, k_row(il, c)); }
    void write_v(int il, int c, const float* src) { encode(p_.type_v, head_dim_v_, rot_v_, v_alpha_, src, v_row(il, c)); }
    void read_k(int il, int c, float* dst) const { decode(p_.type_k, head_dim_k_, rot_k_, k_[il].data() + (size_t)c * k_row_bytes_, dst); }
    void read_v(int il, int c, float* dst) const { decode(p_.type_v, head_dim_v_, rot_v_, v_[il].data() + (size_t)c * v_row_bytes_, dst); }
    // kv_rot_group of K / V for this cache (the attention kernel needs them: AttentionArgs).
    int k_rot_group() const { return rot_k_; }
    int v_rot_group() const { return rot_v_; }

    // Takes n free cells (lowest free indices first) and sets their (pos, seq); returns false and
    // changes nothing if fewer than n are free.
    bool alloc(int n, const int32_t* pos, const int32_t* seq, int32_t* cells_out);
    // Frees the given cells entirely (used to undo an alloc after an error).
    void free_cells(const int32_t* cells, int n);

    // Sequence ops (llama.cpp semantics; seq < 0 means every sequence, p1 < 0 means infinity):
    void seq_rm(int seq, int32_t p0, int32_t p1);                 // drop positions [p0, p1)
    void seq_cp(int src, int dst, int32_t p0, int32_t p1);        // dst also owns src's cells in range
    void seq_keep(int seq);                                       // drop every other sequence
    // Adds delta to positions in [p0, p1) of seq. Cells shared with other sequences are refused
    // (Error). The K rows of shifted cells must be re-rotated by the model: see take_shifts().
    void seq_shift(int seq, int32_t p0, int32_t p1, int32_t delta);
    void clear();

    int32_t seq_pos_max(int seq) const;  // -1 if the sequence has no cells
    int32_t seq_pos_min(int seq) const;  // -1 if the sequence has no cells
    int seq_n_cells(int seq) const;

    // Cells of `seq` sorted by position: (pos, cell) pairs. Used to build attention lists.
    void seq_cells_sorted(int seq, std::vector<std::pair<int32_t, int32_t>>& out) const;

    // Pending position shifts since the last call: per cell the delta to rotate K by (0 = none).
    // Returns false if there are none.
    bool take_shifts(std::vector<int32_t>& delta_per_cell);

private:
    void encode(GgmlType t, int head_dim, int rot, float alpha, const float* src, uint8_t* dst) const;
    void decode(GgmlType t, int head_dim, int rot, const uint8_t* src, float* dst) const;

    KvCacheParams p_;
    int n_head_ = 1, head_dim_k_ = 0, head_dim_v_ = 0;
    int rot_k_ = 0, rot_v_ = 0;  // kv_rot_group of K / V
    float v_alpha_ = 1.0f;       // turbo_v_alpha of the V type (TurboQuant V norms, quant/turbo.h)
    size_t k_row_bytes_ = 0, v_row_bytes_ = 0;
    std::vector<KvCell> cells_;
    std::vector<int32_t> shift_;  // pending K rotation per cell
    bool has_shift_ = false;
    int n_used_ = 0;
    // Cells at or past end_ are all unused: every scan stops there. note: a server's -c is often far
    // above what its slots hold (8192 cells, a few hundred used), and validation, attention lists and
    // rollback scan the cells on every decode (~5% of a one-row decode at -c 8192 before this).
    int end_ = 0;
    void trim_end();
    std::vector<std::vector<uint8_t>> k_, v_;  // [layer] -> (n_cells, row bytes)
};

}  // namespace bee
