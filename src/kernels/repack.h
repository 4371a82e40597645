// kernels/repack: load-time weight repacking into the layout of the AVX-512 tile kernels (kernels/gemm.h).
// A weight matrix is normally read as the GGUF file stores it (WeightLayout::gguf): one row after the
// other, each block with its own fp16 scale. The tile kernel then spends most of its time rearranging
// every block it loads (nibble split and lane shuffles, fp16 scale broadcasts). Repacking does that
// rearranging once at load: the tile loads a block pair of a row with one 32-byte load and needs one
// shift and one and, and the scales of 4 rows arrive in one load.
//
// WeightLayout::rows4 (Q4_0, Q4_1, Q5_0, Q8_0; same bytes as the GGUF copy apart from padding):
//   rows are grouped by 4 (group g = rows 4g..4g+3; rows past n_out are zero), blocks by pairs
//   (pair p = blocks 2p, 2p+1; a missing last block is zero). The matrix is two sections:
//   quants: group g, pair p, row r at ((g * n_pairs + p) * 4 + r) * quant_bytes:
//     Q4_0/Q4_1/Q5_0 (32 bytes): byte j = low 4 bits of element j of block 2p | those of block 2p+1 << 4
//     Q8_0 (64 bytes):      block 2p's 32 quants then block 2p+1's, each + 128 (as unsigned bytes)
//   scales: from scales_offset, group g, pair p at (g * n_pairs + p) * scale_bytes: the fp16 d of
//     (row 0 block 2p, row 0 block 2p+1, row 1 block 2p, ..., row 3 block 2p+1), then for Q4_1 the
//     8 fp16 m in the same order, for Q5_0 per row (0-3) 64 bits: bit k = 5th bit of quant byte k
//     (k < 32: element k of block 2p, else element k - 32 of block 2p+1).
// The arithmetic of a repacked tile is the GGUF tile's, operation for operation, so both layouts give
// bit-identical results (tests/unit/kernels/test_gemm.cpp checks this).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "gguf/ggml_type.h"

namespace bee {

enum class WeightLayout : uint8_t {
    gguf = 0,   // as in the file
    rows4 = 1,  // 4 rows interleaved per block pair (see above)
};
const char* weight_layout_name(WeightLayout l);

// Where the parts of a rows4 matrix lie.
struct Rows4Geometry {
    int64_t n_groups = 0, n_pairs = 0;
    size_t quant_bytes = 0;   // per row and pair
    size_t scale_bytes = 0;   // per group and pair
    size_t group_quants() const { return (size_t)n_pairs * 4 * quant_bytes; }
    size_t group_scales() const { return (size_t)n_pairs * scale_bytes; }
    size_t scales_offset() const { return (size_t)n_groups * group_quants(); }
    size_t total_bytes() const { return scales_offset() + (size_t)n_groups * group_scales(); }
};
// Geometry of a (n_out, n_in) matrix of type t in rows4; quant_bytes == 0 if t has no rows4 layout.
Rows4Geometry rows4_geometry(GgmlType t, int64_t n_out, int64_t n_in);

// 64-byte aligned bytes owned by a repacked weight.
struct AlignedFree {
    void operator()(uint8_t* p) const;
};
using AlignedBytes = std::unique_ptr<uint8_t[], AlignedFree>;

struct RepackedWeight {
    AlignedBytes data;  // empty: not repacked (use the original bytes with WeightLayout::gguf)
    size_t bytes = 0;
    WeightLayout layout = WeightLayout::gguf;
};

// The layout the active ISA's matmul reads fastest for weight type t: rows4 where an AVX-512 repacked
// tile exists, else gguf. BEE_REPACK=0 in the environment keeps every weight in the GGUF layout (for
// side-by-side benchmarks).
WeightLayout preferred_layout(GgmlType t);

// w (n_out, n_in) of type t in the GGUF layout, repacked into preferred_layout(t); empty result when
// that is gguf. n_in must be a multiple of the block size.
RepackedWeight repack_weight(GgmlType t, const void* w, int64_t n_out, int64_t n_in);

// Row `row` of a matrix in layout l, written back in the GGUF layout (ggml_row_size(t, n_in) bytes):
// what matmul falls back to on an ISA without a tile for l, and what get_rows reads.
void unpack_row(GgmlType t, WeightLayout l, const void* w, int64_t n_out, int64_t n_in, int64_t row, void* dst);

}  // namespace bee
