#version 450
// gpu/shaders/rope: rotary position embedding in place (kernels/ref rope, ggml semantics with ext_factor 0):
// pair i of a head turns by freq_scale * (pos * theta_scale^i / freq_factors[i]); normal mode rotates
// (2i, 2i+1), neox (i, i + n_rot/2). One thread per (row, head, pair).
layout(local_size_x = 64) in;

layout(std430, binding = 0) buffer XBuf { float X[]; };               // (n_rows, n_head, head_dim)
layout(std430, binding = 1) readonly buffer PBuf { int pos[]; };      // (n_rows) positions
layout(std430, binding = 2) readonly buffer FBuf { float factors[]; };// (n_rot / 2); unread when has_factors == 0

layout(push_constant) uniform Push {
    uint n_rows;
    uint n_head;
    uint head_dim;
    uint n_rot;
    float theta_scale;  // freq_base^(-2 / n_rot), computed on the host as the CPU does
    float freq_scale;
    uint neox;
    uint has_factors;
    uint groups_x;      // workgroups along x
} p;

// note: theta is built by repeated multiplication like the CPU reference (bit-identical angles), then
// reduced to [-pi, pi] in three parts of 2 pi (Cody-Waite) so cos/sin stay accurate at large positions.
float reduce_angle(float th) {
    precise float k = round(th * 0.15915494309189535);
    precise float r = th - k * 6.28125;
    r = r - k * 0.0019353071693331003;
    r = r - k * 1.0253131677e-11;
    return r;
}

void main() {
    const uint half_rot = p.n_rot / 2u;
    const uint id = (gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x) * 64u + gl_LocalInvocationID.x;
    if (id >= p.n_rows * p.n_head * half_rot) return;
    const uint i = id % half_rot, head = (id / half_rot) % p.n_head, row = id / (half_rot * p.n_head);
    precise float theta = float(pos[row]);
    for (uint j = 0u; j < i; ++j) theta *= p.theta_scale;
    precise float th = p.has_factors != 0u ? theta / factors[i] : theta;
    th = p.freq_scale * th;
    const float r = reduce_angle(th);
    const float c = cos(r), s = sin(r);
    const uint base = (row * p.n_head + head) * p.head_dim;
    const uint i0 = p.neox != 0u ? i : 2u * i, i1 = p.neox != 0u ? i + half_rot : 2u * i + 1u;
    const float x0 = X[base + i0], x1 = X[base + i1];
    X[base + i0] = x0 * c - x1 * s;
    X[base + i1] = x0 * s + x1 * c;
}
