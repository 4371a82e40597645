#version 450
#extension GL_GOOGLE_include_directive : require
// gpu/shaders/matmul_q8_0: matmul for Q8_0 weights (BlockQ8_0, 34 bytes): w = d * q, q int8.
#include "matmul_head.glsl"

#define ROW_BYTES(n) ((n) / 32u * 34u)

void dequant_unit(uint row_byte, uint u, out vec4 w[8]) {
    const uint base = row_byte + u * 34u;
    const float d = w_f16(base);
    for (uint k = 0u; k < 8u; ++k) w[k] = d * sbytes(w_word2(base + 2u + 4u * k));
}

#include "matmul_main.glsl"
