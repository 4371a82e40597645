// gpu/shaders/kquant_scales: scale and min of sub-block j (0..7) from the 12 packed bytes of Q4_K / Q5_K at
// byte `off` of W (quant/blocks.h k_scale_min): j < 4: 6 low bits of bytes j and j+4; j >= 4: the nibbles
// of byte j+4 with the top 2 bits of bytes j-4 (scale) and j (min).
uvec2 k_scale_min(uint off, uint j) {
    if (j < 4u) return uvec2(w_u8(off + j) & 63u, w_u8(off + j + 4u) & 63u);
    const uint b = w_u8(off + j + 4u);
    return uvec2((b & 15u) | ((w_u8(off + j - 4u) >> 6) << 4), (b >> 4) | ((w_u8(off + j) >> 6) << 4));
}
