#version 450
#extension GL_GOOGLE_include_directive : require
// gpu/shaders/matmul_f16: matmul for F16 weights (any n_in).
#include "matmul_head.glsl"

#define ROW_BYTES(n) ((n) * 2u)

void dequant_unit(uint row_byte, uint u, out vec4 w[8]) {
    const uint e0 = u * 32u;
    const uint base = row_byte + e0 * 2u;
    if (e0 + 32u <= p.n_in) {
        for (uint i = 0u; i < 8u; ++i)
            w[i] = vec4(unpackHalf2x16(w_word2(base + 8u * i)), unpackHalf2x16(w_word2(base + 8u * i + 4u)));
        return;
    }
    for (uint i = 0u; i < 8u; ++i)
        for (uint j = 0u; j < 4u; ++j) {
            const uint e = 4u * i + j;
            w[i][j] = e0 + e < p.n_in ? w_f16(base + 2u * e) : 0.0;
        }
}

#include "matmul_main.glsl"
