#version 450
// gpu/shaders/eltwise: the residual add x += y, the scale x *= s and the bias add x[r] += b per row of
// n_cols (kernels add / scale), one element per thread.
layout(local_size_x = 256) in;

layout(std430, binding = 0) buffer XBuf { float X[]; };           // (n) or (n / n_cols rows, stride)
layout(std430, binding = 1) readonly buffer YBuf { float Yv[]; }; // (n) for add, (n_cols) for add_row

layout(push_constant) uniform Push {
    uint n;         // elements to touch
    uint n_cols;    // add_row: values per row
    uint stride;    // add_row: floats between rows of X
    uint op;        // 0 add, 1 scale, 2 add_row
    float s;        // scale
    uint groups_x;  // workgroups along x: element = (wg.y * groups_x + wg.x) * 256 + tid
} p;

void main() {
    const uint i = (gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x) * 256u + gl_LocalInvocationID.x;
    if (i >= p.n) return;
    if (p.op == 0u) {
        X[i] = X[i] + Yv[i];
    } else if (p.op == 1u) {
        X[i] = X[i] * p.s;
    } else {
        const uint r = i / p.n_cols, c = i - r * p.n_cols;
        X[r * p.stride + c] = X[r * p.stride + c] + Yv[c];
    }
}
