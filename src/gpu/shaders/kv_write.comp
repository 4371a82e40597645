#version 450
// gpu/shaders/kv_write: rows of f32 K or V (n_rows, x_stride) stored as f16 into their KV cells
// (KvCache::write_k for an f16 cache: the same bytes), two values per thread.
#include "f16.glsl"
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer XBuf { float X[]; };      // (n_rows, x_stride)
layout(std430, binding = 1) readonly buffer CellBuf { uint Cells[]; }; // (n_rows) cell of each row
layout(std430, binding = 2) buffer KvBuf { uint Kv[]; };               // (n_cells, n_half) f16 pairs

layout(push_constant) uniform Push {
    uint n_rows;
    uint n_half;    // values per row / 2
    uint x_stride;  // floats between rows of X
    uint groups_x;
} p;

void main() {
    const uint i = (gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x) * 64u + gl_LocalInvocationID.x;
    if (i >= p.n_rows * p.n_half) return;
    const uint r = i / p.n_half, e = i - r * p.n_half;
    const uint src = r * p.x_stride + 2u * e;
    Kv[Cells[r] * p.n_half + e] = f32_to_f16(X[src]) | (f32_to_f16(X[src + 1u]) << 16);
}
