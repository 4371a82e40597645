#version 450
// gpu/shaders/silu_mul: gated FFN activation x = silu(x) * y = x / (1 + exp(-x)) * y (kernels silu_mul).
layout(local_size_x = 256) in;

layout(std430, binding = 0) buffer XBuf { float X[]; };           // (n) gate, overwritten
layout(std430, binding = 1) readonly buffer YBuf { float Yv[]; }; // (n) up

layout(push_constant) uniform Push {
    uint n;
    uint groups_x;  // workgroups along x: element = (wg.y * groups_x + wg.x) * 256 + tid
} p;

void main() {
    const uint i = (gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x) * 256u + gl_LocalInvocationID.x;
    if (i >= p.n) return;
    const float x = X[i];
    X[i] = (x / (1.0 + exp(-x))) * Yv[i];
}
