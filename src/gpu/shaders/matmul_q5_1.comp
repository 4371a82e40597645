#version 450
#extension GL_GOOGLE_include_directive : require
// gpu/shaders/matmul_q5_1: matmul for Q5_1 weights (BlockQ5_1, 24 bytes): w = d * q + m, q with bit 4 from qh.
#include "matmul_head.glsl"

#define ROW_BYTES(n) ((n) / 32u * 24u)

vec4 high_bits(uint qh, uint j) { return vec4(uvec4(qh >> j, qh >> (j + 1u), qh >> (j + 2u), qh >> (j + 3u)) & 1u) * 16.0; }

void dequant_unit(uint row_byte, uint u, out vec4 w[8]) {
    const uint base = row_byte + u * 24u;
    const float d = w_f16(base), m = w_f16(base + 2u);
    const uint qh = w_word2(base + 4u);
    for (uint k = 0u; k < 4u; ++k) {
        const uint q = w_word2(base + 8u + 4u * k);
        w[k] = d * (nibbles(q, 0u) + high_bits(qh, 4u * k)) + m;
        w[4u + k] = d * (nibbles(q, 1u) + high_bits(qh, 16u + 4u * k)) + m;
    }
}

#include "matmul_main.glsl"
