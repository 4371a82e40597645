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
constexpr int kCols = 4;  // tokens per tile: 4 sums + 4 accumulators + a weight vector and temporaries in 16 ymm

// A Q5 block of 8 rows: u[k] lane l = the 4 weight bytes of elements 4k..4k+3 of row l (unsigned).
struct Block8 {
    __m256i u[8];
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
    const __m256i base = _mm256_setr_epi8(0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12, 0, 0, 0, 0, 4, 4, 4, 4, 8,
                                          8, 8, 8, 12, 12, 12, 12);
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
    static constexpr bool kMin = false, kNibbles = true, kFifth = false;
    static constexpr size_t kQuantBytes = 256, kScaleBytes = 32;  // per 16-row group, as rows16_geometry says
    static constexpr size_t kBlockBytes = sizeof(BlockQ4_0), kQsAt = 2, kQhAt = 0;
};
struct Q4_1 {
    static constexpr bool kMin = true, kNibbles = true, kFifth = false;
    static constexpr size_t kQuantBytes = 256, kScaleBytes = 64;
    static constexpr size_t kBlockBytes = sizeof(BlockQ4_1), kQsAt = 4, kQhAt = 0;
};
struct Q5_0 {
    static constexpr bool kMin = false, kNibbles = true, kFifth = true;
    static constexpr size_t kQuantBytes = 320, kScaleBytes = 32;
    static constexpr size_t kBlockBytes = sizeof(BlockQ5_0), kQsAt = 6, kQhAt = 2;
};
struct Q5_1 {
    static constexpr bool kMin = true, kNibbles = true, kFifth = true;
    static constexpr size_t kQuantBytes = 320, kScaleBytes = 64;
    static constexpr size_t kBlockBytes = sizeof(BlockQ5_1), kQsAt = 8, kQhAt = 4;
};
struct Q8_0 {
    static constexpr bool kMin = false, kNibbles = false, kFifth = false;
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
    // Raw vector v of block b: the packed nibbles (v < 4) or, for Q8_0, u[v].
    inline __m256i raw(int64_t b, int v) const {
        return _mm256_loadu_si256((const __m256i*)(q + (size_t)b * W::kQuantBytes + 64 * v));
    }
    inline __m256i qh(int64_t b) const { return raw(b, 4); }
    // Per row: the scale d and (the _1 types) the min m.
    inline void scales(int64_t b, __m256& d, __m256& m) const {
        const uint8_t* sb = s + (size_t)b * W::kScaleBytes;
        d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)sb));
        if constexpr (W::kMin) m = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(sb + 32)));
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
    inline __m256i raw(int64_t b, int v) const {
        const uint8_t* blk = w + (size_t)b * W::kBlockBytes;
        if constexpr (W::kNibbles) return gather(blk + W::kQsAt + 4 * v);
        // q + 128 as unsigned, as the rows16 layout stores it
        return _mm256_xor_si256(gather(blk + W::kQsAt + 4 * v), _mm256_set1_epi8((char)0x80));
    }
    inline __m256i qh(int64_t b) const { return gather(w + (size_t)b * W::kBlockBytes + W::kQhAt); }
    inline void scales(int64_t b, __m256& d, __m256& m) const {
        const __m256i dm = gather(w + (size_t)b * W::kBlockBytes);  // d (and the _1 types' m in the high half)
        d = halves_to_ps(dm);
        if constexpr (W::kMin) m = halves_to_ps(_mm256_srli_epi32(dm, 16));
    }
};

// Q5_0 / Q5_1 block b of either source as 8 vectors u[k] (u <= 31).
template <class W, class Src>
inline Block8 load_block5(const Src& src, int64_t b) {
    Block8 r;
    const __m256i x[4] = {src.raw(b, 0), src.raw(b, 1), src.raw(b, 2), src.raw(b, 3)};
    split_nibbles(x, r);
    add_fifth_bits(src.qh(b), r);
    return r;
}

