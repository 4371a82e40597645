// gpu/shaders/f16: f32 -> f16 bits with round to nearest even (base/fp16.h fp32_to_fp16's results), in
// integer arithmetic so every driver rounds alike (packHalf2x16 leaves the rounding to the driver).
uint f32_to_f16(float f) {
    const uint x = floatBitsToUint(f);
    const uint sign = (x >> 16) & 0x8000u;
    const uint e = (x >> 23) & 0xffu;
    uint m = x & 0x7fffffu;
    if (e == 255u) return sign | 0x7c00u | (m != 0u ? 0x200u : 0u);  // inf, NaN (quiet)
    const int ee = int(e) - 112;                                      // the f16 exponent field
    if (ee >= 31) return sign | 0x7c00u;                             // overflow: inf
    if (ee <= 0) {                                                   // subnormal or zero
        if (ee < -10) return sign;
        m |= 0x800000u;
        const uint shift = uint(14 - ee);
        uint h = m >> shift;
        const uint rem = m & ((1u << shift) - 1u), half_ulp = 1u << (shift - 1u);
        if (rem > half_ulp || (rem == half_ulp && (h & 1u) != 0u)) h++;
        return sign | h;
    }
    uint h = (uint(ee) << 10) | (m >> 13);
    const uint rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0u)) h++;  // a carry moves into the exponent, as it should
    return sign | h;
}
