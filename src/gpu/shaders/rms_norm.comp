#version 450
// gpu/shaders/rms_norm: y = x / sqrt(mean(x²) + eps) * w per row (kernels/ref rms_norm), one workgroup per row.
layout(local_size_x = 128) in;

layout(std430, binding = 0) readonly buffer XBuf { float X[]; };   // (n_rows, stride)
layout(std430, binding = 1) readonly buffer WBuf { float Wt[]; };  // (n) scale; unread when has_w == 0
layout(std430, binding = 2) writeonly buffer YBuf { float Y[]; };  // (n_rows, stride); may be X's buffer

layout(push_constant) uniform Push {
    uint n;       // elements per row
    uint stride;  // floats between rows
    float eps;
    uint has_w;
} p;

shared float partial[128];

void main() {
    const uint tid = gl_LocalInvocationID.x, base = gl_WorkGroupID.x * p.stride;
    float s = 0.0;
    for (uint i = tid; i < p.n; i += 128u) s += X[base + i] * X[base + i];
    partial[tid] = s;
    barrier();
    for (uint step = 64u; step > 0u; step >>= 1) {
        if (tid < step) partial[tid] += partial[tid + step];
        barrier();
    }
    const float scale = 1.0 / sqrt(partial[0] / float(p.n) + p.eps);
    for (uint i = tid; i < p.n; i += 128u) Y[base + i] = p.has_w != 0u ? (X[base + i] * scale) * Wt[i] : X[base + i] * scale;
}
