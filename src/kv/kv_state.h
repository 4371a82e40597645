// kv/kv_state: one sequence's KV cells copied out of a KvCache into host memory and back, byte for
// byte in the cache's own storage types (the server's RAM prompt cache keeps idle slots' KV this way),
// and the same state as a file (the server's slot save/restore).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kv/kv_cache.h"

namespace bee {

struct SeqState {
    std::vector<int32_t> pos;   // (n) positions, ascending
    std::vector<uint8_t> k, v;  // (n_layer, n, k_row_bytes / v_row_bytes of the layer): rows in position order
    int n_layer = 0;
    size_t k_row_bytes = 0, v_row_bytes = 0;
    GgmlType type_k = GgmlType::F16, type_v = GgmlType::F16;
    int rot_k = 0, rot_v = 0;  // KvCache::k_rot_group / v_rot_group: rotated rows are not plain rows
    // V layout per layer when the cache's V type differs between layers (KvCacheParams::type_v_layer),
    // else empty: every layer has type_v, v_row_bytes, rot_v.
    struct VLayer {
        GgmlType type = GgmlType::F16;
        size_t row_bytes = 0;
        int rot = 0;
        bool operator==(const VLayer&) const = default;
    };
    std::vector<VLayer> v_layers;
    // The LoRA scales the rows were computed under, one per adapter (model/seq_memory.h); empty: none.
    std::vector<float> lora;
    // Recurrent layers' state after the last position (model/recurrent_state.h), f32; empty for
    // attention-only models.
    std::vector<float> recurrent;
    // Its checkpoints at or below the last position (RecurrentState::export_checkpoints): positions, and
    // the states one after the other. Kept in memory (the RAM prompt cache); slot files do not carry them.
    std::vector<int32_t> recurrent_cp_pos;
    std::vector<float> recurrent_cp;

    VLayer v_layer(int il) const { return v_layers.empty() ? VLayer{type_v, v_row_bytes, rot_v} : v_layers[il]; }
    int n_cells() const { return (int)pos.size(); }
    size_t bytes() const {
        return k.size() + v.size() + pos.size() * sizeof(int32_t) + recurrent.size() * sizeof(float) +
               recurrent_cp_pos.size() * sizeof(int32_t) + recurrent_cp.size() * sizeof(float);
    }
};

// Copies the cells of `seq` whose position is below p1 (p1 < 0: all of them).
SeqState seq_state_export(const KvCache& kv, int seq, int32_t p1 = -1);

// Writes `st` into sequence `seq`, which must hold no cells. Returns false (and changes nothing) if the
// cache has too few free cells. Throws Error if the state was taken from a cache of another layout
// (layers, types, row sizes) or if `seq` is not empty.
bool seq_state_import(KvCache& kv, int seq, const SeqState& st);

// Throws Error (starting with `what`) if `st` does not have kv's layout: layers, K/V types, row sizes,
// rotation.
void seq_state_check(const KvCache& kv, const SeqState& st, const char* what);

// The file form: "BEESEQ04", a header naming the model (free text chosen by the caller) and the KV
// layout (layers, K/V types, row bytes, K/V rotation groups, then the count of per-layer V layouts, 0 or
// n_layer, and each as V type, row bytes, rotation group), the count of LoRA scales and the scales (f32),
// the token ids whose K/V the state holds, positions, K rows, V rows, then an xxh3-64 of everything before
// it. Little-endian, as the host writes it. A state with recurrent values is written as "BEESEQ05": the same
// with the count of recurrent values (u64) after the cell count and the values (f32) after the V rows.
// "BEESEQ03" files (no LoRA scales) read with none; "BEESEQ02" files (no per-layer V either) read as uniform V;
// "BEESEQ01" files (written before KV rotation existed, no rotation fields) read as unrotated.
struct SeqFile {
    std::string model;
    std::vector<int32_t> tokens;
    SeqState state;
};
// Writes the file; returns its size in bytes. Throws Error naming the path if it cannot be written.
size_t seq_file_write(const std::string& path, const SeqFile& f);
// Reads and validates a file written by seq_file_write (magic, sizes, checksum); *n_read gets its
// size. Throws Error naming the path and what is wrong (missing, truncated, corrupted, not such a file).
SeqFile seq_file_read(const std::string& path, size_t* n_read);

}  // namespace bee