// Σ u·a over a Q5 block for the 8 rows (exact), plus the activation block's start for Q5_0.
template <class W>
inline __m256i block_dot5(const Block8& wb, const ActBlock* ab) {
    const auto a = [ab](int k) { return _mm256_set1_epi32(ab->q4[k]); };
    __m256i sum;
    if constexpr (kVnni) {
        sum = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) sum = _mm256_dpbusd_avx_epi32(sum, wb.u[k], a(k));
    } else {  // four products per s16 sum at most
        const __m256i ones = _mm256_set1_epi16(1);
        __m256i p0 = _mm256_maddubs_epi16(wb.u[0], a(0)), p1 = _mm256_maddubs_epi16(wb.u[4], a(4));
#pragma GCC unroll 8
        for (int k = 1; k < 4; k++) {
            p0 = _mm256_add_epi16(p0, _mm256_maddubs_epi16(wb.u[k], a(k)));
            p1 = _mm256_add_epi16(p1, _mm256_maddubs_epi16(wb.u[k + 4], a(k + 4)));
        }
        sum = _mm256_add_epi32(_mm256_madd_epi16(p0, ones), _mm256_madd_epi16(p1, ones));
    }
    if constexpr (!W::kMin) sum = _mm256_add_epi32(sum, _mm256_set1_epi32(ab->start));
    return sum;
}

// An empty asm that "changes" x: the compiler can no longer regroup the additions into x around it. GCC
// otherwise reassociates the C s16 chains into trees whose products are all live at once, and spills.
inline void keep_order(__m256i& x) { asm("" : "+x"(x)); }

// Tiles of up to this many tokens load a block's vectors before its products, in address order: a
// matvec streams its weights from memory, and with the loads left to GCC's scheduling (out of address
// order) a Q8_0 matvec ran 35% slower. Wider tiles have no registers to spare and are not
// bandwidth-bound: they load each vector where it is used.
constexpr int kEarlyCols = 2;

template <int C, int N, class Src>
inline void load_early(const Src& src, int64_t b, __m256i (&raw)[N]) {
    if constexpr (C <= kEarlyCols) {
#pragma GCC unroll 8
        for (int v = 0; v < N; v++) {
            raw[v] = src.raw(b, v);
            asm volatile("" : "+x"(raw[v]));  // in address order (volatile asms keep their order)
        }
    }
}

// Σ u·a of block b for the 8 rows and each of the C tokens (exact), plus the _0 types' start. The loops
// run vector by vector over the tokens, so one weight vector is live at a time and the C sums, the C
// accumulators and the temporaries fit in the 16 ymm registers (all 8 vectors for 4 tokens would spill).
template <class W, class Src, int C>
inline void block_dots(const Src& src, int64_t b, const ActBlock* const (&ab)[C], __m256i (&sum)[C]) {
    const auto a = [&ab](int c, int k) { return _mm256_set1_epi32(ab[c]->q4[k]); };
    const __m256i ones = _mm256_set1_epi16(1);
    if constexpr (W::kFifth) {  // Q5_0 / Q5_1: the whole block, token by token
        const Block8 wb = load_block5<W>(src, b);
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) sum[c] = block_dot5<W>(wb, ab[c]);
        return;
    } else if constexpr (W::kNibbles) {  // Q4_0 / Q4_1: u <= 15, all eight products of a block in one s16 sum
        const __m256i lo = _mm256_set1_epi8(0x0F);
        __m256i raw[4];
        load_early<C, 4>(src, b, raw);
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++) {
            const __m256i x = C <= kEarlyCols ? raw[v] : src.raw(b, v);
            const __m256i u0 = _mm256_and_si256(x, lo), u1 = _mm256_and_si256(_mm256_srli_epi16(x, 4), lo);
#pragma GCC unroll 8
            for (int c = 0; c < C; c++) {
                if constexpr (kVnni) {
                    const __m256i s = v ? sum[c] : _mm256_setzero_si256();
                    sum[c] = _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(s, u0, a(c, v)), u1, a(c, v + 4));
                } else {
                    const __m256i t =
                        _mm256_add_epi16(_mm256_maddubs_epi16(u0, a(c, v)), _mm256_maddubs_epi16(u1, a(c, v + 4)));
                    sum[c] = v ? _mm256_add_epi16(sum[c], t) : t;  // s16 until the last vector
                    keep_order(sum[c]);
                }
            }
        }
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) {
            if constexpr (!kVnni) sum[c] = _mm256_madd_epi16(sum[c], ones);
            if constexpr (!W::kMin) sum[c] = _mm256_add_epi32(sum[c], _mm256_set1_epi32(ab[c]->start));
        }
    } else {  // Q8_0: u = q + 128
        const __m256i flip = _mm256_set1_epi8((char)0x80);
        __m256i raw[8];
        load_early<C, 8>(src, b, raw);
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            const __m256i u = C <= kEarlyCols ? raw[k] : src.raw(b, k);
            const __m256i q = _mm256_xor_si256(u, flip), aq = _mm256_abs_epi8(q);
#pragma GCC unroll 8
            for (int c = 0; c < C; c++) {
                __m256i t;
                if constexpr (kVnni) {  // start = -128·Σa
                    t = _mm256_dpbusd_avx_epi32(k ? sum[c] : _mm256_set1_epi32(ab[c]->start), u, a(c, k));
                } else {  // |q| · sign(a, q): Σ q·a directly (prepared with start = 0)
                    t = _mm256_madd_epi16(_mm256_maddubs_epi16(aq, _mm256_sign_epi8(a(c, k), q)), ones);
                    if (k) t = _mm256_add_epi32(sum[c], t);
                }
                sum[c] = t;
            }
        }
    }
}

