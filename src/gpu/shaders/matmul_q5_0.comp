#version 450
#extension GL_GOOGLE_include_directive : require
// gpu/shaders/matmul_q5_0: matmul for Q5_0 weights (BlockQ5_0, 22 bytes): w = d * (q - 16), bit 4 of element j is bit j of qh.
#include "matmul_head.glsl"

#define ROW_BYTES(n) ((n) / 32u * 22u)

// Bit 4 of elements j..j+3, times 16.
vec4 high_bits(uint qh, uint j) { return vec4(uvec4(qh >> j, qh >> (j + 1u), qh >> (j + 2u), qh >> (j + 3u)) & 1u) * 16.0; }

void dequant_unit(uint row_byte, uint u, out vec4 w[8]) {
    const uint base = row_byte + u * 22u;
    const float d = w_f16(base);
    const uint qh = w_word2(base + 2u);
    for (uint k = 0u; k < 4u; ++k) {
        const uint q = w_word2(base + 6u + 4u * k);
        w[k] = d * (nibbles(q, 0u) + high_bits(qh, 4u * k) - 16.0);
        w[4u + k] = d * (nibbles(q, 1u) + high_bits(qh, 16u + 4u * k) - 16.0);
    }
}

#include "matmul_main.glsl"
