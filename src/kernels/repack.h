// kernels/repack: load-time weight repacking into the layout of the tile kernels (kernels/gemm.h; AVX-512, and
// AVX2, whose 8-row tiles read half of each 64-byte vector).
// A weight matrix is normally read as the GGUF file stores it (WeightLayout::gguf): one row after the
// other, each block with its own fp16 scale. A tile kernel on that layout spends most of its time
// rearranging every block it loads, and reduces each output across the lanes of a register. Repacking
// does the rearranging once at load.
//
// WeightLayout::rows16 (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0; same bytes as the GGUF copy apart from padding):
//   rows grouped by 16 (rows past n_out are zero), so that int32 lane l of a 512-bit register belongs to
//   row l of the group and one vpdpbusd with 4 broadcast activation bytes advances 16 outputs (no
//   horizontal sums; one scale multiply and FMA per block for 16 rows). Two sections:
//   quants: group g, block b at (g * n_blocks + b) * quant_bytes, as 64-byte vectors of 16 rows × 4 bytes:
//     Q4/Q5 (4 vectors): vector v, row l, byte j = low 4 bits of element 4v+j | those of element 16+4v+j
//       << 4 (the GGUF qs byte 4v+j of row l); Q5 then one more vector: row l's 32 5th bits (its qh)
//     Q8_0 (8 vectors): vector k, row l, byte j = element 4k+j + 128 (as an unsigned byte)
//   scales: from scales_offset, group g, block b at (g * n_blocks + b) * scale_bytes: the 16 rows' fp16 d,
//     then for Q4_1/Q5_1 their 16 fp16 m.
// WeightLayout::rows16 (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K; 256-element super-blocks): one section, no scales part
//   (scale_bytes = 0): group g, super-block b at quants_at(g, b), as ceil(block bytes / 4) 64-byte vectors;
//   vector i, row l = bytes 4i..4i+3 of row l's GGUF block (Q3_K's 110 and Q6_K's 210 bytes padded with 2
//   zero bytes). The
//   tile decodes a word of 16 rows exactly as it decodes the same word gathered from GGUF rows.
// A type's tile does the same float operations on both layouts (the GGUF tile gathers the same vectors
// from 16 rows), so both give bit-identical results (tests/unit/kernels/test_repack.cpp checks this).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "gguf/ggml_type.h"

namespace bee {

enum class WeightLayout : uint8_t {
    gguf = 0,    // as in the file
    rows16 = 1,  // 16 rows interleaved per block, 4 bytes per row and vector (see above)
};
const char* weight_layout_name(WeightLayout l);

// Where the parts of a rows16 matrix lie.
struct Rows16Geometry {
    int64_t n_groups = 0, n_blocks = 0;
    size_t quant_bytes = 0;  // per group and block
    size_t scale_bytes = 0;  // per group and block
    size_t quants_at(int64_t g, int64_t b) const { return (size_t)(g * n_blocks + b) * quant_bytes; }
    size_t scales_offset() const { return (size_t)(n_groups * n_blocks) * quant_bytes; }
    size_t scales_at(int64_t g, int64_t b) const { return scales_offset() + (size_t)(g * n_blocks + b) * scale_bytes; }
    size_t total_bytes() const { return scales_offset() + (size_t)(n_groups * n_blocks) * scale_bytes; }
};
// Geometry of a (n_out, n_in) matrix of type t in rows16; quant_bytes == 0 if t has no rows16 layout.
Rows16Geometry rows16_geometry(GgmlType t, int64_t n_out, int64_t n_in);

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

// The layout the active ISA's matmul reads fastest for weight type t: rows16 where the ISA has a rows16
// tile (AVX-512 and AVX2: the 32-element types and the K-quants), else gguf. BEE_REPACK=0 in the environment keeps every weight in the GGUF layout (for
// side-by-side benchmarks).
WeightLayout preferred_layout(GgmlType t);

// w (n_out, n_in) of type t in the GGUF layout, repacked into preferred_layout(t); empty result when
// that is gguf. n_in must be a multiple of the block size.
RepackedWeight repack_weight(GgmlType t, const void* w, int64_t n_out, int64_t n_in);

// Row `row` of a matrix in layout l, written back in the GGUF layout (ggml_row_size(t, n_in) bytes):
// what matmul falls back to on an ISA without a tile for l, and what get_rows reads.
void unpack_row(GgmlType t, WeightLayout l, const void* w, int64_t n_out, int64_t n_in, int64_t row, void* dst);

}  // namespace bee
