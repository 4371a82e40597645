// gpu/shaders/matmul_head: bindings, push constants and byte readers shared by every matmul_<type> shader.
// Y (n_tok, y_stride) = X (n_tok, x_stride) · Wᵀ, W (n_out, n_in) in GGUF row layout.
// note: W is read as 32-bit words only (no 8/16-bit storage features needed): every block size is even,
// so each field starts at an even byte offset and w_word2() assembles a word from two aligned ones.
#extension GL_GOOGLE_include_directive : require
#ifdef BEE_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer WBuf { uint W[]; };   // (n_out, row bytes), padded by >= 4 bytes
layout(std430, binding = 1) readonly buffer XBuf { vec4 X[]; };   // (n_tok, x_stride) f32
layout(std430, binding = 2) writeonly buffer YBuf { float Y[]; }; // (n_tok, y_stride) f32

layout(push_constant) uniform Push {
    uint n_out;     // rows of W
    uint n_in;      // columns of W = elements per X row
    uint n_tok;     // X rows
    uint x_stride;  // floats between X rows: a multiple of 32 >= n_in, zero beyond n_in
    uint y_stride;  // floats between Y rows
    uint row_groups; // workgroups along x: row = wg.y * row_groups + wg.x (rows past 65535)
} p;

// The 4 bytes at byte offset `off` (even) of W, little endian.
uint w_word2(uint off) {
    const uint i = off >> 2;
    const uint sh = (off & 2u) * 8u;  // 0 or 16
    // note: (hi << (31 - sh)) << 1 is 0 when sh == 0, with no shift by 32
    return (W[i] >> sh) | ((W[i + 1u] << (31u - sh)) << 1u);
}

// The 2 bytes at even offset `off`.
uint w_u16(uint off) { return (W[off >> 2] >> ((off & 2u) * 8u)) & 0xFFFFu; }

float w_f16(uint off) { return unpackHalf2x16(w_u16(off)).x; }

// The byte at offset `off`.
uint w_u8(uint off) { return (W[off >> 2] >> ((off & 3u) * 8u)) & 0xFFu; }

// The 4 nibbles (low or high half of each byte) of a word, as floats.
vec4 nibbles(uint word, uint high) {
    const uint s = high * 4u;
    return vec4((word >> s) & 15u, (word >> (s + 8u)) & 15u, (word >> (s + 16u)) & 15u, (word >> (s + 24u)) & 15u);
}

// The 4 bytes of a word as signed int8 values.
vec4 sbytes(uint word) {
    return vec4(ivec4(uvec4(word << 24, word << 16, word << 8, word)) >> 24);
}

// The 4 bytes of a word as unsigned values.
uvec4 ubytes(uint word) { return uvec4(word & 255u, (word >> 8) & 255u, (word >> 16) & 255u, word >> 24); }
