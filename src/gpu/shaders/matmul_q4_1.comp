#version 450
#extension GL_GOOGLE_include_directive : require
// gpu/shaders/matmul_q4_1: matmul for Q4_1 weights (BlockQ4_1, 20 bytes): w = d * q + m.
#include "matmul_head.glsl"

#define ROW_BYTES(n) ((n) / 32u * 20u)

void dequant_unit(uint row_byte, uint u, out vec4 w[8]) {
    const uint base = row_byte + u * 20u;
    const float d = w_f16(base), m = w_f16(base + 2u);
    for (uint k = 0u; k < 4u; ++k) {
        const uint q = w_word2(base + 4u + 4u * k);
        w[k] = d * nibbles(q, 0u) + m;
        w[4u + k] = d * nibbles(q, 1u) + m;
    }
}

#include "matmul_main.glsl"
