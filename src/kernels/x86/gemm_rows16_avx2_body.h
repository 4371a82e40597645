// kernels/x86/gemm_rows16_avx2_body: the body of gemm_rows16_avx2.cpp (kVnni false) and
// gemm_rows16_avxvnni.cpp (kVnni true, vpdpbusd on 256-bit registers), included inside their namespace
// after the headers they need; see gemm_rows16_avx2.cpp for what the tiles compute.
// NOLINT: no include guard on purpose (one inclusion per file, in two namespaces).

namespace {

using x86::act_block_row_bytes;
using x86::ActBlock;
using x86::prepare_blocks_q8_0;
using x86::prepare_blocks_q8_1;

constexpr int kRows = 8;  // weight rows per tile: one per int32 lane (half a rows16 group)
constexpr int kCols = 4;  // tokens per tile: 8 weight vectors + 4 accumulators + temporaries in 16 ymm

// A block of 8 rows: u[k] lane l = the 4 weight bytes of elements 4k..4k+3 of row l (unsigned; Q8_0: the
// stored q + 128).
struct Block8 {
    __m256i u[8];
    __m256 d, m;  // per row: scale (and the _1 types' min)
};

inline void split_nibbles(const __m256i (&x)[4], Block8& b) {
    const __m256i lo = _mm256_set1_epi8(0x0F);
    #pragma GCC unroll 8
    for (int v = 0; v < 4; v++) {
        b.u[v] = _mm256_and_si256(x[v], lo);
        b.u[v + 4] = _mm256_and_si256(_mm256_srli_epi16(x[v], 4), lo);
    }
}

// 5-bit types: adds 16 to the bytes whose 5th bit is set in the rows' qh (lane l = row l's 32 bits).
// Bits 4k..4k+3 sit in byte k/2 of the lane, nibble k%2: a byte shuffle copies that byte into the lane's 4
// bytes, a compare against (1, 2, 4, 8) << 4(k%2) picks one bit per byte.
inline void add_fifth_bits(__m256i qh, Block8& b) {
    const __m256i base = _mm256_setr_epi8(0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12, 0, 0, 0, 0, 4, 4, 4, 4,
                                          8, 8, 8, 8, 12, 12, 12, 12);
    const __m256i sixteen = _mm256_set1_epi8(16);
    #pragma GCC unroll 8
    for (int k = 0; k < 8; k++) {
        const __m256i bytes = _mm256_shuffle_epi8(qh, _mm256_add_epi8(base, _mm256_set1_epi8((char)(k / 2))));
        const __m256i bit = _mm256_set1_epi32(k % 2 ? (int)0x80402010 : 0x08040201);
        const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
        b.u[k] = _mm256_add_epi8(b.u[k], _mm256_and_si256(set, sixteen));
    }
}

// fp16 in the low half of each int32 lane -> 8 floats.
inline __m256 halves_to_ps(__m256i x) {
    const __m256i packed = _mm256_packus_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0xFFFF)), _mm256_setzero_si256());
    return _mm256_cvtph_ps(_mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08)));
}

struct Q4_0 {
    static constexpr bool kMin = false, kNibbles = true, kFifth = false, kSigned = false;
    static constexpr size_t kQuantBytes = 256, kScaleBytes = 32;  // per 16-row group, as rows16_geometry says
    static constexpr size_t kBlockBytes = sizeof(BlockQ4_0), kQsAt = 2, kQhAt = 0;
};
struct Q4_1 {
    static constexpr bool kMin = true, kNibbles = true, kFifth = false, kSigned = false;
    static constexpr size_t kQuantBytes = 256, kScaleBytes = 64;
    static constexpr size_t kBlockBytes = sizeof(BlockQ4_1), kQsAt = 4, kQhAt = 0;
};
struct Q5_0 {
    static constexpr bool kMin = false, kNibbles = true, kFifth = true, kSigned = false;
    static constexpr size_t kQuantBytes = 320, kScaleBytes = 32;
    static constexpr size_t kBlockBytes = sizeof(BlockQ5_0), kQsAt = 6, kQhAt = 2;
};
struct Q5_1 {
    static constexpr bool kMin = true, kNibbles = true, kFifth = true, kSigned = false;
    static constexpr size_t kQuantBytes = 320, kScaleBytes = 64;
    static constexpr size_t kBlockBytes = sizeof(BlockQ5_1), kQsAt = 8, kQhAt = 4;
};
struct Q8_0 {
    static constexpr bool kMin = false, kNibbles = false, kFifth = false, kSigned = true;
    static constexpr size_t kQuantBytes = 512, kScaleBytes = 32;
    static constexpr size_t kBlockBytes = sizeof(BlockQ8_0), kQsAt = 2, kQhAt = 0;
};

