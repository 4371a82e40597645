#version 450
#extension GL_GOOGLE_include_directive : require
// gpu/shaders/matmul_q4_0: matmul for Q4_0 weights (quant/blocks.h BlockQ4_0, 18 bytes): w = d * (q - 8).
#include "matmul_head.glsl"

#define ROW_BYTES(n) ((n) / 32u * 18u)

void dequant_unit(uint row_byte, uint u, out vec4 w[8]) {
    const uint base = row_byte + u * 18u;
    const float d = w_f16(base);
    for (uint k = 0u; k < 4u; ++k) {
        const uint q = w_word2(base + 2u + 4u * k);  // bytes 4k..4k+3: elements 4k.. (low), 16+4k.. (high)
        w[k] = d * (nibbles(q, 0u) - 8.0);
        w[4u + k] = d * (nibbles(q, 1u) - 8.0);
    }
}

#include "matmul_main.glsl"
