#version 450
#extension GL_GOOGLE_include_directive : require
// gpu/shaders/matmul_f32: matmul for F32 weights (any n_in; the last unit zero-filled past n_in).
#include "matmul_head.glsl"

#define ROW_BYTES(n) ((n) * 4u)

void dequant_unit(uint row_byte, uint u, out vec4 w[8]) {
    const uint e0 = u * 32u;
    const uint base = row_byte / 4u + e0;  // word of element e0
    if (e0 + 32u <= p.n_in) {
        for (uint i = 0u; i < 8u; ++i)
            w[i] = uintBitsToFloat(uvec4(W[base + 4u * i], W[base + 4u * i + 1u], W[base + 4u * i + 2u],
                                         W[base + 4u * i + 3u]));
        return;
    }
    for (uint i = 0u; i < 8u; ++i)
        for (uint j = 0u; j < 4u; ++j) {
            const uint e = 4u * i + j;
            w[i][j] = e0 + e < p.n_in ? uintBitsToFloat(W[base + e]) : 0.0;
        }
}

#include "matmul_main.glsl"
