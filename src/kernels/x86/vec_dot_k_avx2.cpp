// kernels/x86/vec_dot_k_avx2: AVX2 dot products of the K-quants (Q2_K..Q6_K) against Q8_K activations.
// Per 256-element super-block: exact int32 lanes of sum(scale * q * qa) (maddubs, then madd with the
// sub-block scales as int16), one convert, one FMA into float lanes; the offset / min terms use the
// activation's bsums. Lanes are summed at the end in a fixed order.
// note: the inner loops are unrolled (#pragma GCC unroll) so that shuffle masks and shift counts are
// constants; left as loops, GCC rebuilds the masks every iteration and the kernels run ~2x slower.
#include "kernels/x86/avx2_util.h"
#include "quant/blocks.h"

namespace bee::avx2 {

namespace {

// Shuffle control for a 256-bit vector holding the same 8 int16 scales in both lanes: every int16 of the
// low lane becomes scale `lo`, every int16 of the high lane scale `hi`.
inline __m256i scale_pick(int lo, int hi) {
    return _mm256_set_m128i(_mm_set1_epi16((short)(0x0100 + 0x0202 * hi)),
                            _mm_set1_epi16((short)(0x0100 + 0x0202 * lo)));
}

// The int16 scales of 32 consecutive elements that span sub-blocks 2k (first 16) and 2k+1 (last 16).
inline __m256i scales_of_pair(__m256i s16, int k) { return _mm256_shuffle_epi8(s16, scale_pick(2 * k, 2 * k + 1)); }

// The int16 scale of 32 consecutive elements of sub-block k (32-element sub-blocks).
inline __m256i scales_of_one(__m256i s16, int k) { return _mm256_shuffle_epi8(s16, scale_pick(k, k)); }

// Both lanes = lane `hi ? 1 : 0` of v.
inline __m256i dup_lane(__m256i v, int hi) {
    return hi ? _mm256_permute2x128_si256(v, v, 0x11) : _mm256_permute2x128_si256(v, v, 0x00);
}

inline __m256i load256(const void* p) { return _mm256_loadu_si256((const __m256i*)p); }

// int32 lanes of sum(scale * u * qa) over 32 elements: u unsigned bytes, qa signed, scale16 int16.
inline __m256i scaled_dot(__m256i u, const int8_t* qa, __m256i scale16) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, load256(qa)), scale16);
}

// Q4_K / Q5_K packed scales -> 8 scales (bytes 0-7) and 8 mins (bytes 8-15), see k_scale_min().
inline __m128i k4_scales_mins(const uint8_t* packed) {
    uint32_t u[3];
    memcpy(u, packed, 12);
    const uint32_t sc03 = u[0] & 0x3f3f3f3fu;
    const uint32_t mn03 = u[1] & 0x3f3f3f3fu;
    const uint32_t sc47 = (u[2] & 0x0f0f0f0fu) | ((u[0] >> 2) & 0x30303030u);
    const uint32_t mn47 = ((u[2] >> 4) & 0x0f0f0f0fu) | ((u[1] >> 2) & 0x30303030u);
    return _mm_setr_epi32((int)sc03, (int)sc47, (int)mn03, (int)mn47);
}

// Q3_K packed scales -> 16 signed bytes (stored value - 32), see q3k_scale().
inline __m128i k3_scales(const uint8_t* packed) {
    uint32_t u[3];
    memcpy(u, packed, 12);
    const uint32_t m4 = 0x0f0f0f0fu, m2 = 0x03030303u;
    const uint32_t s0 = (u[0] & m4) | ((u[2] & m2) << 4);
    const uint32_t s1 = (u[1] & m4) | (((u[2] >> 2) & m2) << 4);
    const uint32_t s2 = ((u[0] >> 4) & m4) | (((u[2] >> 4) & m2) << 4);
    const uint32_t s3 = ((u[1] >> 4) & m4) | (((u[2] >> 6) & m2) << 4);
    return _mm_sub_epi8(_mm_setr_epi32((int)s0, (int)s1, (int)s2, (int)s3), _mm_set1_epi8(32));
}

