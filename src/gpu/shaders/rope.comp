#version 450
// gpu/shaders/rope: rotary position embedding in place (kernels/ref rope, ggml semantics with ext_factor 0):
// pair i of a head turns by the cos/sin of row r's table (Ops::rope_table, computed on the host as the CPU
// does); normal mode rotates (2i, 2i+1), neox (i, i + n_rot/2). One thread per (row, head, pair).
layout(local_size_x = 64) in;

layout(std430, binding = 0) buffer XBuf { float X[]; };           // (n_rows, n_head, head_dim)
layout(std430, binding = 1) readonly buffer CBuf { vec2 CS[]; };  // (n_rows, n_rot / 2): (cos, sin)

layout(push_constant) uniform Push {
    uint n_rows;
    uint n_head;
    uint head_dim;
    uint n_rot;
    uint neox;
    uint groups_x;      // workgroups along x
} p;

void main() {
    const uint half_rot = p.n_rot / 2u;
    const uint id = (gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x) * 64u + gl_LocalInvocationID.x;
    if (id >= p.n_rows * p.n_head * half_rot) return;
    const uint i = id % half_rot, head = (id / half_rot) % p.n_head, row = id / (half_rot * p.n_head);
    const vec2 cs = CS[row * half_rot + i];
    const uint base = (row * p.n_head + head) * p.head_dim;
    const uint i0 = p.neox != 0u ? i : 2u * i, i1 = p.neox != 0u ? i + half_rot : 2u * i + 1u;
    const float x0 = X[base + i0], x1 = X[base + i1];
    // note: precise keeps x0 * c - x1 * s unfused, as the CPU build computes it (-ffp-contract=off)
    precise float y0 = x0 * cs.x - x1 * cs.y;
    precise float y1 = x0 * cs.y + x1 * cs.x;
    X[base + i0] = y0;
    X[base + i1] = y1;
}
