// kernels/x86/gemm_rows16_k_avx2_body: the body of gemm_rows16_k_avx2.cpp (kVnni false) and
// gemm_rows16_k_avxvnni.cpp (kVnni true: vpdpbusd / vpdpwssd on 256-bit registers), included inside their
// namespace after the headers they need; see gemm_rows16_k_avx2.cpp for what the tiles compute.
// NOLINT: no include guard on purpose (one inclusion per file, in two namespaces).

namespace {

using x86::act_row_bytes;
using x86::ActK;
using x86::prepare_q8_k;

constexpr int kRows = 8;  // weight rows per tile: one per int32 lane (half a rows16 group)
constexpr int kCols = 4;  // tokens per tile

// fp16 in the low half of each int32 lane -> 8 floats.
inline __m256 halves_to_ps(__m256i x) {
    const __m256i packed = _mm256_packus_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0xFFFF)), _mm256_setzero_si256());
    return _mm256_cvtph_ps(_mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08)));
}

// Shifts every byte left by s (s may be negative: right) inside its int32 lane; callers mask the result.
inline __m256i shift_bits(__m256i x, int s) { return s >= 0 ? _mm256_slli_epi32(x, s) : _mm256_srli_epi32(x, -s); }

// Bytes the rows16 tile reads ahead of itself (software prefetch, as in gemm_rows16_avx512.cpp).
constexpr size_t kAhead = 2048;

// Word i (bytes 4i..4i+3) of super-block b of this tile's 8 rows, from the rows16 layout (q: the group's
// first super-block, 32 bytes further for the second half).
template <class W>
struct Rows16Src {
    const uint8_t* q;
    Rows16Src(const uint8_t* w, size_t, int) : q(w) {}
    inline const uint8_t* block(int64_t b) const { return q + (size_t)b * W::kWords * 64; }
    inline void prefetch(int64_t b) const {
        const uint8_t* p = block(b) + kAhead;
        for (int l = 0; l < W::kWords; l++) _mm_prefetch((const char*)p + 64 * l, _MM_HINT_T0);
    }
    inline __m256i word(int64_t b, int i) const { return _mm256_loadu_si256((const __m256i*)(block(b) + 64 * i)); }
    // The fp16 at byte 4i of the block (its last 2 bytes), in the low half of each lane.
    inline __m256i last_half(int64_t b, int i) const { return word(b, i); }
};

// The same words gathered from nr GGUF rows ws bytes apart (lanes past nr read nothing, are never stored).
template <class W>
struct GgufSrc {
    const uint8_t* w;
    __m256i idx, mask;
    GgufSrc(const uint8_t* w_, size_t ws, int nr)
        : w(w_),
          idx(_mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int)ws))),
          mask(_mm256_cmpgt_epi32(_mm256_set1_epi32(nr), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))) {}
    inline void prefetch(int64_t) const {}
    inline __m256i word(int64_t b, int i) const {
        return _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), (const int*)(w + (size_t)b * W::kBlockBytes + 4 * i),
                                           idx, mask, 1);
    }
    // note: the block ends 2 bytes into word i: read the 4 bytes ending there, so nothing past it is read.
    inline __m256i last_half(int64_t b, int i) const {
        const uint8_t* p = w + (size_t)b * W::kBlockBytes + 4 * i - 2;
        return _mm256_srli_epi32(_mm256_mask_i32gather_epi32(_mm256_setzero_si256(), (const int*)p, idx, mask, 1), 16);
    }
};

// imin + the int16-pair products of x and y (vpdpwssd with AVX-VNNI, else vpmaddwd then an add: exact).
inline __m256i dot_pairs(__m256i imin, __m256i x, __m256i y) {
    if constexpr (kVnni) return _mm256_dpwssd_avx_epi32(imin, x, y);
    else return _mm256_add_epi32(imin, _mm256_madd_epi16(x, y));
}

