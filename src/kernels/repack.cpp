// kernels/repack: GGUF rows <-> the rows16 layout (kernels/repack.h). Plain byte moves, no ISA flags: the
// tile kernels that read it are in x86/gemm_rows16_avx512.cpp and x86/gemm_rows16_k_avx512.cpp.
#include "kernels/repack.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "base/fp16.h"
#include "kernels/gemm.h"
#include "quant/blocks.h"

namespace bee {

namespace {

constexpr int kGroup16Rows = 16;

// The K-quants' rows16 layout: each GGUF block transposed into 4-byte words (the last one zero-padded).
bool word_layout(GgmlType t) {
    return t == GgmlType::Q2_K || t == GgmlType::Q3_K || t == GgmlType::Q4_K || t == GgmlType::Q5_K ||
           t == GgmlType::Q6_K;
}
size_t block_words(GgmlType t) { return (ggml_type_info(t).type_size + 3) / 4; }

// Word i of row l's block b of group g sits at quants_at(g, b) + 64 i + 4 l; to_rows16 copies a GGUF block
// `blk` there, or back.
void move_block_words(GgmlType t, const Rows16Geometry& g, uint8_t* base, int64_t group, int64_t b, int l, uint8_t* blk,
                      bool to_rows16) {
    const size_t size = ggml_type_info(t).type_size;
    uint8_t* q = base + g.quants_at(group, b) + 4 * l;
    for (size_t i = 0; 4 * i < size; i++) {
        const size_t len = size - 4 * i < 4 ? size - 4 * i : 4;
        if (to_rows16) memcpy(q + 64 * i, blk + 4 * i, len);
        else memcpy(blk + 4 * i, q + 64 * i, len);
    }
}

// One 32-element block of a rows16 type, as plain parts.
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
        case GgmlType::Q5_0:
        case GgmlType::Q5_1: {
            const bool one = t == GgmlType::Q5_1;
            const uint8_t* qs = one ? ((const BlockQ5_1*)blk)->qs : ((const BlockQ5_0*)blk)->qs;
            uint32_t qh;
            memcpy(&qh, one ? ((const BlockQ5_1*)blk)->qh : ((const BlockQ5_0*)blk)->qh, 4);
            b.d = one ? ((const BlockQ5_1*)blk)->d : ((const BlockQ5_0*)blk)->d;
            if (one) b.m = ((const BlockQ5_1*)blk)->m;
            for (int j = 0; j < 16; j++) {
                b.u[j] = (uint8_t)((qs[j] & 0x0F) | ((qh >> j) & 1) << 4);
                b.u[j + 16] = (uint8_t)((qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4);
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
        case GgmlType::Q5_0:
        case GgmlType::Q5_1: {
            const bool one = t == GgmlType::Q5_1;
            uint8_t* qs = one ? ((BlockQ5_1*)blk)->qs : ((BlockQ5_0*)blk)->qs;
            uint32_t qh = 0;
            for (int j = 0; j < 32; j++) qh |= (uint32_t)(b.u[j] >> 4) << j;
            if (one) {
                ((BlockQ5_1*)blk)->d = b.d;
                ((BlockQ5_1*)blk)->m = b.m;
            } else {
                ((BlockQ5_0*)blk)->d = b.d;
            }
            memcpy(one ? ((BlockQ5_1*)blk)->qh : ((BlockQ5_0*)blk)->qh, &qh, 4);
            for (int j = 0; j < 16; j++) qs[j] = (uint8_t)((b.u[j] & 0x0F) | (b.u[j + 16] & 0x0F) << 4);
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

// Row l of block b of group g in a rows16 matrix: stores parts p (nullptr: a padding row).
void store_block16(const Rows16Geometry& g, GgmlType t, uint8_t* base, int64_t group, int64_t b, int l,
                   const BlockParts* p) {
    uint8_t* q = base + g.quants_at(group, b) + 4 * l;
    fp16_t* sc = (fp16_t*)(base + g.scales_at(group, b));
    if (t == GgmlType::Q8_0) {
        for (int k = 0; k < 8; k++)
            for (int j = 0; j < 4; j++) q[64 * k + j] = p ? p->u[4 * k + j] : 128;  // padding: q = 0
    } else if (p) {
        for (int v = 0; v < 4; v++)
            for (int j = 0; j < 4; j++)
                q[64 * v + j] = (uint8_t)((p->u[4 * v + j] & 0x0F) | (p->u[16 + 4 * v + j] & 0x0F) << 4);
        if (g.quant_bytes == 320) {  // 5-bit types: the row's 32 5th bits after the nibbles
            uint32_t qh = 0;
            for (int e = 0; e < 32; e++) qh |= (uint32_t)(p->u[e] >> 4) << e;
            memcpy(q + 256, &qh, 4);
        }
    }
    if (!p) return;
    sc[l] = p->d;
    if (t == GgmlType::Q4_1 || t == GgmlType::Q5_1) sc[16 + l] = p->m;
}

BlockParts load_block16(const Rows16Geometry& g, GgmlType t, const uint8_t* base, int64_t group, int64_t b, int l) {
    BlockParts p;
    const uint8_t* q = base + g.quants_at(group, b) + 4 * l;
    const fp16_t* sc = (const fp16_t*)(base + g.scales_at(group, b));
    uint32_t qh = 0;
    if (g.quant_bytes == 320) memcpy(&qh, q + 256, 4);
    for (int k = 0; k < 8; k++)
        for (int j = 0; j < 4; j++) {
            if (t == GgmlType::Q8_0) {
                p.u[4 * k + j] = q[64 * k + j];
            } else {
                const uint8_t x = q[64 * (k % 4) + j];
                p.u[4 * k + j] = (uint8_t)((k < 4 ? x & 0x0F : x >> 4) | ((qh >> (4 * k + j)) & 1) << 4);
            }
        }
    p.d = sc[l];
    if (t == GgmlType::Q4_1 || t == GgmlType::Q5_1) p.m = sc[16 + l];
    return p;
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
        case WeightLayout::rows16: return "rows16";
    }
    return "?";
}

Rows16Geometry rows16_geometry(GgmlType t, int64_t n_out, int64_t n_in) {
    Rows16Geometry g;
    switch (t) {
        case GgmlType::Q4_0: g.quant_bytes = 256, g.scale_bytes = 32; break;
        case GgmlType::Q4_1: g.quant_bytes = 256, g.scale_bytes = 64; break;
        case GgmlType::Q5_0: g.quant_bytes = 320, g.scale_bytes = 32; break;
        case GgmlType::Q5_1: g.quant_bytes = 320, g.scale_bytes = 64; break;
        case GgmlType::Q8_0: g.quant_bytes = 512, g.scale_bytes = 32; break;
        case GgmlType::Q2_K:
        case GgmlType::Q3_K:
        case GgmlType::Q4_K:
        case GgmlType::Q5_K:
        case GgmlType::Q6_K: g.quant_bytes = 64 * block_words(t); break;  // words only, no scale section
        default: return g;
    }
    g.n_groups = (n_out + kGroup16Rows - 1) / kGroup16Rows;
    g.n_blocks = n_in / ggml_type_info(t).block_size;
    return g;
}

WeightLayout preferred_layout(GgmlType t) {
    if (repack_disabled()) return WeightLayout::gguf;
    return gemm_kernel_for(t, WeightLayout::rows16) ? WeightLayout::rows16 : WeightLayout::gguf;
}

RepackedWeight repack_weight(GgmlType t, const void* w, int64_t n_out, int64_t n_in) {
    RepackedWeight out;
    if (preferred_layout(t) != WeightLayout::rows16) return out;
    const Rows16Geometry g = rows16_geometry(t, n_out, n_in);
    out.bytes = g.total_bytes();
    out.data.reset(new (std::align_val_t(64)) uint8_t[out.bytes]);
    uint8_t* base = out.data.get();
    memset(base, 0, out.bytes);
    const size_t row_bytes = ggml_row_size(t, n_in), blk_bytes = ggml_type_info(t).type_size;
    if (word_layout(t)) {  // padding rows stay zero
        for (int64_t row = 0; row < n_out; row++)
            for (int64_t b = 0; b < g.n_blocks; b++)
                move_block_words(t, g, base, row / kGroup16Rows, b, (int)(row % kGroup16Rows),
                                 (uint8_t*)w + (size_t)row * row_bytes + (size_t)b * blk_bytes, true);
        out.layout = WeightLayout::rows16;
        return out;
    }
    for (int64_t row = 0; row < g.n_groups * kGroup16Rows; row++) {
        const uint8_t* src = row < n_out ? (const uint8_t*)w + (size_t)row * row_bytes : nullptr;
        for (int64_t b = 0; b < g.n_blocks; b++) {
            const BlockParts p = src ? read_block(t, src + (size_t)b * blk_bytes) : BlockParts{};
            store_block16(g, t, base, row / kGroup16Rows, b, (int)(row % kGroup16Rows), src ? &p : nullptr);
        }
    }
    out.layout = WeightLayout::rows16;
    return out;
}

void unpack_row(GgmlType t, WeightLayout l, const void* w, int64_t n_out, int64_t n_in, int64_t row, void* dst) {
    const size_t row_bytes = ggml_row_size(t, n_in);
    if (l == WeightLayout::gguf) {
        memcpy(dst, (const uint8_t*)w + (size_t)row * row_bytes, row_bytes);
        return;
    }
    const Rows16Geometry g = rows16_geometry(t, n_out, n_in);
    const size_t blk_bytes = ggml_type_info(t).type_size;
    if (word_layout(t)) {
        for (int64_t b = 0; b < g.n_blocks; b++)
            move_block_words(t, g, (uint8_t*)w, row / kGroup16Rows, b, (int)(row % kGroup16Rows),
                             (uint8_t*)dst + (size_t)b * blk_bytes, false);
        return;
    }
    for (int64_t b = 0; b < g.n_blocks; b++)
        write_block(t, load_block16(g, t, (const uint8_t*)w, row / kGroup16Rows, b, (int)(row % kGroup16Rows)),
                    (uint8_t*)dst + (size_t)b * blk_bytes);
}

}  // namespace bee
