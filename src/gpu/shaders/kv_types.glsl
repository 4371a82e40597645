// gpu/shaders/kv_types: the KV type codes of the quantized KV shaders (gpu/ops.cpp kv_code).
const uint KV_F16 = 0u, KV_Q8_0 = 1u, KV_Q4_0 = 2u, KV_TURBO = 3u, KV_TCQ = 4u;
const uint KV_Q4_1 = 5u, KV_Q5_0 = 6u, KV_Q5_1 = 7u, KV_F32 = 8u, KV_BF16 = 9u;

// Layout of the legacy 32-value blocks (quant/blocks.h): after d, an f16 min m for the _1 types, 4 bytes of
// 5th bits for the q5 types, then 16 bytes of nibbles (element j: byte j % 16, low nibble for j < 16).
bool kv_affine(uint t) { return t == KV_Q4_1 || t == KV_Q5_1; }
bool kv_five(uint t) { return t == KV_Q5_0 || t == KV_Q5_1; }
uint kv_qs_off(uint t) { return 2u + (kv_affine(t) ? 2u : 0u) + (kv_five(t) ? 4u : 0u); }