// Sub-block j's S_j·sc_j added to isum[c] for each token: u[0..K) the element vectors (4 elements each),
// e0 the sub-block's first element, j >= 0: start the sum at start16[j] >> kStartShift (Q6_K's offset
// -32·Σa; Q3_K's -4·Σa, exact: start16 is a multiple of 32), j < 0: at 0. G vpmaddubsw results add up in
// s16 before each vpmaddwd: G · 2 · u_max · 128 stays below 32768 for the type.
template <int K, int G, int C, int kStartShift = 0>
inline __attribute__((always_inline)) void add_sub_block(const __m256i (&u)[K], __m256i sc, const uint8_t* a, size_t as,
                                                         int64_t b, int j, int e0, __m256i (&isum)[C]) {
    const __m256i ones = _mm256_set1_epi16(1);
#pragma GCC unroll 4
    for (int c = 0; c < C; c++) {
        const ActK* ab = (const ActK*)(a + c * as) + b;
        const int32_t* q4 = (const int32_t*)(ab->q + e0);
        __m256i s = j >= 0 ? _mm256_set1_epi32(ab->start16[j] >> kStartShift) : _mm256_setzero_si256();
        if constexpr (kVnni) {
#pragma GCC unroll 8
            for (int k = 0; k < K; k++) s = _mm256_dpbusd_avx_epi32(s, u[k], _mm256_set1_epi32(q4[k]));
        } else {
#pragma GCC unroll 8
            for (int g = 0; g < K; g += G) {
                __m256i p = _mm256_maddubs_epi16(u[g], _mm256_set1_epi32(q4[g]));
#pragma GCC unroll 8
                for (int k = g + 1; k < g + G; k++)
                    p = _mm256_add_epi16(p, _mm256_maddubs_epi16(u[k], _mm256_set1_epi32(q4[k])));
                s = _mm256_add_epi32(s, _mm256_madd_epi16(p, ones));
            }
        }
        isum[c] = _mm256_add_epi32(isum[c], _mm256_mullo_epi32(s, sc));
    }
}

// An empty asm that "changes" x: GCC can no longer regroup the additions into x around it (it otherwise
// reassociates the C s16 chains into trees whose products are all live at once, and spills).
inline void keep_order(__m256i& x) { asm("" : "+x"(x)); }

// add_sub_block for u <= 15 (Q4_K: all K <= 8 products in one s16 sum), with the element vectors made one
// at a time by u_of(k) and the tokens inside, so one element vector is live beside the C sums (4 tokens
// fit the 16 ymm registers; all 8 vectors would spill). The same exact integers.
template <int K, int C, class U>
inline __attribute__((always_inline)) void add_sub_block_by_vector(U&& u_of, __m256i sc, const uint8_t* a, size_t as,
                                                                   int64_t b, int e0, __m256i (&isum)[C]) {
    static_assert(K <= 8, "8 · 2 · 15 · 128 < 32768: the s16 sums cannot saturate");
    const int32_t* q4[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; c++) q4[c] = (const int32_t*)(((const ActK*)(a + c * as) + b)->q + e0);
    __m256i s[C];
#pragma GCC unroll 8
    for (int k = 0; k < K; k++) {
        const __m256i u = u_of(k);
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) {
            const __m256i a4 = _mm256_set1_epi32(q4[c][k]);
            if constexpr (kVnni) {
                s[c] = _mm256_dpbusd_avx_epi32(k ? s[c] : _mm256_setzero_si256(), u, a4);
            } else {
                const __m256i t = _mm256_maddubs_epi16(u, a4);
                s[c] = k ? _mm256_add_epi16(s[c], t) : t;  // s16 until the last vector
                keep_order(s[c]);
            }
        }
    }
#pragma GCC unroll 4
    for (int c = 0; c < C; c++) {
        if constexpr (!kVnni) s[c] = _mm256_madd_epi16(s[c], _mm256_set1_epi16(1));
        isum[c] = _mm256_add_epi32(isum[c], _mm256_mullo_epi32(s[c], sc));
    }
}

// Q2_K: the 16 scale bytes (sc low nibble, m high) at words 0-3, qs (byte 32h + l: elements 128h + l,
// +32, +64, +96 in bits 0-1, 2-3, 4-5, 6-7) at words 4-19, d and dmin at word 20.
struct Q2K {
    static constexpr int kWords = 21;
    static constexpr size_t kBlockBytes = sizeof(BlockQ2_K);

