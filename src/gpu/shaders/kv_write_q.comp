#version 450
#extension GL_GOOGLE_include_directive : require
// gpu/shaders/kv_write_q: f32 K or V rows quantized into their KV cells in KvCache's row layout (kv/kv_cache.cpp
// encode): f32, bf16, the legacy blocks q8_0 q4_0 q4_1 q5_0 q5_1 (Hadamard-rotated first when rot > 0,
// kv_rot_group) and the scalar TurboQuant types
// (quant/turbo.cpp turbo_encode_group). One workgroup per (row, kv head). The CPU's arithmetic step by step:
// its divisions and square roots correctly rounded (kv_math.glsl), the group norm's double sum of squares as
// an exact float-float sum, f16 rounding in integers (f16.glsl); so the bytes are the CPU's (a TurboQuant norm
// can differ by one ulp only where the exact value sits within ~2^-40 of a rounding boundary).
// Rows of cells may share a 32-bit word with other cells (block sizes are only even), so bytes are stored
// with atomicAnd / atomicOr on their own lanes (core Vulkan 1.0 for storage buffers in compute).
#include "f16.glsl"
#include "kv_types.glsl"
#include "kv_math.glsl"
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer XBuf { float X[]; };      // (n_rows, x_stride)
layout(std430, binding = 1) readonly buffer CellBuf { uint Cells[]; }; // (n_rows) cell of each row
layout(std430, binding = 2) buffer KvBuf { uint Kv[]; };               // (n_cells, row_bytes) bytes
layout(std430, binding = 3) readonly buffer TabBuf { float Tab[]; };   // TurboQuant centroids

layout(push_constant) uniform Push {
    uint n_rows, n_head_kv, head_dim, x_stride;
    uint type, bits, blk, bb;     // KV_* code, index bits, values and bytes per block
    uint head_bytes, row_bytes;   // bytes of one head / one cell
    uint pd;                      // head_dim rounded up to the block
    uint rot;                     // rotation group of q8_0 / q4_0 (0: none)
    float rs;                     // 1/sqrtf(rotation group) (rot, or blk for TurboQuant)
    float alpha;                  // TurboQuant norm alpha (turbo_v_alpha for V, else 1)
    uint groups_x;
} p;

shared float xs[256];
shared uint qidx[256];
shared float gnorm[4];

#define ROT_BUF xs
#include "kv_rotate.glsl"

void put_byte(uint o, uint v) {
    const uint sh = (o & 3u) * 8u;
    atomicAnd(Kv[o >> 2u], ~(0xFFu << sh));
    atomicOr(Kv[o >> 2u], (v & 0xFFu) << sh);
}
void put_u16(uint o, uint v) {  // o even
    const uint sh = (o & 2u) * 8u;
    atomicAnd(Kv[o >> 2u], ~(0xFFFFu << sh));
    atomicOr(Kv[o >> 2u], (v & 0xFFFFu) << sh);
}

// roundf: half away from zero.
int round_away(float v) {
    const float t = trunc(v);
    precise float f = abs(v - t);
    return int(t) + (f >= 0.5 ? (v < 0.0 ? -1 : 1) : 0);
}

void block_q8_0(uint bo, uint x0) {
    float amax = 0.0;
    for (uint j = 0u; j < 32u; j++) amax = abs(xs[x0 + j]) > amax ? abs(xs[x0 + j]) : amax;
    const float d = div_rn(amax, 127.0);
    const float id = d != 0.0 ? div_rn(1.0, d) : 0.0;
    put_u16(bo, f32_to_f16(d));
    for (uint j = 0u; j < 32u; j += 2u) {
        precise float a = xs[x0 + j] * id, b = xs[x0 + j + 1u] * id;
        const int qa = clamp(round_away(a), -128, 127), qb = clamp(round_away(b), -128, 127);
        put_u16(bo + 2u + j, (uint(qa) & 0xFFu) | ((uint(qb) & 0xFFu) << 8u));
    }
}

int trunc_clamp(float v, int hi) {
    if (!(v >= 0.0)) return 0;
    if (v >= float(hi)) return hi;
    return int(v);
}

