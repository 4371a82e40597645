// gpu/shaders/kv_math: what the quantized KV shaders share: the TurboQuant sign tables and the group
// rotation (quant/turbo.h turbo_rotate, same operations in the same order), and the correctly rounded
// division and square root the CPU's quantizers use, built from correctly rounded + - * only (Vulkan
// leaves / and sqrt a few ulp off): a first guess, its exact residual (Dekker's product, no fma), one
// correction. `precise` keeps every step unfused and in order.

// D1 / D2 of quant/turbo.cpp: bit i of word i/32 set means entry i is -1.
const uint kSigns1[4] = uint[4](0xE46A0359u, 0x42F85949u, 0xA4C63BBBu, 0x49F250A9u);
const uint kSigns2[4] = uint[4](0x16ACEE90u, 0x3F628FDCu, 0xB7A5357Au, 0xBEA56562u);

float turbo_sign(uint which, uint i) {
    const uint w = which == 1u ? kSigns1[i >> 5] : kSigns2[i >> 5];
    return ((w >> (i & 31u)) & 1u) != 0u ? -1.0 : 1.0;
}

// a * b = p + e exactly (Dekker: both split in halves of 12 bits).
void two_prod(float a, float b, out float p, out float e) {
    precise float pp = a * b;
    precise float ca = 4097.0 * a;
    precise float ah = ca - (ca - a);
    precise float al = a - ah;
    precise float cb = 4097.0 * b;
    precise float bh = cb - (cb - b);
    precise float bl = b - bh;
    precise float ee = ((ah * bh - pp) + ah * bl + al * bh) + al * bl;
    p = pp;
    e = ee;
}

// a + b = s + e exactly.
void two_sum(float a, float b, out float s, out float e) {
    precise float ss = a + b;
    precise float bb = ss - a;
    precise float ee = (a - (ss - bb)) + (b - bb);
    s = ss;
    e = ee;
}

// a / b rounded to nearest (b != 0; normal range).
float div_rn(float a, float b) {
    precise float q = a / b;
    float p, e;
    two_prod(q, b, p, e);
    precise float r = (a - p) - e;
    precise float res = q + r / b;
    return res;
}

// sqrt(hi + lo) rounded to nearest, for a float-float hi + lo >= 0.
float sqrt_rn(float hi, float lo) {
    precise float n = sqrt(hi);
    if (n == 0.0) return 0.0;
    float p, e;
    two_prod(n, n, p, e);
    precise float r = ((hi - p) - e) + lo;
    precise float res = n + r / (2.0 * n);
    return res;
}
