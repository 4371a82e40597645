#version 450
#extension GL_GOOGLE_include_directive : require
// gpu/shaders/matmul_q4_k: matmul for Q4_K weights (BlockQ4_K, 144 bytes per 256): w = d * sc * q - dmin * m.
#include "matmul_head.glsl"

#include "kquant_scales.glsl"
#define ROW_BYTES(n) ((n) / 256u * 144u)

// Unit u is sub-block s = u % 8 of super-block u / 8: the low (s even) or high nibbles of qs[32 (s/2) ..].
void dequant_unit(uint row_byte, uint u, out vec4 w[8]) {
    const uint base = row_byte + (u / 8u) * 144u, s = u % 8u;
    const uvec2 sm = k_scale_min(base + 4u, s);
    const float d1 = w_f16(base) * float(sm.x), m1 = w_f16(base + 2u) * float(sm.y);
    const uint qs = base + 16u + 32u * (s / 2u);
    for (uint k = 0u; k < 8u; ++k) w[k] = d1 * nibbles(w_word2(qs + 4u * k), s % 2u) - m1;
}

#include "matmul_main.glsl"