// Q4_K and Q5_K share everything but the 5th bit, which has_qh selects.
template <bool has_qh>
float dot_q45_k(int64_t n, const void* w, const BlockQ8_K* y) {
    const uint8_t* xs = (const uint8_t*)w;
    const size_t stride = has_qh ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
    const __m256i m4 = _mm256_set1_epi8(0x0F), m16 = _mm256_set1_epi8(0x10);
    __m256 acc = _mm256_setzero_ps();
    __m128 acc_m = _mm_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; ++b) {
        // both Q4_K and Q5_K begin with d, dmin, scales[12]; Q5_K then has qh[32] before qs
        const BlockQ4_K* x = (const BlockQ4_K*)(xs + b * stride);
        const uint8_t* qs;
        if constexpr (has_qh) qs = ((const BlockQ5_K*)x)->qs;
        else qs = x->qs;
        const int8_t* qa = y[b].qs;
        const float d = y[b].d * h2f(x->d);
        const float dmin = y[b].d * h2f(x->dmin);

        const __m256i sm16 = _mm256_cvtepu8_epi16(k4_scales_mins(x->scales));  // (scales | mins) int16
        const __m256i bs = load256(y[b].bsums);
        const __m128i bs_pairs = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
        const __m128i mins = _mm_madd_epi16(_mm256_extracti128_si256(sm16, 1), bs_pairs);
        acc_m = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(mins), acc_m);

        const __m256i sc = dup_lane(sm16, 0);
        __m256i hbits = _mm256_setzero_si256();
        if constexpr (has_qh) hbits = load256(((const BlockQ5_K*)x)->qh);
        __m256i sumi = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int g = 0; g < 4; ++g) {  // 64 elements: sub-block 2g (low nibbles), 2g+1 (high nibbles)
            const __m256i bits = load256(qs + 32 * g);
            __m256i lo = _mm256_and_si256(bits, m4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
            if constexpr (has_qh) {
                lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(hbits, 4), m16));
                hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(hbits, 3), m16));
                hbits = _mm256_srli_epi16(hbits, 2);
            }
            sumi = _mm256_add_epi32(sumi, scaled_dot(lo, qa + 64 * g, scales_of_one(sc, 2 * g)));
            sumi = _mm256_add_epi32(sumi, scaled_dot(hi, qa + 64 * g + 32, scales_of_one(sc, 2 * g + 1)));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    __m128 m = _mm_add_ps(acc_m, _mm_movehl_ps(acc_m, acc_m));
    m = _mm_add_ss(m, _mm_movehdup_ps(m));
    return hsum_f32x8(acc) - _mm_cvtss_f32(m);
}

}  // namespace

// Q2_K: w = d*sc*q - dmin*m over 16-element sub-blocks, q in [0, 3].
void vec_dot_q2_K_q8_K(int64_t n, const void* w, const void* a, float* out) {
    const BlockQ2_K* x = (const BlockQ2_K*)w;
    const BlockQ8_K* y = (const BlockQ8_K*)a;
    const __m256i m3 = _mm256_set1_epi8(3);
    const __m128i m4 = _mm_set1_epi8(0x0F);
    __m256 acc = _mm256_setzero_ps(), acc_m = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const float d = y[b].d * h2f(x[b].d);
        const float dmin = y[b].d * h2f(x[b].dmin);
        const __m128i packed = _mm_loadu_si128((const __m128i*)x[b].scales);
        const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), m4));
        const __m256i summ = _mm256_madd_epi16(mins, load256(y[b].bsums));
        acc_m = _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(summ), acc_m);

        const __m256i sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(packed, m4));
        const int8_t* qa = y[b].qs;
        __m256i sumi = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int h = 0; h < 2; ++h) {  // 128-element halves: byte l of qs holds elements l + 32*j
            const __m256i sc = dup_lane(sc16, h);
            const __m256i bits = load256(x[b].qs + 32 * h);
#pragma GCC unroll 4
            for (int j = 0; j < 4; ++j) {
                const __m256i u = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * j), m3);
                sumi = _mm256_add_epi32(sumi, scaled_dot(u, qa + 128 * h + 32 * j, scales_of_pair(sc, j)));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    *out = hsum_f32x8(acc) - hsum_f32x8(acc_m);
}