    template <class Src, int C>
    static inline __attribute__((always_inline)) void super(const Src& src, int64_t b, const uint8_t* a, size_t as,
                                                            __m256 (&acc)[C]) {
        __m256i isum[C];
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) isum[c] = _mm256_setzero_si256();
        const __m256i lo4 = _mm256_set1_epi32(0x0f);
#pragma GCC unroll 1
        for (int j = 0; j < 16; j++) {  // sub-block j: elements 128h + 32qr + l0 + (0..15)
            const int h = j / 8, qr = (j % 8) / 2, l0 = 16 * (j % 2);
            const __m256i scj = _mm256_and_si256(_mm256_srli_epi32(src.word(b, j / 4), (unsigned)(8 * (j % 4))), lo4);
            __m256i u[4];
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++)
                u[k] = _mm256_and_si256(_mm256_srli_epi32(src.word(b, (16 + 32 * h + l0) / 4 + k), (unsigned)(2 * qr)),
                                        _mm256_set1_epi8(0x03));
            add_sub_block<4, 4, C>(u, scj, a, as, b, -1, 16 * j, isum);
        }
        // mins as int16 pairs (m_2p, m_2p+1) per lane: the high nibbles of scale bytes 2p, 2p+1
        __m256i mp[8];
#pragma GCC unroll 4
        for (int w = 0; w < 4; w++) {
            const __m256i x = src.word(b, w);
            mp[2 * w] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(x, 4), lo4),
                                        _mm256_and_si256(_mm256_slli_epi32(x, 4), _mm256_set1_epi32(0xf0000)));
            mp[2 * w + 1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(x, 20), lo4),
                                            _mm256_and_si256(_mm256_srli_epi32(x, 12), _mm256_set1_epi32(0xf0000)));
        }
        const __m256i dm = src.word(b, 20);
        const __m256 d = halves_to_ps(dm), dmin = halves_to_ps(_mm256_srli_epi32(dm, 16));
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) {
            const ActK* ab = (const ActK*)(a + c * as) + b;
            __m256i imin = _mm256_setzero_si256();
#pragma GCC unroll 8
            for (int p = 0; p < 8; p++) imin = dot_pairs(imin, mp[p], _mm256_set1_epi32(ab->bs16pair[p]));
            const __m256 da = _mm256_set1_ps(ab->d);
            acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[c]), _mm256_mul_ps(d, da), acc[c]);
            acc[c] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(imin), _mm256_mul_ps(dmin, da), acc[c]);
        }
    }
};

// Q3_K: hmask (bit j/2 of byte l: element l of sub-block pair j/2, set: no -4) at words 0-7, qs (as Q2_K)
// at 8-23, the 16 6-bit scales (blocks.h q3k_scale, minus 32) at 24-26, d in the low half of word 27.
struct Q3K {
    static constexpr int kWords = 28;
    static constexpr size_t kBlockBytes = sizeof(BlockQ3_K);

