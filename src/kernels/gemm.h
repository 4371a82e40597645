// kernels/gemm: the blocked matmul micro-kernel interface. A tile kernel computes up to max_rows weight
// rows × max_cols activation rows at once: each weight block is unpacked once and reused for every
// activation row of the tile, each activation block once for every weight row.
// Batch invariance (DESIGN.md invariant 2): every output element of a tile is reduced by the same
// sequence of float operations whatever the tile's shape (nr, nc), so the single-row matvec (nc = 1) and
// the prompt GEMM give bit-identical results; integer parts are exact and may be computed in any order.
#pragma once
#include <cstddef>
#include <cstdint>

#include "gguf/ggml_type.h"
#include "kernels/repack.h"

namespace bee {

// y[c * ldy + r] = dot(weight row r, activation row c) for r < nr <= max_rows, c < nc <= max_cols.
// w: weight rows w_stride bytes apart; a: prepared activation rows a_stride bytes apart.
using GemmTileFn = void (*)(int64_t n, const uint8_t* w, size_t w_stride, const uint8_t* a, size_t a_stride, int nr,
                            int nc, float* y, size_t ldy);

struct GemmKernel {
    GgmlType act_type;                        // activations are first quantized to this type (reference bytes)
    size_t (*prepared_row_bytes)(int64_t n);  // bytes of one prepared activation row of n elements
    void (*prepare)(const void* act_row, void* dst, int64_t n);  // act_type row -> the tile's layout
    GemmTileFn tile;
    int max_rows, max_cols;
    // Repacked layouts (kernels/repack.h): the w and w_stride a tile of weight rows [o, o + max_rows)
    // takes, o a multiple of max_rows, in a (n_out, n_in) matrix at `base`. nullptr: GGUF rows
    // (w = base + o * row bytes, w_stride = row bytes).
    void (*locate)(const uint8_t* base, int64_t n_out, int64_t n_in, int64_t o, const uint8_t** w, size_t* w_stride);
};

// The blocked kernel for weight type t stored in `layout` on the active ISA, or nullptr (for gguf,
// matmul then calls vec_dot per output element).
const GemmKernel* gemm_kernel_for(GgmlType t, WeightLayout layout = WeightLayout::gguf);

}  // namespace bee