// The 8 × C tile over blocks of Src; prepared activation rows `as` bytes apart.
template <class W, class Src, int C>
void tile(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, int nr, float* y, size_t ldy) {
    const Src src(w, ws, nr);
    __m256 acc[C];
#pragma GCC unroll 8
    for (int c = 0; c < C; c++) acc[c] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / 32; b++) {
        const ActBlock* ab[C];
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) ab[c] = (const ActBlock*)(a + c * as) + b;
        __m256 d, m;
        src.scales(b, d, m);  // a stream of its own: read before the products, as the quants are
        __m256i sum[C];
        block_dots<W, Src, C>(src, b, ab, sum);
#pragma GCC unroll 8
        for (int c = 0; c < C; c++) {
            const __m256 f = _mm256_cvtepi32_ps(sum[c]);
            acc[c] = _mm256_fmadd_ps(f, _mm256_mul_ps(d, _mm256_set1_ps(ab[c]->d)), acc[c]);
            if constexpr (W::kMin) acc[c] = _mm256_fmadd_ps(m, _mm256_set1_ps(ab[c]->s), acc[c]);
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
extern const GemmKernel kGemmRows16Q4_0 =
    {GgmlType::Q8_0, act_block_row_bytes,   prepare_blocks_q8_0<8>, tile_any8<Q4_0, Rows16Src<Q4_0>>, kRows,
     kCols,          locate<GgmlType::Q4_0>};
extern const GemmKernel kGemmQ4_0 =
    {GgmlType::Q8_0, act_block_row_bytes, prepare_blocks_q8_0<8>, tile_any8<Q4_0, GgufSrc<Q4_0>>, kRows, kCols,
     nullptr};
extern const GemmKernel kGemmRows16Q4_1 =
    {GgmlType::Q8_1, act_block_row_bytes,   prepare_blocks_q8_1, tile_any8<Q4_1, Rows16Src<Q4_1>>, kRows,
     kCols,          locate<GgmlType::Q4_1>};
extern const GemmKernel kGemmQ4_1 =
    {GgmlType::Q8_1, act_block_row_bytes, prepare_blocks_q8_1, tile_any8<Q4_1, GgufSrc<Q4_1>>, kRows, kCols, nullptr};
extern const GemmKernel kGemmRows16Q5_0 =
    {GgmlType::Q8_0, act_block_row_bytes,   prepare_blocks_q8_0<16>, tile_any8<Q5_0, Rows16Src<Q5_0>>, kRows,
     kCols,          locate<GgmlType::Q5_0>};
extern const GemmKernel kGemmQ5_0 =
    {GgmlType::Q8_0, act_block_row_bytes, prepare_blocks_q8_0<16>, tile_any8<Q5_0, GgufSrc<Q5_0>>, kRows, kCols,
     nullptr};
extern const GemmKernel kGemmRows16Q5_1 =
    {GgmlType::Q8_1, act_block_row_bytes,   prepare_blocks_q8_1, tile_any8<Q5_1, Rows16Src<Q5_1>>, kRows,
     kCols,          locate<GgmlType::Q5_1>};
extern const GemmKernel kGemmQ5_1 =
    {GgmlType::Q8_1, act_block_row_bytes, prepare_blocks_q8_1, tile_any8<Q5_1, GgufSrc<Q5_1>>, kRows, kCols, nullptr};
extern const GemmKernel kGemmRows16Q8_0 = {GgmlType::Q8_0,
                                           act_block_row_bytes,
                                           prepare_blocks_q8_0<kVnni ? 128 : 0>,
                                           tile_any8<Q8_0, Rows16Src<Q8_0>>,
                                           kRows,
                                           kCols,
                                           locate<GgmlType::Q8_0>};
extern const GemmKernel kGemmQ8_0 = {GgmlType::Q8_0,
                                     act_block_row_bytes,
                                     prepare_blocks_q8_0<kVnni ? 128 : 0>,
                                     tile_any8<Q8_0, GgufSrc<Q8_0>>,
                                     kRows,
                                     kCols,
                                     nullptr};