    template <class Src, int C>
    static inline __attribute__((always_inline)) void super(const Src& src, int64_t b, const uint8_t* a, size_t as,
                                                            __m256 (&acc)[C]) {
        __m256i isum[C];
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) isum[c] = _mm256_setzero_si256();
// note: unrolled, every shift and word index is a constant: +10-20% tg on a Q3_K 0.5B (its unpacking
// is the heaviest); the other types measured the same either way and stay rolled.
#pragma GCC unroll 16
        for (int j = 0; j < 16; j++) {  // sub-block j: elements 128h + 32qr + l0 + (0..15), u = q + 4 in [0, 7]
            const int h = j / 8, qr = (j % 8) / 2, l0 = 16 * (j % 2);
            const unsigned at = (unsigned)(8 * (j % 4));
            const __m256i low = _mm256_and_si256(_mm256_srli_epi32(src.word(b, 24 + (j % 8) / 4), at + 4 * (j / 8)),
                                                 _mm256_set1_epi32(0xf));
            const __m256i high =
                _mm256_and_si256(_mm256_srli_epi32(src.word(b, 26), at + 2 * (j / 4)), _mm256_set1_epi32(3));
            const __m256i scj =
                _mm256_sub_epi32(_mm256_or_si256(low, _mm256_slli_epi32(high, 4)), _mm256_set1_epi32(32));
            __m256i u[4];
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) {
                const __m256i q2 =
                    _mm256_and_si256(_mm256_srli_epi32(src.word(b, (32 + 32 * h + l0) / 4 + k), (unsigned)(2 * qr)),
                                     _mm256_set1_epi8(0x03));
                const __m256i hb =
                    _mm256_and_si256(shift_bits(src.word(b, l0 / 4 + k), 2 - j / 2), _mm256_set1_epi8(0x04));
                u[k] = _mm256_or_si256(q2, hb);
            }
            add_sub_block<4, 4, C, 3>(u, scj, a, as, b, j, 16 * j, isum);
        }
        const __m256 d = halves_to_ps(src.last_half(b, 27));
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) {
            const ActK* ab = (const ActK*)(a + c * as) + b;
            acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[c]), _mm256_mul_ps(d, _mm256_set1_ps(ab->d)), acc[c]);
        }
    }
};

// Q4_K (kFifth = false) and Q5_K: d, dmin at word 0, the 12 scale bytes at words 1-3, Q5_K's qh (bit j of
// byte l: element l of sub-block j) at words 4-11, then qs (byte 32g + l: element 64g + l low, 64g + 32 + l
// high).
template <bool kFifth>
struct QxK {
    static constexpr int kWords = kFifth ? 44 : 36;
    static constexpr size_t kBlockBytes = kFifth ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
    static constexpr int kQsWord = kFifth ? 12 : 4;

    template <class Src, int C>
    static inline __attribute__((always_inline)) void super(const Src& src, int64_t b, const uint8_t* a, size_t as,
                                                            __m256 (&acc)[C]) {
        const __m256i dm = src.word(b, 0);
        const __m256i v0 = src.word(b, 1), v1 = src.word(b, 2), v2 = src.word(b, 3);
        const __m256i m6 = _mm256_set1_epi32(0x3f3f3f3f), m4 = _mm256_set1_epi32(0x0f0f0f0f),
                      hi2 = _mm256_set1_epi32(0x30303030);
        // the 6-bit scales and mins, byte j%4 of each lane (as the scalar k_scale_min decodes them)
        const __m256i sc[2] = {_mm256_and_si256(v0, m6),
                               _mm256_or_si256(_mm256_and_si256(v2, m4),
                                               _mm256_and_si256(_mm256_srli_epi32(v0, 2), hi2))};
        const __m256i mn[2] = {_mm256_and_si256(v1, m6),
                               _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(v2, 4), m4),
                                               _mm256_and_si256(_mm256_srli_epi32(v1, 2), hi2))};
        __m256i isum[C];
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) isum[c] = _mm256_setzero_si256();
        const __m256i lo4 = _mm256_set1_epi8(0x0F), byte = _mm256_set1_epi32(0xff);
        if constexpr (kFifth) {  // Q5_K: all 8 element vectors of a sub-block, then the tokens
#pragma GCC unroll 1
            for (int j = 0; j < 8; j++) {
                const __m256i scj = _mm256_and_si256(_mm256_srli_epi32(sc[j / 4], 8 * (j % 4)), byte);
                __m256i u[8];
#pragma GCC unroll 8
                for (int k = 0; k < 8; k++) {
                    const __m256i x = src.word(b, kQsWord + 8 * (j / 2) + k);
                    u[k] = _mm256_or_si256(_mm256_and_si256(j % 2 ? _mm256_srli_epi16(x, 4) : x, lo4),
                                           _mm256_and_si256(shift_bits(src.word(b, 4 + k), 4 - j),
                                                            _mm256_set1_epi8(0x10)));
                }
                add_sub_block<8, 4, C>(u, scj, a, as, b, -1, 32 * j, isum);
            }
        } else {  // Q4_K: vector by vector (add_sub_block_by_vector); j in pairs, so the nibble is a constant
            const auto sub = [&]<int kOdd>(int j) {
                const __m256i scj = _mm256_and_si256(_mm256_srli_epi32(sc[j / 4], 8 * (j % 4)), byte);
                const auto u_of = [&](int k) {
                    const __m256i x = src.word(b, kQsWord + 8 * (j / 2) + k);
                    return _mm256_and_si256(kOdd ? _mm256_srli_epi16(x, 4) : x, lo4);
                };
                add_sub_block_by_vector<8, C>(u_of, scj, a, as, b, 32 * j, isum);
            };
#pragma GCC unroll 1
            for (int j = 0; j < 8; j += 2) {
                sub.template operator()<0>(j);
                sub.template operator()<1>(j + 1);
            }
        }
        // mins as int16 pairs (m_2p, m_2p+1) per lane
        __m256i mp[4];
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            mp[2 * h] = _mm256_or_si256(_mm256_and_si256(mn[h], byte),
                                        _mm256_slli_epi32(_mm256_and_si256(mn[h], _mm256_set1_epi32(0xff00)), 8));
            mp[2 * h + 1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(mn[h], 16), byte),
                                            _mm256_and_si256(_mm256_srli_epi32(mn[h], 8), _mm256_set1_epi32(0xff0000)));
        }
        const __m256 d = halves_to_ps(dm), dmin = halves_to_ps(_mm256_srli_epi32(dm, 16));
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) {
            const ActK* ab = (const ActK*)(a + c * as) + b;
            __m256i imin = _mm256_setzero_si256();
#pragma GCC unroll 4
            for (int p = 0; p < 4; p++) imin = dot_pairs(imin, mp[p], _mm256_set1_epi32(ab->bs32pair[p]));
            const __m256 da = _mm256_set1_ps(ab->d);
            acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[c]), _mm256_mul_ps(d, da), acc[c]);
            acc[c] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(imin), _mm256_mul_ps(dmin, da), acc[c]);
        }
    }
};
using Q4K = QxK<false>;
using Q5K = QxK<true>;

