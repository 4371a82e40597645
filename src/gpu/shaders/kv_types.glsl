// gpu/shaders/kv_types: the KV type codes of the quantized KV shaders (gpu/ops.cpp kv_code).
const uint KV_F16 = 0u, KV_Q8_0 = 1u, KV_Q4_0 = 2u, KV_TURBO = 3u, KV_TCQ = 4u;
