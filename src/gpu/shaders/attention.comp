#version 450
// gpu/shaders/attention: softmax(scale · q·kᵀ, soft-capped when cap > 0) · V over each query row's visible
// cells of an f16 KV cache (kernels/ref attention), one workgroup per (row, query head). The row's list is
// walked in tiles of 64 cells with an online softmax (running max and sum, accumulators rescaled per
// tile); every score, tile reduction and accumulation runs in one fixed order that depends only on the
// row's own list, so a row's output does not depend on the batch around it.
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer QBuf { float Q[]; };        // (n_rows, n_head, head_dim)
layout(std430, binding = 1) readonly buffer KBuf { uint K[]; };         // (n_cells, n_head_kv, head_dim / 2) f16 pairs
layout(std430, binding = 2) readonly buffer VBuf { uint V[]; };         // (n_cells, n_head_kv, head_dim / 2) f16 pairs
layout(std430, binding = 3) readonly buffer OffBuf { uint Off[]; };     // (n_rows + 1) row r's cells: Cells[Off[r]..Off[r+1])
layout(std430, binding = 4) readonly buffer CellBuf { uint Cells[]; };  // visible cells, ascending position per row
layout(std430, binding = 5) writeonly buffer OBuf { float O[]; };       // row r at r * o_stride, heads side by side

layout(push_constant) uniform Push {
    uint n_head, n_head_kv, head_dim;  // head_dim even, <= 256
    uint o_stride;
    float scale, cap;
    uint groups_x;  // workgroup (row, head) = wg.y * groups_x + wg.x, head fastest
} p;

const uint TILE = 64u, MAX_D = 256u, PER_THREAD = MAX_D / TILE;

shared float qs[MAX_D];
shared float prob[TILE];
shared float red[TILE];

// Fixed-tree reduction of red[] into red[0] (maximum or sum); red[0] is read after the final barrier.
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
    const uint kvh = h / (p.n_head / p.n_head_kv), hd = p.head_dim, hw = hd / 2u;
    for (uint i = tid; i < hd; i += TILE) qs[i] = Q[(r * p.n_head + h) * hd + i];
    const uint beg = Off[r], end = Off[r + 1u];
    float m = -3.402823466e38, l = 0.0;
    float acc[PER_THREAD];
    for (uint j = 0u; j < PER_THREAD; j++) acc[j] = 0.0;
    barrier();
    for (uint t0 = beg; t0 < end; t0 += TILE) {
        const uint n_t = min(TILE, end - t0);
        float s = -3.402823466e38;
        if (tid < n_t) {
            const uint kb = (Cells[t0 + tid] * p.n_head_kv + kvh) * hw;
            float dot = 0.0;
            for (uint i = 0u; i < hw; i++) {
                const vec2 k2 = unpackHalf2x16(K[kb + i]);
                dot += qs[2u * i] * k2.x;
                dot += qs[2u * i + 1u] * k2.y;
            }
            s = dot * p.scale;
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
            if (d >= hd) break;
            float a = acc[j] * corr;
            for (uint c = 0u; c < n_t; c++) {
                const vec2 v2 = unpackHalf2x16(V[(Cells[t0 + c] * p.n_head_kv + kvh) * hw + d / 2u]);
                a += prob[c] * ((d & 1u) != 0u ? v2.y : v2.x);
            }
            acc[j] = a;
        }
        barrier();
    }
    for (uint j = 0u; j < PER_THREAD; j++) {
        const uint d = tid + j * TILE;
        if (d < hd) O[r * p.o_stride + h * hd + d] = l > 0.0 ? acc[j] / l : 0.0;
    }
}