// Reads blocks of half a rows16 group: quants at q (vector v of block b at q + b·kQuantBytes + 64v, 32
// bytes), scales at s (d at s + b·kScaleBytes, 8 fp16; m 32 bytes further). locate() points q and s at
// the half.
template <class W>
struct Rows16Src {
    const uint8_t *q, *s;
    Rows16Src(const uint8_t* w, size_t ws, int) : q(w), s(w + ws) {}
    inline Block8 load(int64_t b) const {
        const uint8_t* qb = q + (size_t)b * W::kQuantBytes;
        const uint8_t* sb = s + (size_t)b * W::kScaleBytes;
        Block8 r;
        if constexpr (W::kNibbles) {
            const __m256i x[4] = {_mm256_loadu_si256((const __m256i*)qb), _mm256_loadu_si256((const __m256i*)(qb + 64)),
                                  _mm256_loadu_si256((const __m256i*)(qb + 128)),
                                  _mm256_loadu_si256((const __m256i*)(qb + 192))};
            split_nibbles(x, r);
            if constexpr (W::kFifth) add_fifth_bits(_mm256_loadu_si256((const __m256i*)(qb + 256)), r);
        } else {
            #pragma GCC unroll 8
            for (int k = 0; k < 8; k++) r.u[k] = _mm256_loadu_si256((const __m256i*)(qb + 64 * k));
        }
        r.d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)sb));
        r.m = W::kMin ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(sb + 32))) : _mm256_setzero_ps();
        return r;
    }
};

// Gathers the same vectors from nr GGUF rows ws bytes apart (lanes past nr read nothing and are never stored).
template <class W>
struct GgufSrc {
    const uint8_t* w;
    __m256i idx, mask;
    GgufSrc(const uint8_t* w_, size_t ws, int nr)
        : w(w_),
          idx(_mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int)ws))),
          mask(_mm256_cmpgt_epi32(_mm256_set1_epi32(nr), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))) {}
    inline __m256i gather(const uint8_t* p) const {
        return _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), (const int*)p, idx, mask, 1);
    }
    inline Block8 load(int64_t b) const {
        const uint8_t* blk = w + (size_t)b * W::kBlockBytes;
        Block8 r;
        if constexpr (W::kNibbles) {
            const __m256i x[4] = {gather(blk + W::kQsAt), gather(blk + W::kQsAt + 4), gather(blk + W::kQsAt + 8),
                                  gather(blk + W::kQsAt + 12)};
            split_nibbles(x, r);
            if constexpr (W::kFifth) add_fifth_bits(gather(blk + W::kQhAt), r);
        } else {
            #pragma GCC unroll 8
            for (int k = 0; k < 8; k++)  // q + 128 as unsigned, as the rows16 layout stores it
                r.u[k] = _mm256_xor_si256(gather(blk + W::kQsAt + 4 * k), _mm256_set1_epi8((char)0x80));
        }
        const __m256i dm = gather(blk);  // d (and the _1 types' m in the high half)
        r.d = halves_to_ps(dm);
        r.m = W::kMin ? halves_to_ps(_mm256_srli_epi32(dm, 16)) : _mm256_setzero_ps();
        return r;
    }
};

