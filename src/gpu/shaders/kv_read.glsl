// gpu/shaders/kv_read: readers of one stored K or V head (kv/kv_cache.h row layout), included once per
// buffer: KVB names the uint[] buffer, KVT the float[] table (TurboQuant centroids or TCQ codebook) and
// KVF(name) the function prefix. Types (KV_* codes, gpu/ops.cpp kv_code): f32, f16, bf16, the legacy
// 32-value blocks, the scalar TurboQuant types (bits 2/3/4, groups of 64/128), TCQ (bits 2/3, groups of
// 128). Values are what the
// CPU's decode gives before any inverse rotation (quant/turbo.h turbo_decode_group_rotated).

uint KVF(u8)(uint o) { return (KVB[o >> 2u] >> ((o & 3u) * 8u)) & 0xFFu; }
// Two bytes at any offset (TCQ blocks are 51 bytes long, so their norms sit at odd offsets too).
uint KVF(u16)(uint o) {
    if ((o & 1u) == 0u) return (KVB[o >> 2u] >> ((o & 2u) * 8u)) & 0xFFFFu;
    return KVF(u8)(o) | (KVF(u8)(o + 1u) << 8u);
}
// The 4 bytes at even offset o (the next word is read only when o is not a multiple of 4: nothing past the
// row's last byte).
uint KVF(word2)(uint o) {
    const uint i = o >> 2u;
    if ((o & 2u) == 0u) return KVB[i];
    return (KVB[i] >> 16u) | (KVB[i + 1u] << 16u);
}
float KVF(f16)(uint o) { return unpackHalf2x16(KVF(u16)(o)).x; }

// Element j of the block at byte bo whose scale (TurboQuant: norm) is d, for the block types.
float KVF(bval)(uint bo, uint j, float d, uint type, uint bits, uint blk) {
    if (type == KV_Q8_0) return float(int(KVF(u8)(bo + 2u + j) << 24) >> 24) * d;
    if (type == KV_Q4_0 || type == KV_Q4_1 || type == KV_Q5_0 || type == KV_Q5_1) {
        const uint byte = KVF(u8)(bo + kv_qs_off(type) + (j & 15u));
        uint q = j < 16u ? byte & 15u : byte >> 4;
        if (kv_five(type)) q |= ((KVF(u8)(bo + (kv_affine(type) ? 4u : 2u) + j / 8u) >> (j % 8u)) & 1u) << 4u;
        if (kv_affine(type)) return float(q) * d + KVF(f16)(bo + 2u);
        return float(int(q) - (kv_five(type) ? 16 : 8)) * d;
    }
    uint idx;
    if (type == KV_TURBO) {  // quant/turbo.h turbo_index
        const uint qs = bo + 2u;
        if (bits == 4u) {
            idx = (KVF(u8)(qs + j / 2u) >> ((j & 1u) * 4u)) & 15u;
        } else {
            idx = (KVF(u8)(qs + j / 4u) >> ((j % 4u) * 2u)) & 3u;
            if (bits == 3u) idx |= ((KVF(u8)(qs + blk / 4u + j / 8u) >> (j % 8u)) & 1u) << 2u;
        }
    } else {  // KV_TCQ: quant/tcq.h tcq_state
        const uint bp = bits * j, o = bo + 2u + (bp >> 3u);
        const uint w = KVF(u8)(o) | (KVF(u8)(o + 1u) << 8u);
        idx = (w >> (bp & 7u)) & ((1u << (6u + bits)) - 1u);
    }
    return KVT[idx] * d;
}

// Element i of the head starting at byte hb: type, bits, values per block, bytes per block.
float KVF(elem)(uint hb, uint i, uint type, uint bits, uint blk, uint bb) {
    if (type == KV_F16) return KVF(f16)(hb + 2u * i);
    if (type == KV_F32) return uintBitsToFloat(KVB[(hb >> 2u) + i]);
    if (type == KV_BF16) return uintBitsToFloat(KVF(u16)(hb + 2u * i) << 16u);
    const uint b = i / blk, bo = hb + b * bb;
    return KVF(bval)(bo, i - b * blk, KVF(f16)(bo), type, bits, blk);
}
