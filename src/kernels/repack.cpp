// kernels/repack: GGUF rows <-> the rows4 layout (kernels/repack.h). Plain byte moves, no ISA flags: the
// tile kernels that read rows4 are in x86/gemm_rows4_avx512.cpp.
#include "kernels/repack.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "base/fp16.h"
#include "kernels/gemm.h"
#include "quant/blocks.h"

namespace bee {

namespace {

constexpr int kGroupRows = 4;

// One 32-element block of a rows4 type, as plain parts.
struct BlockParts {
    fp16_t d = 0, m = 0;
    uint8_t u[32] = {};  // element j as the tile's unsigned byte (Q4: 0..15; Q8_0: q + 128)
};

BlockParts read_block(GgmlType t, const uint8_t* blk) {
    BlockParts b;
    switch (t) {
        case GgmlType::Q4_0:
        case GgmlType::Q4_1: {
            const uint8_t* qs = t == GgmlType::Q4_0 ? ((const BlockQ4_0*)blk)->qs : ((const BlockQ4_1*)blk)->qs;
            b.d = t == GgmlType::Q4_0 ? ((const BlockQ4_0*)blk)->d : ((const BlockQ4_1*)blk)->d;
            if (t == GgmlType::Q4_1) b.m = ((const BlockQ4_1*)blk)->m;
            for (int j = 0; j < 16; j++) {
                b.u[j] = qs[j] & 0x0F;
                b.u[j + 16] = qs[j] >> 4;
            }
            break;
        }
        case GgmlType::Q5_0: {
            const BlockQ5_0* x = (const BlockQ5_0*)blk;
            uint32_t qh;
            memcpy(&qh, x->qh, 4);
            b.d = x->d;
            for (int j = 0; j < 16; j++) {
                b.u[j] = (uint8_t)((x->qs[j] & 0x0F) | ((qh >> j) & 1) << 4);
                b.u[j + 16] = (uint8_t)((x->qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4);
            }
            break;
        }
        case GgmlType::Q8_0: {
            const BlockQ8_0* x = (const BlockQ8_0*)blk;
            b.d = x->d;
            for (int j = 0; j < 32; j++) b.u[j] = (uint8_t)(x->qs[j] + 128);
            break;
        }
        default: break;
    }
    return b;
}

void write_block(GgmlType t, const BlockParts& b, uint8_t* blk) {
    switch (t) {
        case GgmlType::Q4_0:
        case GgmlType::Q4_1: {
            uint8_t* qs = t == GgmlType::Q4_0 ? ((BlockQ4_0*)blk)->qs : ((BlockQ4_1*)blk)->qs;
            if (t == GgmlType::Q4_0) {
                ((BlockQ4_0*)blk)->d = b.d;
            } else {
                ((BlockQ4_1*)blk)->d = b.d;
                ((BlockQ4_1*)blk)->m = b.m;
            }
            for (int j = 0; j < 16; j++) qs[j] = (uint8_t)(b.u[j] | b.u[j + 16] << 4);
            break;
        }
        case GgmlType::Q5_0: {
            BlockQ5_0* x = (BlockQ5_0*)blk;
            uint32_t qh = 0;
            for (int j = 0; j < 32; j++) qh |= (uint32_t)(b.u[j] >> 4) << j;
            x->d = b.d;
            memcpy(x->qh, &qh, 4);
            for (int j = 0; j < 16; j++) x->qs[j] = (uint8_t)((b.u[j] & 0x0F) | (b.u[j + 16] & 0x0F) << 4);
            break;
        }
        case GgmlType::Q8_0: {
            BlockQ8_0* x = (BlockQ8_0*)blk;
            x->d = b.d;
            for (int j = 0; j < 32; j++) x->qs[j] = (int8_t)(b.u[j] - 128);
            break;
        }
        default: break;
    }
}

// Where block pair p of row r of group g keeps its parts inside a rows4 matrix.
struct PairSlot {
    uint8_t* quants;  // quant_bytes
    fp16_t* d;        // d of block 2p (d[1]: block 2p+1)
    fp16_t* m;        // Q4_1 only
    uint8_t* qh;      // Q5_0 only: 64 bits, the 5th bit of quant byte k (0-63) in bit k
};

PairSlot pair_slot(const Rows4Geometry& g, GgmlType t, uint8_t* base, int64_t group, int64_t p, int r) {
    PairSlot s;
    s.quants = base + ((size_t)(group * g.n_pairs + p) * kGroupRows + r) * g.quant_bytes;
    uint8_t* sc = base + g.scales_offset() + (size_t)(group * g.n_pairs + p) * g.scale_bytes;
    s.d = (fp16_t*)sc + 2 * r;
    s.m = t == GgmlType::Q4_1 ? (fp16_t*)sc + 8 + 2 * r : nullptr;
    s.qh = t == GgmlType::Q5_0 ? sc + 16 + 8 * r : nullptr;
    return s;
}

// Stores blocks (a, b) of one row pair; b == nullptr for a missing last block (zeros: no contribution).
void store_pair(GgmlType t, const PairSlot& s, const BlockParts& a, const BlockParts* b) {
    BlockParts zero;
    if (t == GgmlType::Q8_0) memset(zero.u, 128, sizeof zero.u);  // q = 0
    const BlockParts& hi = b ? *b : zero;
    if (t == GgmlType::Q8_0) {
        memcpy(s.quants, a.u, 32);
        memcpy(s.quants + 32, hi.u, 32);
    } else {
        for (int j = 0; j < 32; j++) s.quants[j] = (uint8_t)((a.u[j] & 0x0F) | (hi.u[j] & 0x0F) << 4);
    }
    if (s.qh) {
        uint64_t bits = 0;
        for (int j = 0; j < 32; j++) bits |= (uint64_t)(a.u[j] >> 4) << j | (uint64_t)(hi.u[j] >> 4) << (32 + j);
        memcpy(s.qh, &bits, 8);
    }
    s.d[0] = a.d;
    s.d[1] = hi.d;
    if (s.m) {
        s.m[0] = a.m;
        s.m[1] = hi.m;
    }
}

// Block `which` (0 or 1) of a stored pair.
BlockParts load_block(GgmlType t, const PairSlot& s, int which) {
    BlockParts b;
    if (t == GgmlType::Q8_0) {
        memcpy(b.u, s.quants + 32 * which, 32);
    } else {
        for (int j = 0; j < 32; j++) b.u[j] = which ? s.quants[j] >> 4 : s.quants[j] & 0x0F;
    }
    if (s.qh) {
        uint64_t bits;
        memcpy(&bits, s.qh, 8);
        for (int j = 0; j < 32; j++) b.u[j] |= (uint8_t)(((bits >> (32 * which + j)) & 1) << 4);
    }
    b.d = s.d[which];
    if (s.m) b.m = s.m[which];
    return b;
}

bool repack_disabled() {
    static const bool off = [] {
        const char* s = getenv("BEE_REPACK");
        return s && strcmp(s, "0") == 0;
    }();
    return off;
}

}  // namespace

void AlignedFree::operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t(64)); }