// Σ u·a over the block for the 8 rows (exact), plus the activation block's start for the _0 types.
template <class W>
inline __m256i block_dot(const Block8& wb, const ActBlock* ab) {
    const __m256i ones = _mm256_set1_epi16(1);
    const auto a = [ab](int k) { return _mm256_set1_epi32(ab->q4[k]); };
    __m256i sum;
    if constexpr (kVnni) {  // AVX-VNNI: vpdpbusd does it all (Q8_0's bytes are q + 128, start = -128·Σa)
        sum = _mm256_setzero_si256();
        #pragma GCC unroll 8
        for (int k = 0; k < 8; k++) sum = _mm256_dpbusd_avx_epi32(sum, wb.u[k], a(k));
    } else if constexpr (W::kSigned) {  // u = q + 128: |q| · sign(a, q), one vpmaddwd per pair of products
        const __m256i flip = _mm256_set1_epi8((char)0x80);
        sum = _mm256_setzero_si256();
        #pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            const __m256i q = _mm256_xor_si256(wb.u[k], flip);
            const __m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(q), _mm256_sign_epi8(a(k), q));
            sum = _mm256_add_epi32(sum, _mm256_madd_epi16(p, ones));
        }
        // Σ q·a directly (prepared with start = 0); the AVX-512 tile reaches the same integer as
        // Σ (q + 128)·a - 128·Σa
    } else if constexpr (W::kFifth) {  // u <= 31: four products per s16 sum at most
        __m256i p0 = _mm256_maddubs_epi16(wb.u[0], a(0)), p1 = _mm256_maddubs_epi16(wb.u[4], a(4));
        #pragma GCC unroll 8
        for (int k = 1; k < 4; k++) {
            p0 = _mm256_add_epi16(p0, _mm256_maddubs_epi16(wb.u[k], a(k)));
            p1 = _mm256_add_epi16(p1, _mm256_maddubs_epi16(wb.u[k + 4], a(k + 4)));
        }
        sum = _mm256_add_epi32(_mm256_madd_epi16(p0, ones), _mm256_madd_epi16(p1, ones));
    } else {  // u <= 15: all eight in one s16 sum
        __m256i p = _mm256_maddubs_epi16(wb.u[0], a(0));
        #pragma GCC unroll 8
        for (int k = 1; k < 8; k++) p = _mm256_add_epi16(p, _mm256_maddubs_epi16(wb.u[k], a(k)));
        sum = _mm256_madd_epi16(p, ones);
    }
    if constexpr (!W::kMin) sum = _mm256_add_epi32(sum, _mm256_set1_epi32(ab->start));
    return sum;
}

// The 8 × C tile over blocks of Src; prepared activation rows `as` bytes apart.
template <class W, class Src, int C>
void tile(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, int nr, float* y, size_t ldy) {
    const Src src(w, ws, nr);
    __m256 acc[C];
    #pragma GCC unroll 8
    for (int c = 0; c < C; c++) acc[c] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / 32; b++) {
        const Block8 wb = src.load(b);
        #pragma GCC unroll 8
        for (int c = 0; c < C; c++) {
            const ActBlock* ab = (const ActBlock*)(a + c * as) + b;
            const __m256 f = _mm256_cvtepi32_ps(block_dot<W>(wb, ab));
            acc[c] = _mm256_fmadd_ps(f, _mm256_mul_ps(wb.d, _mm256_set1_ps(ab->d)), acc[c]);
            if constexpr (W::kMin) acc[c] = _mm256_fmadd_ps(wb.m, _mm256_set1_ps(ab->s), acc[c]);
        }
    }
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(nr), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    #pragma GCC unroll 8
    for (int c = 0; c < C; c++) _mm256_maskstore_ps(y + c * ldy, mask, acc[c]);
}