// q4_0 q4_1 q5_0 q5_1 (quant/quant_legacy.cpp quantize_row_*): symmetric d = signed absmax / -2^(bits-1),
// affine d = (max - min) / (2^bits - 1) with m = min; quants truncated from q + 0.5 into [0, 2^bits - 1].
void block_legacy(uint type, uint bo, uint x0) {
    const bool affine = kv_affine(type), five = kv_five(type);
    const int hi = five ? 31 : 15;
    float d, mn = 0.0;
    if (affine) {
        float lo = xs[x0], up = xs[x0];
        for (uint j = 1u; j < 32u; j++) {
            if (xs[x0 + j] < lo) lo = xs[x0 + j];
            if (xs[x0 + j] > up) up = xs[x0 + j];
        }
        precise float range = up - lo;
        d = div_rn(range, five ? 31.0 : 15.0);
        mn = lo;
    } else {
        float amax = 0.0, mx = 0.0;
        for (uint j = 0u; j < 32u; j++)
            if (amax < abs(xs[x0 + j])) {
                amax = abs(xs[x0 + j]);
                mx = xs[x0 + j];
            }
        precise float dd = mx * (five ? -0.0625 : -0.125);  // / -16 or / -8, exact
        d = dd;
    }
    const float id = d != 0.0 ? div_rn(1.0, d) : 0.0;
    const float bias = affine ? 0.5 : (five ? 16.5 : 8.5);
    uint q[32];
    for (uint j = 0u; j < 32u; j++) {
        precise float v = (affine ? (xs[x0 + j] - mn) : xs[x0 + j]) * id + bias;
        q[j] = uint(trunc_clamp(v, hi));
    }
    put_u16(bo, f32_to_f16(d));
    if (affine) put_u16(bo + 2u, f32_to_f16(mn));
    if (five) {
        uint h = 0u;
        for (uint j = 0u; j < 32u; j++) h |= (q[j] >> 4) << j;
        put_u16(bo + (affine ? 4u : 2u), h & 0xFFFFu);
        put_u16(bo + (affine ? 6u : 4u), h >> 16);
    }
    const uint qs = bo + kv_qs_off(type);
    for (uint j = 0u; j < 16u; j += 2u)
        put_u16(qs + j, (q[j] & 15u) | ((q[j + 16u] & 15u) << 4) | ((q[j + 1u] & 15u) << 8) | ((q[j + 17u] & 15u) << 12));
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint unit = gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x;
    if (unit >= p.n_rows * p.n_head_kv) return;  // uniform per workgroup
    const uint r = unit / p.n_head_kv, h = unit - r * p.n_head_kv;
    const uint hb = Cells[r] * p.row_bytes + h * p.head_bytes;
    for (uint i = tid; i < p.pd; i += 64u) xs[i] = i < p.head_dim ? X[r * p.x_stride + h * p.head_dim + i] : 0.0;
    barrier();
    if (p.type == KV_F32 || p.type == KV_BF16) {  // quant/quant_float.cpp: as is, or bf16 rounded to nearest even
        for (uint i = tid; i < p.head_dim; i += 64u) {
            const uint u = floatBitsToUint(xs[i]);
            if (p.type == KV_F32) Kv[(hb >> 2u) + i] = u;
            else put_u16(hb + 2u * i, (u & 0x7FFFFFFFu) > 0x7F800000u ? (u >> 16) | 64u : (u + (0x7FFFu + ((u >> 16) & 1u))) >> 16);
        }
        return;
    }
    const uint n_blocks = p.pd / p.blk;
    if (p.type != KV_TURBO) {
        if (p.rot > 0u) rotate_groups(p.pd, p.rot, false, p.rs);
        if (tid < n_blocks) {
            if (p.type == KV_Q8_0) block_q8_0(hb + tid * p.bb, tid * 32u);
            else block_legacy(p.type, hb + tid * p.bb, tid * 32u);
        }
        return;
    }
    // TurboQuant: per group the norm (double sum of squares on the CPU: here exact products summed as
    // float-float), the unit vector rotated, each value's nearest centroid, the norm correction.
    const uint g = p.blk;
    if (tid < n_blocks) {
        float hi = 0.0, lo = 0.0;
        for (uint j = 0u; j < g; j++) {
            float pp, e, s, t;
            two_prod(xs[tid * g + j], xs[tid * g + j], pp, e);
            two_sum(hi, pp, s, t);
            hi = s;
            precise float l2 = lo + (t + e);
            lo = l2;
        }
        gnorm[tid] = sqrt_rn(hi, lo);
    }
    barrier();
    for (uint i = tid; i < p.pd; i += 64u) {
        const float n = gnorm[i / g];
        const float inv = n > 1e-10 ? div_rn(1.0, n) : 0.0;
        precise float y = xs[i] * inv;
        xs[i] = y;
    }
    barrier();
    rotate_groups(p.pd, g, false, p.rs);
    const uint n_c = 1u << p.bits;
    for (uint i = tid; i < p.pd; i += 64u) {
        uint idx = 0u;
        for (uint c = 0u; c + 1u < n_c; c++) {
            precise float mid = 0.5 * (Tab[c] + Tab[c + 1u]);
            idx += xs[i] >= mid ? 1u : 0u;
        }
        qidx[i] = idx;
    }
    barrier();
    if (tid >= n_blocks) return;
    const uint bo = hb + tid * p.bb, x0 = tid * g;
    float r2 = 0.0;
    for (uint j = 0u; j < g; j++) {
        precise float c = Tab[qidx[x0 + j]];
        precise float s = r2 + c * c;
        r2 = s;
    }
    const float rn = sqrt_rn(r2, 0.0), n = gnorm[tid];
    precise float stored = (rn > 1e-10 ? div_rn(n, rn) : n) * p.alpha;
    put_u16(bo, f32_to_f16(stored));
    const uint qs = bo + 2u;
    if (p.bits == 4u) {
        for (uint j = 0u; j < g; j += 4u)
            put_u16(qs + j / 2u, qidx[x0 + j] | (qidx[x0 + j + 1u] << 4) | (qidx[x0 + j + 2u] << 8) |
                                     (qidx[x0 + j + 3u] << 12));
        return;
    }
    for (uint j = 0u; j < g; j += 8u) {
        uint two = 0u;
        for (uint k = 0u; k < 8u; k++) two |= (qidx[x0 + j + k] & 3u) << (2u * k);
        put_u16(qs + j / 4u, two);
    }
    if (p.bits == 3u)
        for (uint j = 0u; j < g; j += 16u) {
            uint two = 0u;
            for (uint k = 0u; k < 16u; k++) two |= ((qidx[x0 + j + k] >> 2) & 1u) << k;
            put_u16(qs + g / 4u + j / 8u, two);
        }
}
