#version 450
#extension GL_GOOGLE_include_directive : require
// gpu/shaders/attention_q: attention.comp over a KV cache of any KvCache type (kv_read.glsl; K and V each
// their own type), read in KvCache's row layout. As on
// the CPU (kernels/attention.cpp): the query is zero-padded to K's block and rotated once per head when K is
// stored rotated (k_rot: kv_rot_group, or the TurboQuant group), scores are dot products with the stored
// values, V is accumulated in its stored domain and the sum un-rotated once (v_rot). The same fixed tiles and
// reduction orders as attention.comp, so a row's output depends only on its own list.
#include "kv_types.glsl"
#include "kv_math.glsl"
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer QBuf { float Q[]; };        // (n_rows, n_head, head_dim)
layout(std430, binding = 1) readonly buffer KBuf { uint K[]; };         // (n_cells, k_row_bytes) bytes
layout(std430, binding = 2) readonly buffer VBuf { uint V[]; };         // (n_cells, v_row_bytes) bytes
layout(std430, binding = 3) readonly buffer OffBuf { uint Off[]; };     // (n_rows + 1)
layout(std430, binding = 4) readonly buffer CellBuf { uint Cells[]; };  // visible cells, ascending position per row
layout(std430, binding = 5) writeonly buffer OBuf { float O[]; };       // row r at r * o_stride, heads side by side
layout(std430, binding = 6) readonly buffer KTabBuf { float KTab[]; };  // K's centroids / codebook
layout(std430, binding = 7) readonly buffer VTabBuf { float VTab[]; };  // V's

// The type codes again, as specialization constants (gpu/ops.cpp: one pipeline per pair).
layout(constant_id = 0) const uint K_TYPE = 0u;
layout(constant_id = 1) const uint V_TYPE = 0u;

layout(push_constant) uniform Push {
    uint n_head, n_head_kv, head_dim, o_stride;
    float scale, cap;
    uint groups_x;
    uint k_type, k_bits, k_blk, k_bb, k_head_bytes, k_row_bytes, k_pd, k_rot;
    uint v_type, v_bits, v_blk, v_bb, v_head_bytes, v_row_bytes, v_pd, v_rot;
    float k_rs, v_rs;  // 1/sqrtf(k_rot), 1/sqrtf(v_rot)
} p;

#define KVB K
#define KVT KTab
#define KVF(name) k_##name
#include "kv_read.glsl"
#undef KVB
#undef KVT
#undef KVF
#define KVB V
#define KVT VTab
#define KVF(name) v_##name
#include "kv_read.glsl"

const uint TILE = 64u, MAX_D = 256u, PER_THREAD = MAX_D / TILE;

shared float qs[MAX_D];
shared float prob[TILE];
shared float red[TILE];

#define ROT_BUF qs
#include "kv_rotate.glsl"

// q · the K head at byte kb, over the padded head in element order (q8_0 and q4_0 a block at a time, their
// scale read once and the quants a word at a time; the same products and sums as element by element).
float k_dot(uint kb) {
    float dot = 0.0;
    if (K_TYPE == KV_Q8_0 || K_TYPE == KV_Q4_0) {
        for (uint b = 0u; b < p.k_pd / 32u; b++) {
            const uint bo = kb + b * p.k_bb, x0 = b * 32u;
            const float d = k_f16(bo);
            for (uint w = 0u; w < (K_TYPE == KV_Q8_0 ? 8u : 4u); w++) {
                const uint word = k_word2(bo + 2u + 4u * w);
                for (uint k = 0u; k < 4u; k++) {
                    if (K_TYPE == KV_Q8_0) {
                        dot += qs[x0 + 4u * w + k] * (float(int(word << (24u - 8u * k)) >> 24) * d);
                    } else {
                        const uint byte = (word >> (8u * k)) & 0xFFu;
                        dot += qs[x0 + 4u * w + k] * (float(int(byte & 15u) - 8) * d);
                    }
                }
            }
            if (K_TYPE == KV_Q4_0)  // the high nibbles: elements 16..31, after the low ones as in element order
                for (uint w = 0u; w < 4u; w++) {
                    const uint word = k_word2(bo + 2u + 4u * w);
                    for (uint k = 0u; k < 4u; k++)
                        dot += qs[x0 + 16u + 4u * w + k] * (float(int((word >> (8u * k + 4u)) & 15u) - 8) * d);
                }
        }
        return dot;
    }
    if (K_TYPE == KV_F16 || K_TYPE == KV_F32 || K_TYPE == KV_BF16) {
        for (uint i = 0u; i < p.k_pd; i++) dot += qs[i] * k_elem(kb, i, K_TYPE, p.k_bits, p.k_blk, p.k_bb);
        return dot;
    }
    for (uint b = 0u; b < p.k_pd / p.k_blk; b++) {  // other block types: the scale read once per block
        const uint bo = kb + b * p.k_bb, x0 = b * p.k_blk;
        const float d = k_f16(bo);
        for (uint j = 0u; j < p.k_blk; j++) dot += qs[x0 + j] * k_bval(bo, j, d, K_TYPE, p.k_bits, p.k_blk);
    }
    return dot;
}

