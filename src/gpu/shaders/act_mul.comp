#version 450
// gpu/shaders/act_mul: gated FFN activation x = act(x) * y (kernels silu_mul / gelu_tanh_mul): act 0 is
// SiLU x / (1 + exp(-x)), act 1 the tanh approximation of GELU.
layout(local_size_x = 256) in;

layout(std430, binding = 0) buffer XBuf { float X[]; };           // (n) gate, overwritten
layout(std430, binding = 1) readonly buffer YBuf { float Yv[]; }; // (n) up

layout(push_constant) uniform Push {
    uint n;
    uint groups_x;  // workgroups along x: element = (wg.y * groups_x + wg.x) * 256 + tid
    uint act;       // 0 silu, 1 gelu_tanh
} p;

void main() {
    const uint i = (gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x) * 256u + gl_LocalInvocationID.x;
    if (i >= p.n) return;
    const float x = X[i];
    float a;
    if (p.act == 0u) {
        a = x / (1.0 + exp(-x));
    } else {
        // note: tanh's argument clamped to [-10, 10] (tanh(10) is 1.0f) so no driver's exp-based tanh overflows
        const float u = clamp(0.79788456080286535587989211986876 * x * (1.0 + 0.044715 * x * x), -10.0, 10.0);
        a = 0.5 * x * (1.0 + tanh(u));
    }
    X[i] = a * Yv[i];
}