const char* weight_layout_name(WeightLayout l) {
    switch (l) {
        case WeightLayout::gguf: return "gguf";
        case WeightLayout::rows4: return "rows4";
    }
    return "?";
}

Rows4Geometry rows4_geometry(GgmlType t, int64_t n_out, int64_t n_in) {
    Rows4Geometry g;
    switch (t) {
        case GgmlType::Q4_0: g.quant_bytes = 32, g.scale_bytes = 16; break;
        case GgmlType::Q4_1: g.quant_bytes = 32, g.scale_bytes = 32; break;
        case GgmlType::Q5_0: g.quant_bytes = 32, g.scale_bytes = 48; break;
        case GgmlType::Q8_0: g.quant_bytes = 64, g.scale_bytes = 16; break;
        default: return g;
    }
    g.n_groups = (n_out + kGroupRows - 1) / kGroupRows;
    g.n_pairs = (n_in / 32 + 1) / 2;
    return g;
}

WeightLayout preferred_layout(GgmlType t) {
    if (repack_disabled()) return WeightLayout::gguf;
    return gemm_kernel_for(t, WeightLayout::rows4) ? WeightLayout::rows4 : WeightLayout::gguf;
}

RepackedWeight repack_weight(GgmlType t, const void* w, int64_t n_out, int64_t n_in) {
    RepackedWeight out;
    if (preferred_layout(t) != WeightLayout::rows4) return out;
    const Rows4Geometry g = rows4_geometry(t, n_out, n_in);
    out.bytes = g.total_bytes();
    out.data.reset(new (std::align_val_t(64)) uint8_t[out.bytes]);
    uint8_t* base = out.data.get();
    memset(base, 0, out.bytes);
    const size_t row_bytes = ggml_row_size(t, n_in), blk_bytes = ggml_type_info(t).type_size;
    const int64_t nb = n_in / 32;
    for (int64_t row = 0; row < g.n_groups * kGroupRows; row++) {
        const int64_t group = row / kGroupRows;
        const int r = (int)(row % kGroupRows);
        const uint8_t* src = row < n_out ? (const uint8_t*)w + (size_t)row * row_bytes : nullptr;
        for (int64_t p = 0; p < g.n_pairs; p++) {
            const PairSlot s = pair_slot(g, t, base, group, p, r);
            if (!src) {  // padding row: zero quants (Q8_0: q = 0), zero scales
                if (t == GgmlType::Q8_0) memset(s.quants, 128, g.quant_bytes);
                continue;
            }
            const BlockParts a = read_block(t, src + (size_t)(2 * p) * blk_bytes);
            if (2 * p + 1 < nb) {
                const BlockParts b = read_block(t, src + (size_t)(2 * p + 1) * blk_bytes);
                store_pair(t, s, a, &b);
            } else {
                store_pair(t, s, a, nullptr);
            }
        }
    }
    out.layout = WeightLayout::rows4;
    return out;
}

void unpack_row(GgmlType t, WeightLayout l, const void* w, int64_t n_out, int64_t n_in, int64_t row, void* dst) {
    const size_t row_bytes = ggml_row_size(t, n_in);
    if (l == WeightLayout::gguf) {
        memcpy(dst, (const uint8_t*)w + (size_t)row * row_bytes, row_bytes);
        return;
    }
    const Rows4Geometry g = rows4_geometry(t, n_out, n_in);
    const size_t blk_bytes = ggml_type_info(t).type_size;
    const int64_t nb = n_in / 32;
    for (int64_t b = 0; b < nb; b++) {
        const PairSlot s = pair_slot(g, t, (uint8_t*)w, row / kGroupRows, b / 2, (int)(row % kGroupRows));
        write_block(t, load_block(t, s, (int)(b % 2)), (uint8_t*)dst + (size_t)b * blk_bytes);
    }
}

}  // namespace bee