// Q6_K: ql at words 0-31, qh at 32-47, the 16 int8 scales at 48-51, d in the low half of word 52.
struct Q6K {
    static constexpr int kWords = 53;
    static constexpr size_t kBlockBytes = sizeof(BlockQ6_K);

    template <class Src, int C>
    static inline __attribute__((always_inline)) void super(const Src& src, int64_t b, const uint8_t* a, size_t as,
                                                            __m256 (&acc)[C]) {
        __m256i isum[C];
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) isum[c] = _mm256_setzero_si256();
#pragma GCC unroll 1
        for (int j = 0; j < 16; j++) {  // sub-block j: elements 128h + 32qr + l0 + (0..15) (blocks.h unpack_q6_K)
            const int h = j / 8, qr = (j % 8) / 2, l0 = 16 * (j % 2);
            const __m256i scw = src.word(b, 48 + j / 4);
            const __m256i scj = _mm256_srai_epi32(_mm256_slli_epi32(scw, (unsigned)(24 - 8 * (j % 4))), 24);
            __m256i u[4];
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) {
                const __m256i ql = src.word(b, (64 * h + 32 * (qr % 2) + l0) / 4 + k);
                const __m256i qh = src.word(b, (128 + 32 * h + l0) / 4 + k);
                u[k] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(ql, (unsigned)(4 * (qr / 2))),
                                                        _mm256_set1_epi8(0x0F)),
                                       _mm256_and_si256(shift_bits(qh, 4 - 2 * qr), _mm256_set1_epi8(0x30)));
            }
            add_sub_block<4, 2, C>(u, scj, a, as, b, j, 16 * j, isum);
        }
        const __m256 d = halves_to_ps(src.last_half(b, 52));
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) {
            const ActK* ab = (const ActK*)(a + c * as) + b;
            acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[c]), _mm256_mul_ps(d, _mm256_set1_ps(ab->d)), acc[c]);
        }
    }
};

