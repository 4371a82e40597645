#version 450
#extension GL_GOOGLE_include_directive : require
// gpu/shaders/kv_write_tcq: f32 K or V rows encoded as TCQ TurboQuant blocks (quant/tcq.cpp tcq_encode inside
// quant/turbo.cpp turbo_encode_group) into their KV cells. One workgroup per (row, kv head, 128-value group):
// the norm and rotation as in kv_write_q, then the Viterbi pass over the 2^(6+k) trellis states with the
// CPU's operations and tie rules (thread t owns tail t: the best of its 2^k predecessors, strict < so the
// lowest j wins, then the cost of the 2^k states that share the tail), the backtrack, the bit stream and the
// corrected norm by one thread. Bytes are stored with atomics on their lanes (blocks are 51 / 35 bytes).
#include "f16.glsl"
#include "kv_types.glsl"
#include "kv_math.glsl"
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer XBuf { float X[]; };
layout(std430, binding = 1) readonly buffer CellBuf { uint Cells[]; };
layout(std430, binding = 2) buffer KvBuf { uint Kv[]; };
layout(std430, binding = 3) readonly buffer TabBuf { float Tab[]; };  // the codebook, 2^(6+k) values

layout(push_constant) uniform Push {
    uint n_rows, n_head_kv, head_dim, x_stride;
    uint type, bits, blk, bb;
    uint head_bytes, row_bytes;
    uint pd;
    uint rot;
    float rs;
    float alpha;
    uint groups_x;
} p;

shared float xs[128];
shared float cost[512];
shared uint bt[64 * 32];  // thread `tail` owns words tail * 32 .. +32: byte t % 4 of word t / 4 is bt[t][tail]
shared float gn;
shared uint qsw[16];      // the bit stream, 4 bytes a word

#define ROT_BUF xs
#include "kv_rotate.glsl"

void put_byte(uint o, uint v) {
    const uint sh = (o & 3u) * 8u;
    atomicAnd(Kv[o >> 2u], ~(0xFFu << sh));
    atomicOr(Kv[o >> 2u], (v & 0xFFu) << sh);
}

uint stream_byte(uint i) { return (qsw[i >> 2u] >> ((i & 3u) * 8u)) & 0xFFu; }
uint state_at(uint k, uint t) {  // quant/tcq.h tcq_state
    const uint bp = k * t;
    const uint w = stream_byte(bp >> 3u) | (stream_byte((bp >> 3u) + 1u) << 8u);
    return (w >> (bp & 7u)) & ((1u << (6u + k)) - 1u);
}
void put_bits(uint bit, uint v, uint nbits) {
    for (uint i = 0u; i < nbits; i++)
        if (((v >> i) & 1u) != 0u) qsw[(bit + i) >> 5u] |= 1u << ((bit + i) & 31u);
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint n_groups = p.pd / 128u;
    const uint unit = gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x;
    if (unit >= p.n_rows * p.n_head_kv * n_groups) return;
    const uint r = unit / (p.n_head_kv * n_groups), rest = unit - r * p.n_head_kv * n_groups;
    const uint h = rest / n_groups, gi = rest - h * n_groups;
    const uint bo = Cells[r] * p.row_bytes + h * p.head_bytes + gi * p.bb;
    for (uint i = tid; i < 128u; i += 64u) {
        const uint e = gi * 128u + i;
        xs[i] = e < p.head_dim ? X[r * p.x_stride + h * p.head_dim + e] : 0.0;
    }
    barrier();
    if (tid == 0u) {
        float hi = 0.0, lo = 0.0;
        for (uint j = 0u; j < 128u; j++) {
            float pp, e, s, t;
            two_prod(xs[j], xs[j], pp, e);
            two_sum(hi, pp, s, t);
            hi = s;
            precise float l2 = lo + (t + e);
            lo = l2;
        }
        gn = sqrt_rn(hi, lo);
    }
    barrier();
    const float n = gn;
    const float inv = n > 1e-10 ? div_rn(1.0, n) : 0.0;
    for (uint i = tid; i < 128u; i += 64u) {
        precise float y = xs[i] * inv;
        xs[i] = y;
    }
    barrier();
    rotate_groups(128u, 128u, false, p.rs);
    // Viterbi forward pass (quant/tcq.cpp tcq_viterbi_scalar).
    const uint k = p.bits, n_pred = 1u << k, n_states = 1u << (6u + k);
    for (uint s = tid; s < n_states; s += 64u) cost[s] = 0.0;
    for (uint w = 0u; w < 32u; w++) bt[tid * 32u + w] = 0u;
    barrier();
    const uint tail = tid;
    for (uint t = 0u; t < 128u; t++) {
        const uint c0 = tail << k;
        uint bj = 0u;
        for (uint j = 1u; j < n_pred; j++)
            if (cost[c0 + j] < cost[c0 + bj]) bj = j;
        const float best = cost[c0 + bj];
        bt[tail * 32u + t / 4u] |= bj << ((t & 3u) * 8u);
        barrier();
        for (uint m = 0u; m < n_pred; m++) {
            const uint ns = tail + 64u * m;
            precise float d = xs[t] - Tab[ns];
            precise float c = best + d * d;
            cost[ns] = c;
        }
        barrier();
    }
    if (tid != 0u) return;
    uint s = 0u;
    for (uint i = 1u; i < n_states; i++)
        if (cost[i] < cost[s]) s = i;
    for (uint w = 0u; w < 16u; w++) qsw[w] = 0u;
    // Backtrack: out_t = s >> 6, written straight into the stream; then the previous state.
    for (int t = 127; t >= 0; t--) {
        put_bits(6u + k * uint(t), s >> 6u, k);
        const uint tl = s & 63u;
        s = (tl << k) | ((bt[tl * 32u + uint(t) / 4u] >> ((uint(t) & 3u) * 8u)) & 0xFFu);
    }
    put_bits(0u, (s >> k) & 63u, 6u);
    float sq = 0.0;
    for (uint t = 0u; t < 128u; t++) {
        precise float c = Tab[state_at(k, t)];
        precise float s2 = sq + c * c;
        sq = s2;
    }
    const float rn = sqrt_rn(sq, 0.0);
    precise float stored = (rn > 1e-10 ? div_rn(n, rn) : n) * p.alpha;
    const uint hv = f32_to_f16(stored);
    put_byte(bo, hv);
    put_byte(bo + 1u, hv >> 8u);
    const uint n_bytes = (6u + 128u * k + 7u) / 8u;
    for (uint i = 0u; i < n_bytes; i++) put_byte(bo + 2u + i, stream_byte(i));
}
