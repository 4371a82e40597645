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
    int32_t pos = -1;       // -1: free
    uint64_t seq_mask = 0;  // bit s set: the cell belongs to sequence s
    bool used() const { return seq_mask != 0; }
    bool has_seq(int s) const { return (seq_mask >> s) & 1; }
};

struct KvCacheParams {
    int n_layer = 0;
    int n_cells = 0;       // total cells (context size summed over sequences)
    int64_t n_embd_k = 0;  // per layer and cell: n_head_kv * head_dim_k
    int64_t n_embd_v = 0;  // per layer and cell: n_head_kv * head_dim_v
    GgmlType type_k = GgmlType::F16;
    GgmlType type_v = GgmlType::F16;
    // V type per layer (n_layer entries), or empty: type_v on every layer. Some layers' V is kept at a
    // finer type than the rest (kv/kv_layers.h, --kv-boundary-layers).
    std::vector<GgmlType> type_v_layer;
    // Heads per row and their width; 0 means one head of n_embd_k / n_embd_v values. Each head is
    // stored as whole blocks of its type, zero-padded (quant/turbo.h kv_padded_dim).
    int n_head_kv = 0;
    int head_dim_k = 0, head_dim_v = 0;
    // Store the legacy block types (q8_0 q4_0 q4_1 q5_0 q5_1) Hadamard-rotated (kv_rot_group). On by
    // default, as llama.cpp's attention rotation; --kv-rotate off turns it off.
    bool rotate = true;
    // > 1: sequence s allocates from its own range of cells [s·n/P, (s+1)·n/P) (lowest free first), so
    // each sequence's cells are contiguous (attention reads them as one run; interleaved cells of
    // concurrent sequences were 15-25% slower). A batch that does not fit takes the lowest free cells.
    int n_partitions = 1;
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

    // Storage: layer il, cell c. Row bytes are k_row_bytes() / v_row_bytes(il).
    uint8_t* k_row(int il, int c) { return k_[il].data() + (size_t)c * k_row_bytes_; }
    uint8_t* v_row(int il, int c) { return v_[il].data.data() + (size_t)c * v_[il].row_bytes; }
    const uint8_t* k_data(int il) const { return k_[il].data(); }
    const uint8_t* v_data(int il) const { return v_[il].data.data(); }
    size_t k_row_bytes() const { return k_row_bytes_; }
    // V storage of layer il: its type (params().type_v unless type_v_layer sets it), row bytes and
    // kv_rot_group; the attention call of the layer takes these (model/forward.cpp).
    GgmlType v_type(int il) const { return v_[il].type; }
    size_t v_row_bytes(int il) const { return v_[il].row_bytes; }
    int v_rot_group(int il) const { return v_[il].rot; }
    // The same for a layer of the base V type params().type_v (every layer when type_v_layer is empty).
    size_t v_row_bytes() const { return v_base_.row_bytes; }
    int v_rot_group() const { return v_base_.rot; }
    // Layers whose V type is not params().type_v (ascending).
    std::vector<int> v_promoted_layers() const;
    size_t total_bytes() const { return bytes_per_token() * (size_t)p_.n_cells; }
    size_t bytes_per_token() const;  // K and V bytes of one cell over all layers

    // Encodes a K / V row of n_embd_k / n_embd_v floats (heads side by side) into cell c of layer il
    // (quantize on write), and decodes one back (K-shift, state export, tests).
    // Rows of rotated types (k_rot_group() > 0) are stored rotated; read_k / read_v un-rotate. TurboQuant
    // V is written with the norm alpha turbo_v_alpha (read_v returns it as stored).
    void write_k(int il, int c, const float* src) { encode(p_.type_k, head_dim_k_, rot_k_, 1.0f, src, k_row(il, c)); }
    void write_v(int il, int c, const float* src) {
        const VLayer& l = v_[il];
        encode(l.type, head_dim_v_, l.rot, l.alpha, src, v_row(il, c));
    }
    void read_k(int il, int c, float* dst) const {
        decode(p_.type_k, head_dim_k_, rot_k_, k_[il].data() + (size_t)c * k_row_bytes_, dst);
    }
    void read_v(int il, int c, float* dst) const {
        const VLayer& l = v_[il];
        decode(l.type, head_dim_v_, l.rot, l.data.data() + (size_t)c * l.row_bytes, dst);
    }
    // kv_rot_group of K for this cache (the attention kernel needs it: AttentionArgs).
    int k_rot_group() const { return rot_k_; }

    // Takes n free cells (lowest free indices first; with n_partitions > 1, in each sequence's own range
    // while it has room) and sets their (pos, seq); returns false and changes nothing if fewer than n are
    // free. Either way a sequence's cells of one batch come in increasing index order (kv_tree relies on it).
    bool alloc(int n, const int32_t* pos, const int32_t* seq, int32_t* cells_out);
    // Frees the given cells entirely (used to undo an alloc after an error).
    void free_cells(const int32_t* cells, int n);

    // Sequence ops (llama.cpp semantics; seq < 0 means every sequence, p1 < 0 means infinity):
    void seq_rm(int seq, int32_t p0, int32_t p1);           // drop positions [p0, p1)
    void seq_cp(int src, int dst, int32_t p0, int32_t p1);  // dst also owns src's cells in range
    void seq_keep(int seq);                                 // drop every other sequence
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
    bool has_shifts() const { return has_shift_; }  // shifts are pending (take_shifts would return true)

private:
    bool alloc_partitioned(int n, const int32_t* pos, const int32_t* seq, int32_t* cells_out);
    void encode(GgmlType t, int head_dim, int rot, float alpha, const float* src, uint8_t* dst) const;
    void decode(GgmlType t, int head_dim, int rot, const uint8_t* src, float* dst) const;

    KvCacheParams p_;
    int n_head_ = 1, head_dim_k_ = 0, head_dim_v_ = 0;
    int rot_k_ = 0;  // kv_rot_group of K
    size_t k_row_bytes_ = 0;
    // One layer's V storage: type, kv_rot_group, turbo_v_alpha (TurboQuant V norms, quant/turbo.h),
    // bytes per cell and the (n_cells, row_bytes) rows.
    struct VLayer {
        GgmlType type = GgmlType::F16;
        int rot = 0;
        float alpha = 1.0f;
        size_t row_bytes = 0;
        std::vector<uint8_t> data;
    };
    VLayer make_v_layer(GgmlType t) const;
    VLayer v_base_;  // layout of params().type_v (no rows)
    std::vector<KvCell> cells_;
    std::vector<int32_t> shift_;  // pending K rotation per cell
    bool has_shift_ = false;
    int n_used_ = 0;
    // Cells at or past end_ are all unused: every scan stops there. note: a server's -c is often far
    // above what its slots hold (8192 cells, a few hundred used), and validation, attention lists and
    // rollback scan the cells on every decode (~5% of a one-row decode at -c 8192 before this).
    int end_ = 0;
    void trim_end();
    std::vector<std::vector<uint8_t>> k_;  // [layer] -> (n_cells, row bytes)
    std::vector<VLayer> v_;                // [layer]
};

}  // namespace bee
