#version 450
// gpu/shaders/softmax: per row, optional soft-cap (x = cap * tanh(x / cap)) then a max-subtracted softmax
// (kernels/ref softmax, softcap), in place; one workgroup per row.
layout(local_size_x = 128) in;

layout(std430, binding = 0) buffer XBuf { float X[]; };  // (n_rows, stride)

layout(push_constant) uniform Push {
    uint n;       // elements per row
    uint stride;  // floats between rows
    float cap;    // 0: no soft-cap
} p;

shared float partial[128];

// Fixed-tree reduction of partial[] into partial[0]: the maximum (is_max) or the sum.
void reduce(uint tid, bool is_max) {
    barrier();
    for (uint step = 64u; step > 0u; step >>= 1) {
        if (tid < step) partial[tid] = is_max ? max(partial[tid], partial[tid + step]) : partial[tid] + partial[tid + step];
        barrier();
    }
}

void main() {
    const uint tid = gl_LocalInvocationID.x, base = gl_WorkGroupID.x * p.stride;
    float mx = -3.402823466e38;
    for (uint i = tid; i < p.n; i += 128u) {
        float v = X[base + i];
        if (p.cap > 0.0) {
            v = p.cap * tanh(v / p.cap);
            X[base + i] = v;
        }
        mx = max(mx, v);
    }
    partial[tid] = mx;
    reduce(tid, true);
    mx = partial[0];
    barrier();
    float s = 0.0;
    for (uint i = tid; i < p.n; i += 128u) {
        const float e = exp(X[base + i] - mx);
        X[base + i] = e;
        s += e;
    }
    partial[tid] = s;
    reduce(tid, false);
    const float inv = 1.0 / partial[0];
    for (uint i = tid; i < p.n; i += 128u) X[base + i] *= inv;
}