// The 8 × C tile over super-blocks of Src; prepared activation rows `as` bytes apart.
template <class W, class Src, int C>
void tile(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, int nr, float* y, size_t ldy) {
    const Src src(w, ws, nr);
    __m256 acc[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; c++) acc[c] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        src.prefetch(b);
        W::template super<Src, C>(src, b, a, as, acc);
    }
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(nr), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
#pragma GCC unroll 4
    for (int c = 0; c < C; c++) _mm256_maskstore_ps(y + c * ldy, mask, acc[c]);
}

template <class W, class Src>
void tile_any8(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, int nr, int nc, float* y,
               size_t ldy) {
    x86::with_cols<kCols>(nc, [&]<int C>() { tile<W, Src, C>(n, w, ws, a, as, nr, y, ldy); });
}

// Rows [o, o + 8) are half o / 8 % 2 of group o / 16: its first super-block, 32 bytes in for the second half.
template <GgmlType T>
void locate(const uint8_t* base, int64_t n_out, int64_t n_in, int64_t o, const uint8_t** w, size_t* ws) {
    const Rows16Geometry g = rows16_geometry(T, n_out, n_in);
    *w = base + g.quants_at(o / 16, 0) + 32 * (o / 8 % 2);
    *ws = g.quant_bytes;
}

}  // namespace

// Referenced from avx2_table.cpp: per type the rows16 kernel and the GGUF-layout kernel (in bee::avx2 and, with
// AVX-VNNI dot products, bee::avxvnni).
extern const GemmKernel kGemmRows16Q2_K =
    {GgmlType::Q8_K, act_row_bytes, prepare_q8_k, tile_any8<Q2K, Rows16Src<Q2K>>, kRows, kCols, locate<GgmlType::Q2_K>};
extern const GemmKernel kGemmQ2_K = {GgmlType::Q8_K, act_row_bytes, prepare_q8_k, tile_any8<Q2K, GgufSrc<Q2K>>,
                                     kRows,          kCols,         nullptr};
extern const GemmKernel kGemmRows16Q3_K =
    {GgmlType::Q8_K, act_row_bytes, prepare_q8_k, tile_any8<Q3K, Rows16Src<Q3K>>, kRows, kCols, locate<GgmlType::Q3_K>};
extern const GemmKernel kGemmQ3_K = {GgmlType::Q8_K, act_row_bytes, prepare_q8_k, tile_any8<Q3K, GgufSrc<Q3K>>,
                                     kRows,          kCols,         nullptr};
extern const GemmKernel kGemmRows16Q4_K =
    {GgmlType::Q8_K, act_row_bytes, prepare_q8_k, tile_any8<Q4K, Rows16Src<Q4K>>, kRows, kCols, locate<GgmlType::Q4_K>};
extern const GemmKernel kGemmQ4_K = {GgmlType::Q8_K, act_row_bytes, prepare_q8_k, tile_any8<Q4K, GgufSrc<Q4K>>,
                                     kRows,          kCols,         nullptr};
extern const GemmKernel kGemmRows16Q5_K =
    {GgmlType::Q8_K, act_row_bytes, prepare_q8_k, tile_any8<Q5K, Rows16Src<Q5K>>, kRows, kCols, locate<GgmlType::Q5_K>};
extern const GemmKernel kGemmQ5_K = {GgmlType::Q8_K, act_row_bytes, prepare_q8_k, tile_any8<Q5K, GgufSrc<Q5K>>,
                                     kRows,          kCols,         nullptr};
extern const GemmKernel kGemmRows16Q6_K =
    {GgmlType::Q8_K, act_row_bytes, prepare_q8_k, tile_any8<Q6K, Rows16Src<Q6K>>, kRows, kCols, locate<GgmlType::Q6_K>};
extern const GemmKernel kGemmQ6_K = {GgmlType::Q8_K, act_row_bytes, prepare_q8_k, tile_any8<Q6K, GgufSrc<Q6K>>,
                                     kRows,          kCols,         nullptr};