template <class W, class Src>
void tile_any8(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, int nr, int nc, float* y,
               size_t ldy) {
    x86::with_cols<kCols>(nc, [&]<int C>() { tile<W, Src, C>(n, w, ws, a, as, nr, y, ldy); });
}

// Rows [o, o + 8) are half o / 8 % 2 of group o / 16: its quants (32 bytes into each 64-byte vector for the
// second half) and, as w_stride, the distance from there to its 8 scales.
template <GgmlType T>
void locate(const uint8_t* base, int64_t n_out, int64_t n_in, int64_t o, const uint8_t** w, size_t* ws) {
    const Rows16Geometry g = rows16_geometry(T, n_out, n_in);
    const int64_t group = o / 16, half = o / 8 % 2;
    *w = base + g.quants_at(group, 0) + 32 * half;
    *ws = g.scales_at(group, 0) + 16 * half - (g.quants_at(group, 0) + 32 * half);
}

}  // namespace

// Referenced from avx2_table.cpp: per type the rows16 kernel and the GGUF-layout kernel (in bee::avx2 and, with
// AVX-VNNI dot products, bee::avxvnni).
extern const GemmKernel kGemmRows16Q4_0 = {GgmlType::Q8_0, act_block_row_bytes, prepare_blocks_q8_0<8>,
                                           tile_any8<Q4_0, Rows16Src<Q4_0>>, kRows, kCols, locate<GgmlType::Q4_0>};
extern const GemmKernel kGemmQ4_0 = {GgmlType::Q8_0, act_block_row_bytes, prepare_blocks_q8_0<8>,
                                     tile_any8<Q4_0, GgufSrc<Q4_0>>, kRows, kCols, nullptr};
extern const GemmKernel kGemmRows16Q4_1 = {GgmlType::Q8_1, act_block_row_bytes, prepare_blocks_q8_1,
                                           tile_any8<Q4_1, Rows16Src<Q4_1>>, kRows, kCols, locate<GgmlType::Q4_1>};
extern const GemmKernel kGemmQ4_1 = {GgmlType::Q8_1, act_block_row_bytes, prepare_blocks_q8_1,
                                     tile_any8<Q4_1, GgufSrc<Q4_1>>, kRows, kCols, nullptr};
extern const GemmKernel kGemmRows16Q5_0 = {GgmlType::Q8_0, act_block_row_bytes, prepare_blocks_q8_0<16>,
                                           tile_any8<Q5_0, Rows16Src<Q5_0>>, kRows, kCols, locate<GgmlType::Q5_0>};
extern const GemmKernel kGemmQ5_0 = {GgmlType::Q8_0, act_block_row_bytes, prepare_blocks_q8_0<16>,
                                     tile_any8<Q5_0, GgufSrc<Q5_0>>, kRows, kCols, nullptr};
extern const GemmKernel kGemmRows16Q5_1 = {GgmlType::Q8_1, act_block_row_bytes, prepare_blocks_q8_1,
                                           tile_any8<Q5_1, Rows16Src<Q5_1>>, kRows, kCols, locate<GgmlType::Q5_1>};
extern const GemmKernel kGemmQ5_1 = {GgmlType::Q8_1, act_block_row_bytes, prepare_blocks_q8_1,
                                     tile_any8<Q5_1, GgufSrc<Q5_1>>, kRows, kCols, nullptr};
extern const GemmKernel kGemmRows16Q8_0 = {GgmlType::Q8_0, act_block_row_bytes, prepare_blocks_q8_0<kVnni ? 128 : 0>,
                                           tile_any8<Q8_0, Rows16Src<Q8_0>>, kRows, kCols, locate<GgmlType::Q8_0>};
extern const GemmKernel kGemmQ8_0 = {GgmlType::Q8_0, act_block_row_bytes, prepare_blocks_q8_0<kVnni ? 128 : 0>,
                                     tile_any8<Q8_0, GgufSrc<Q8_0>>, kRows, kCols, nullptr};

