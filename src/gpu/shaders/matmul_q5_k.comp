#version 450
#extension GL_GOOGLE_include_directive : require
// gpu/shaders/matmul_q5_k: matmul for Q5_K weights (BlockQ5_K, 176 bytes per 256): Q4_K with bit 4 of element l of sub-block s at bit s of qh[l].
#include "matmul_head.glsl"

#include "kquant_scales.glsl"
#define ROW_BYTES(n) ((n) / 256u * 176u)

void dequant_unit(uint row_byte, uint u, out vec4 w[8]) {
    const uint base = row_byte + (u / 8u) * 176u, s = u % 8u;
    const uvec2 sm = k_scale_min(base + 4u, s);
    const float d1 = w_f16(base) * float(sm.x), m1 = w_f16(base + 2u) * float(sm.y);
    const uint qs = base + 48u + 32u * (s / 2u);
    for (uint k = 0u; k < 8u; ++k) {
        const vec4 high = vec4((ubytes(w_word2(base + 16u + 4u * k)) >> s) & 1u) * 16.0;
        w[k] = d1 * (nibbles(w_word2(qs + 4u * k), s % 2u) + high) - m1;
    }
}

#include "matmul_main.glsl"
