// gpu/shaders/matmul_main: the matmul driver; a matmul_<type>.comp defines ROW_BYTES(n_in) and
// dequant_unit(row_byte, u, out vec4 w[8]) (elements 32u..32u+31 of the row, zero past n_in), then includes this.
// One workgroup per W row and per 8 X rows (wg.z); each thread takes 32-element units u = tid, tid+64, ...
// and keeps one f32 sum per X row; the sums are reduced in shared memory in a fixed tree, or (BEE_SUBGROUP, the
// *_sg build) by subgroupAdd and then across subgroups in order.
// note: a row's result depends only on its own X row, never on n_tok (batch invariance).

const uint WG = 64u;
const uint TOK = 8u;  // X rows per workgroup
shared float partial[TOK][WG];

void main() {
    const uint row = gl_WorkGroupID.y * p.row_groups + gl_WorkGroupID.x;
    const uint tid = gl_LocalInvocationID.x;
    const uint t0 = gl_WorkGroupID.z * TOK;
    if (row >= p.n_out) return;  // whole workgroup: uniform, before any barrier
    const uint nt = min(TOK, p.n_tok - t0);
    const uint units = (p.n_in + 31u) / 32u;
    const uint row_byte = row * ROW_BYTES(p.n_in);

    // note: every loop over acc[] runs to the constant TOK so it unrolls and acc stays in registers.
    float acc[TOK];
    for (uint t = 0u; t < TOK; ++t) acc[t] = 0.0;
    for (uint u = tid; u < units; u += WG) {
        vec4 w[8];
        dequant_unit(row_byte, u, w);
        for (uint t = 0u; t < TOK; ++t) {
            if (t >= nt) break;
            const uint xb = ((t0 + t) * p.x_stride) / 4u + u * 8u;
            float s = 0.0;
            for (uint i = 0u; i < 8u; ++i) s += dot(w[i], X[xb + i]);
            acc[t] += s;
        }
    }
#ifdef BEE_SUBGROUP
    // note: subgroupAdd per X row, then the subgroups' sums in order: one barrier instead of log2(WG).
    for (uint t = 0u; t < TOK; ++t) {
        if (t >= nt) break;  // nt is uniform
        const float s = subgroupAdd(acc[t]);
        if (subgroupElect()) partial[t][gl_SubgroupID] = s;
    }
    barrier();
    if (tid < nt) {
        float s = 0.0;
        for (uint i = 0u; i < gl_NumSubgroups; ++i) s += partial[tid][i];
        Y[(t0 + tid) * p.y_stride + row] = s;
    }
#else
    for (uint t = 0u; t < TOK; ++t)
        if (t < nt) partial[t][tid] = acc[t];
    barrier();
    for (uint step = WG / 2u; step > 0u; step >>= 1) {
        if (tid < step)
            for (uint t = 0u; t < TOK; ++t)
                if (t < nt) partial[t][tid] += partial[t][tid + step];
        barrier();
    }
    if (tid < nt) Y[(t0 + tid) * p.y_stride + row] = partial[tid][0];
#endif
}