// Q3_K: w = d*(sc-32)*(q - 4*!hbit). note: computed as u = q | hbit<<2 in [0, 7] (so w = d*s*(u - 4))
// with the -4 folded into one madd of the scales with the activation's bsums.
void vec_dot_q3_K_q8_K(int64_t n, const void* w, const void* a, float* out) {
    const BlockQ3_K* x = (const BlockQ3_K*)w;
    const BlockQ8_K* y = (const BlockQ8_K*)a;
    const __m256i m3 = _mm256_set1_epi8(3), m_bit2 = _mm256_set1_epi8(4);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const float d = y[b].d * h2f(x[b].d);
        const __m256i sc16 = _mm256_cvtepi8_epi16(k3_scales(x[b].scales));
        const __m256i offset = _mm256_madd_epi16(sc16, load256(y[b].bsums));
        __m256i sumi = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(offset, 2));

        const int8_t* qa = y[b].qs;
        __m256i hbits = load256(x[b].hmask);  // bit 0 of each byte is the current high bit
#pragma GCC unroll 4
        for (int h = 0; h < 2; ++h) {
            const __m256i sc = dup_lane(sc16, h);
            const __m256i bits = load256(x[b].qs + 32 * h);
#pragma GCC unroll 4
            for (int j = 0; j < 4; ++j) {
                const __m256i low = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * j), m3);
                const __m256i u = _mm256_or_si256(low, _mm256_and_si256(_mm256_slli_epi16(hbits, 2), m_bit2));
                hbits = _mm256_srli_epi16(hbits, 1);
                sumi = _mm256_add_epi32(sumi, scaled_dot(u, qa + 128 * h + 32 * j, scales_of_pair(sc, j)));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    *out = hsum_f32x8(acc);
}

void vec_dot_q4_K_q8_K(int64_t n, const void* w, const void* a, float* out) {
    *out = dot_q45_k<false>(n, w, (const BlockQ8_K*)a);
}

void vec_dot_q5_K_q8_K(int64_t n, const void* w, const void* a, float* out) {
    *out = dot_q45_k<true>(n, w, (const BlockQ8_K*)a);
}

// Q6_K: w = d*sc*(q - 32), q in [0, 63] from 4 low bits in ql and 2 high bits in qh; the -32 is folded
// into one madd of the scales with the activation's bsums.
void vec_dot_q6_K_q8_K(int64_t n, const void* w, const void* a, float* out) {
    const BlockQ6_K* x = (const BlockQ6_K*)w;
    const BlockQ8_K* y = (const BlockQ8_K*)a;
    const __m256i m4 = _mm256_set1_epi8(0x0F), m_hi = _mm256_set1_epi8(0x30);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const float d = y[b].d * h2f(x[b].d);
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i*)x[b].scales));
        const __m256i offset = _mm256_madd_epi16(sc16, load256(y[b].bsums));
        __m256i sumi = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(offset, 5));

        const int8_t* qa = y[b].qs;
#pragma GCC unroll 4
        for (int h = 0; h < 2; ++h) {  // 128-element halves
            const __m256i sc = dup_lane(sc16, h);
            const __m256i la = load256(x[b].ql + 64 * h);       // elements l (low nibble), l + 64 (high)
            const __m256i lb = load256(x[b].ql + 64 * h + 32);  // elements l + 32, l + 96
            const __m256i hb = load256(x[b].qh + 32 * h);       // 2 bits each for l, l+32, l+64, l+96
            // q = low nibble | (2 high bits << 4), in [0, 63]
            const __m256i h0 = _mm256_and_si256(_mm256_slli_epi16(hb, 4), m_hi);
            const __m256i h1 = _mm256_and_si256(_mm256_slli_epi16(hb, 2), m_hi);
            const __m256i h2 = _mm256_and_si256(hb, m_hi);
            const __m256i h3 = _mm256_and_si256(_mm256_srli_epi16(hb, 2), m_hi);
            const __m256i q0 = _mm256_or_si256(_mm256_and_si256(la, m4), h0);
            const __m256i q1 = _mm256_or_si256(_mm256_and_si256(lb, m4), h1);
            const __m256i q2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(la, 4), m4), h2);
            const __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lb, 4), m4), h3);
            const int8_t* qa_h = qa + 128 * h;
            sumi = _mm256_add_epi32(sumi, scaled_dot(q0, qa_h, scales_of_pair(sc, 0)));
            sumi = _mm256_add_epi32(sumi, scaled_dot(q1, qa_h + 32, scales_of_pair(sc, 1)));
            sumi = _mm256_add_epi32(sumi, scaled_dot(q2, qa_h + 64, scales_of_pair(sc, 2)));
            sumi = _mm256_add_epi32(sumi, scaled_dot(q3, qa_h + 96, scales_of_pair(sc, 3)));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    *out = hsum_f32x8(acc);
}

}  // namespace bee::avx2
