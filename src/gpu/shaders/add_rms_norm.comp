#version 450
// gpu/shaders/add_rms_norm: the residual add x += y, then y2 = x / sqrt(mean(x²) + eps) * w per row: eltwise's
// add followed by rms_norm in one dispatch, with their arithmetic (the same bits). One workgroup per row.
layout(local_size_x = 128) in;

layout(std430, binding = 0) buffer XBuf { float X[]; };            // (n_rows, stride): x, updated
layout(std430, binding = 1) readonly buffer YBuf { float Yv[]; };  // (n_rows, stride)
layout(std430, binding = 2) readonly buffer WBuf { float Wt[]; };  // (n) scale; unread when has_w == 0
layout(std430, binding = 3) writeonly buffer NBuf { float N[]; };  // (n_rows, stride): the normed rows

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
    for (uint i = tid; i < p.n; i += 128u) {
        const float v = X[base + i] + Yv[base + i];
        X[base + i] = v;
        s += v * v;
    }
    partial[tid] = s;
    barrier();
    for (uint step = 64u; step > 0u; step >>= 1) {
        if (tid < step) partial[tid] += partial[tid + step];
        barrier();
    }
    const float scale = 1.0 / sqrt(partial[0] / float(p.n) + p.eps);
    for (uint i = tid; i < p.n; i += 128u) {
        const float v = X[base + i];  // written by this invocation above
        N[base + i] = p.has_w != 0u ? (v * scale) * Wt[i] : v * scale;
    }
}
