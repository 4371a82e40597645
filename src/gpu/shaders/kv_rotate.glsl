// gpu/shaders/kv_rotate: rotate_groups(n, g, inverse, rs) rotates ROT_BUF[0..n) (a shared float array of the
// including shader) in groups of g = 64 or 128 by quant/turbo.h's randomized Hadamard transform (inverse:
// turbo_unrotate): signs, the butterflies level by level (each level's pairs are disjoint, so spreading them
// over the 64 threads does the CPU's operations exactly), then signs times rs = 1/sqrtf(g) (the host's float).
// Every thread of the workgroup must call it (barriers).
void rotate_groups(uint n, uint g, bool inverse, float rs) {
    const uint tid = gl_LocalInvocationID.x;
    for (uint i = tid; i < n; i += 64u) ROT_BUF[i] *= turbo_sign(inverse ? 2u : 1u, i % g);
    barrier();
    const uint half_g = g / 2u;
    for (uint h = 1u; h < g; h *= 2u) {
        for (uint k = tid; k < n / 2u; k += 64u) {
            const uint gi = k / half_g, kk = k - gi * half_g;
            const uint j = gi * g + (kk / h) * 2u * h + (kk % h);
            precise float a = ROT_BUF[j], b = ROT_BUF[j + h];
            precise float s = a + b, d = a - b;
            ROT_BUF[j] = s;
            ROT_BUF[j + h] = d;
        }
        barrier();
    }
    for (uint i = tid; i < n; i += 64u) {
        precise float f = turbo_sign(inverse ? 1u : 2u, i % g) * rs;
        precise float v = ROT_BUF[i] * f;
        ROT_BUF[i] = v;
    }
    barrier();
}
