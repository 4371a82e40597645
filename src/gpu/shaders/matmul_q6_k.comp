#version 450
#extension GL_GOOGLE_include_directive : require
// gpu/shaders/matmul_q6_k: matmul for Q6_K weights (BlockQ6_K, 210 bytes per 256): w = d * sc * (q - 32), sc int8 per 16.
#include "matmul_head.glsl"

#define ROW_BYTES(n) ((n) / 256u * 210u)

// Unit u is elements 32v.. of super-block u / 8 (v = u % 8): half h = v / 4, quarter k = v % 4; element l has
// its low nibble in ql[64h + 32(k%2) + l] (high nibble when k >= 2) and its top 2 bits in qh[32h + l] at 2k.
void dequant_unit(uint row_byte, uint u, out vec4 w[8]) {
    const uint base = row_byte + (u / 8u) * 210u, v = u % 8u, h = v / 4u, k = v % 4u;
    const float d = w_f16(base + 208u);
    const uint sc_lo = w_u8(base + 192u + 2u * v), sc_hi = w_u8(base + 193u + 2u * v);
    const float d_lo = d * float(int(sc_lo << 24) >> 24), d_hi = d * float(int(sc_hi << 24) >> 24);
    const uint ql = base + 64u * h + 32u * (k % 2u), qh = base + 128u + 32u * h;
    for (uint j = 0u; j < 8u; ++j) {
        const vec4 low = nibbles(w_word2(ql + 4u * j), k / 2u);
        const vec4 high = vec4((ubytes(w_word2(qh + 4u * j)) >> (2u * k)) & 3u) * 16.0;
        w[j] = (j < 4u ? d_lo : d_hi) * (low + high - 32.0);
    }
}

#include "matmul_main.glsl"