void reduce(uint tid, bool is_max) {
    barrier();
    for (uint step = TILE / 2u; step > 0u; step >>= 1) {
        if (tid < step) red[tid] = is_max ? max(red[tid], red[tid + step]) : red[tid] + red[tid + step];
        barrier();
    }
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint unit = gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x;
    const uint r = unit / p.n_head, h = unit - r * p.n_head;
    const uint kvh = h / (p.n_head / p.n_head_kv), hd = p.head_dim;
    for (uint i = tid; i < p.k_pd; i += TILE) qs[i] = i < hd ? Q[(r * p.n_head + h) * hd + i] : 0.0;
    barrier();
    if (p.k_rot > 0u) rotate_groups(p.k_pd, p.k_rot, false, p.k_rs);
    const uint beg = Off[r], end = Off[r + 1u];
    float m = -3.402823466e38, l = 0.0;
    float acc[PER_THREAD];
    for (uint j = 0u; j < PER_THREAD; j++) acc[j] = 0.0;
    for (uint t0 = beg; t0 < end; t0 += TILE) {
        const uint n_t = min(TILE, end - t0);
        float s = -3.402823466e38;
        if (tid < n_t) {
            const uint kb = Cells[t0 + tid] * p.k_row_bytes + kvh * p.k_head_bytes;
            s = k_dot(kb) * p.scale;
            if (p.cap > 0.0) s = p.cap * tanh(s / p.cap);
        }
        red[tid] = s;
        reduce(tid, true);
        const float m_new = max(m, red[0]);
        const float corr = exp(m - m_new);
        const float e = tid < n_t ? exp(s - m_new) : 0.0;
        barrier();
        prob[tid] = e;
        red[tid] = e;
        reduce(tid, false);
        l = l * corr + red[0];
        m = m_new;
        for (uint j = 0u; j < PER_THREAD; j++) {
            const uint d = tid + j * TILE;
            if (d >= p.v_pd) break;
            float a = acc[j] * corr;
            for (uint c = 0u; c < n_t; c++) {
                const uint vb = Cells[t0 + c] * p.v_row_bytes + kvh * p.v_head_bytes;
                a += prob[c] * v_elem(vb, d, V_TYPE, p.v_bits, p.v_blk, p.v_bb);
            }
            acc[j] = a;
        }
        barrier();
    }
    // The V sum back from its rotated domain (through qs, free now), then normalised.
    for (uint j = 0u; j < PER_THREAD; j++) {
        const uint d = tid + j * TILE;
        if (d < p.v_pd) qs[d] = acc[j];
    }
    barrier();
    if (p.v_rot > 0u) rotate_groups(p.v_pd, p.v_rot, true, p.v_rs);
    const float inv = l > 0.0 ? 1.0 / l : 0.0;
    for (uint d = tid; d < hd; d += TILE) O[r * p.o_stride + h * hd + d] = qs[d] * inv;
}
