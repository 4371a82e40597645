// quant/turbo: the TurboQuant KV types (specs/kv-turboquant.md §2-§5): the fixed randomized Hadamard
// rotation, the Lloyd-Max centroids of the scalar types, the trellis codebooks of the TCQ types, and
// per-group encode / decode. Also the KV head layout every KV type shares (heads padded to a block).
#pragma once
#include <cstddef>
#include <cstdint>

#include "gguf/ggml_type.h"

namespace bee {

// The rotation of one group of g = 64 or 128 values (spec §2 step 4), in place:
//   forward  y = D2 · H · D1 · x / √g      inverse  x = D1 · H · D2 · y / √g
// H is the Sylvester Hadamard matrix, D1/D2 the spec's sign tables (the 64 group uses their first 64
// entries). Orthogonal, so dot products survive: (R q)·(R k) = q·k.
void turbo_rotate(float* x, int g);
void turbo_unrotate(float* x, int g);
// Sign table entry i (0..127) of D1 (which = 1) or D2 (which = 2): +1 or -1.
float turbo_sign(int which, int i);

// What a turbo type stores. Scalar types: index j of a group selects values[idx_j] (ascending,
// 2^bits centroids). TCQ types: state_t selects values[state_t] (2^(6+bits) codebook entries).
struct TurboFormat {
    GgmlType type;
    int bits;             // index bits per value (TCQ: bits per trellis step)
    int group;            // rotation group = block size, 64 or 128
    bool tcq;             // trellis-coded (quant/tcq.h)
    const float* values;  // centroids or codebook, for coordinates of a rotated unit vector
};
// Format of a turbo type, nullptr for any other type.
const TurboFormat* turbo_format(GgmlType t);
inline bool is_turbo_type(GgmlType t) { return turbo_format(t) != nullptr; }

// Index of element j in a scalar turbo block (2/3/4-bit packing of quant/blocks.h).
inline int turbo_index(const uint8_t* block, int bits, int group, int j) {
    const uint8_t* qs = block + 2;
    if (bits == 4) return (qs[j / 2] >> ((j & 1) * 4)) & 15;
    const int lo = (qs[j / 4] >> ((j % 4) * 2)) & 3;
    if (bits == 2) return lo;
    const uint8_t* signs = qs + group / 4;
    return lo | (((signs[j / 8] >> (j % 8)) & 1) << 2);
}

// Encodes one group x (original domain, f.group values) into block `dst` (spec §2 steps 3-7). alpha
// multiplies the corrected norm (spec §2 step 6, "optional alpha"; 1: the plain norm correction).
void turbo_encode_group(const TurboFormat& f, const float* x, uint8_t* dst, float alpha = 1.0f);
// Decodes one block into the rotated domain: y_j = value_j * norm (no inverse rotation).
void turbo_decode_group_rotated(const TurboFormat& f, const uint8_t* src, float* y);

// Row routines for the quant traits table (original domain; n a multiple of the group).
void quantize_row_turbo(GgmlType t, const float* src, void* dst, int64_t n, float alpha = 1.0f);

// The norm alpha KvCache writes V rows with: 1/√(1 − D), D the format's unit-vector distortion (spec
// §10: 0.119 / 0.034 / 0.0092 for 2 / 3 / 4 bits, TCQ 0.080 / 0.0218). A decoded group c keeps |x| but
// its component along x is only √(1 − D)·|x|; attention averages V over many cells, where the rounding
// noise partly cancels and that shrinkage does not, so V is stored unshrunk along x (BeeLlama's V alpha
// > 1 serves the same end, spec §5). Measured in docs/PERFORMANCE-LOG.md, 2026-11-22 (KLD -5% to -11%).
float turbo_v_alpha(GgmlType t);
void dequantize_row_turbo(GgmlType t, const void* src, float* dst, int64_t n);

// KV head layout shared by kv/ and the attention kernel: each head's head_dim values are zero-padded
// up to a multiple of the type's block size and stored as whole blocks (spec §2 step 1).
int kv_padded_dim(GgmlType t, int head_dim);
size_t kv_head_bytes(GgmlType t, int head_dim);

}  // namespace bee
