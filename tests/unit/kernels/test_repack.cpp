// tests/unit/kernels/test_repack: load-time weight repacking (kernels/repack.h). A repacked matrix unpacks
// back to the exact GGUF bytes, and matmul on it gives bit for bit what matmul on the GGUF copy gives, on
// every ISA (the ones without a repacked tile unpack rows on the fly), every tile shape, batch size and
// thread count. The AVX2 tiles (8 rows: half a rows16 group) give the AVX-512 tiles' bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/fp16.h"
#include "kernels/gemm.h"
#include "kernels/kernels.h"
#include "kernels/repack.h"
#include "kernels_test_util.h"

namespace bee {
namespace {

using test::all_isas;
using test::IsaScope;
using test::random_floats;

const GgmlType kRepackTypes[] = {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0,
                                 GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

bool is_k(GgmlType t) { return ggml_type_info(t).block_size == 256; }

// Row lengths for a test: those given for the 32-element types, 256/512/768 for the K-quants (1-3 super-blocks).
std::vector<int64_t> lengths(GgmlType t, std::vector<int64_t> small) {
    return is_k(t) ? std::vector<int64_t>{256, 512, 768} : small;
}

// Byte offsets of the fp16 scales inside a block.
std::vector<size_t> scale_offsets(GgmlType t) {
    switch (t) {
        case GgmlType::Q4_1:
        case GgmlType::Q5_1:
        case GgmlType::Q4_K:
        case GgmlType::Q5_K: return {0, 2};
        case GgmlType::Q6_K: return {208};
        case GgmlType::Q2_K: return {80, 82};
        case GgmlType::Q3_K: return {108};
        default: return {0};
    }
}

// Quantized random weights, or (raw) random bytes, every quant code included, with tame fp16 scales.
std::vector<uint8_t> make_weights(GgmlType t, int64_t n_out, int64_t n_in, uint32_t seed, bool raw) {
    std::vector<uint8_t> w(ggml_row_size(t, n_in) * n_out);
    if (!raw) {
        const std::vector<float> f = random_floats((size_t)(n_out * n_in), seed);
        quantize_matrix(t, f.data(), w.data(), n_out, n_in);
        return w;
    }
    std::mt19937 rng(seed);
    for (uint8_t& b : w) b = (uint8_t)rng();
    const size_t blk = ggml_type_info(t).type_size;
    for (size_t off = 0; off < w.size(); off += blk)
        for (size_t so : scale_offsets(t)) {
            const fp16_t s = fp32_to_fp16(std::ldexp(1.0f + (rng() % 100) / 100.0f, -(int)(rng() % 8) - 4));
            memcpy(&w[off + so], &s, 2);
        }
    return w;
}

bool have_repacking() { return cpu_isa_max() >= Isa::avx512; }

// The tile paths on this machine (the rows16 layout is the same for all of them): AVX-512, and AVX2 with
// and (where the CPU has it) without AVX-VNNI.
struct TilePath {
    Isa isa;
    bool vnni;
    std::string name() const { return std::string(isa_name(isa)) + (vnni ? "+vnni" : ""); }
};
std::vector<TilePath> tile_paths() {
    std::vector<TilePath> v;
    if (cpu_isa_max() >= Isa::avx512) v.push_back({Isa::avx512, false});
    if (cpu_isa_max() >= Isa::avx2)
        for (bool vnni : test::vnni_modes()) v.push_back({Isa::avx2, vnni});
    return v;
}

RepackedWeight repack_on_avx512(GgmlType t, const std::vector<uint8_t>& w, int64_t n_out, int64_t n_in) {
    IsaScope scope(Isa::avx512);
    return repack_weight(t, w.data(), n_out, n_in);
}

// Rows not a multiple of 16 (padding rows), odd and even block counts.
TEST(Repack, UnpacksToTheOriginalBytes) {
    if (!have_repacking()) GTEST_SKIP() << "no AVX-512 on this CPU: nothing is repacked";
    for (GgmlType t : kRepackTypes)
        for (int64_t n_in : lengths(t, {32, 96, 128, 576}))
            for (int64_t n_out : {1, 6, 23, 37}) {
                const std::vector<uint8_t> w = make_weights(t, n_out, n_in, 3 + (uint32_t)n_in, true);
                const RepackedWeight r = repack_on_avx512(t, w, n_out, n_in);
                ASSERT_EQ(r.layout, WeightLayout::rows16) << ggml_type_name(t);
                ASSERT_EQ(r.bytes, rows16_geometry(t, n_out, n_in).total_bytes());
                const size_t row = ggml_row_size(t, n_in);
                std::vector<uint8_t> back(row);
                for (int64_t o = 0; o < n_out; o++) {
                    unpack_row(t, r.layout, r.data.get(), n_out, n_in, o, back.data());
                    ASSERT_EQ(0, memcmp(back.data(), w.data() + o * row, row))
                        << ggml_type_name(t) << " n_in=" << n_in << " n_out=" << n_out << " row " << o;
                }
            }
}

// matmul on the repacked copy == matmul on the GGUF bytes, bit for bit, on every ISA; with n_out 21-23
// and 10-11 tokens ragged tiles (5-7 rows × 2-3 tokens) occur beside full ones; each token alone == in
// the batch.
TEST(Repack, MatmulEqualsGgufLayoutBitForBit) {
    if (!have_repacking()) GTEST_SKIP() << "no AVX-512 on this CPU: nothing is repacked";
    ThreadPool pool1(1), pool2(2);
    for (GgmlType t : kRepackTypes)
        for (int64_t n_in : lengths(t, {32, 96, 576}))
            for (int64_t n_out : {21, 22, 23})
                for (bool raw : {false, true}) {
                    const int64_t n_tok = 10 + n_out % 2;
                    const std::vector<uint8_t> w = make_weights(t, n_out, n_in, 50 + (uint32_t)(n_in + n_out), raw);
                    const RepackedWeight r = repack_on_avx512(t, w, n_out, n_in);
                    const std::vector<float> x = random_floats(n_tok * n_in, 9 + (uint32_t)n_in, -2, 2);
                    std::vector<float> want(n_tok * n_out), got(n_tok * n_out), alone(n_out);
                    for (Isa isa : all_isas()) {
                        IsaScope scope(isa);
                        matmul(pool1, t, w.data(), n_out, n_in, x.data(), n_tok, want.data());
                        for (ThreadPool* pool : {&pool1, &pool2}) {
                            matmul(*pool, t, r.data.get(), n_out, n_in, x.data(), n_tok, got.data(), r.layout);
                            ASSERT_EQ(0, memcmp(want.data(), got.data(), want.size() * 4))
                                << ggml_type_name(t) << " " << isa_name(isa) << " n_in=" << n_in << " n_out=" << n_out
                                << " raw=" << raw << " threads=" << pool->size();
                        }
                        for (int64_t c = 0; c < n_tok; c++) {
                            matmul(pool2, t, r.data.get(), n_out, n_in, x.data() + c * n_in, 1, alone.data(), r.layout);
                            ASSERT_EQ(0, memcmp(alone.data(), want.data() + c * n_out, n_out * 4))
                                << ggml_type_name(t) << " " << isa_name(isa) << " token " << c;
                        }
                    }
                }
}

// Every tile shape of a rows16 tile (1-R rows × 1-C tokens) at the start of a tile other than the first —
// for the 8-row AVX2 tiles also a second half of a group — gives each output exactly what the GGUF-layout
// 1 × 1 tile gives it, on every ISA with tiles.
TEST(Repack, EveryRows16TileShapeEqualsGgufOneByOne) {
    int checked = 0;
    for (GgmlType t : kRepackTypes)
        for (const TilePath& path : tile_paths())
            for (int64_t n : lengths(t, {32, 160})) {
                const Isa isa = path.isa;
                IsaScope scope(isa);
                test::VnniScope vnni(path.vnni);
                const GemmKernel* packed = gemm_kernel_for(t, WeightLayout::rows16);
                const GemmKernel* plain = gemm_kernel_for(t);
                ASSERT_TRUE(packed && plain && packed->locate) << isa_name(isa);
                const int R = packed->max_rows, C = packed->max_cols;
                const int64_t n_out =
                    32;  // tiles at rows R and 3R: group 1, or (R = 8) the second halves of groups 0 and 1
                const std::vector<uint8_t> w = make_weights(t, n_out, n, 70 + (uint32_t)n, false);
                const RepackedWeight r = repack_weight(t, w.data(), n_out, n);
                const std::vector<float> x = random_floats(C * n, 12 + (uint32_t)n, -2, 2);
                const size_t w_row = ggml_row_size(t, n), a_row = packed->prepared_row_bytes(n);
                std::vector<uint8_t> q(ggml_row_size(packed->act_type, n)), a_buf(a_row * C + 64);
                uint8_t* a = (uint8_t*)(((uintptr_t)a_buf.data() + 63) & ~(uintptr_t)63);
                for (int c = 0; c < C; c++) {
                    quant_traits(packed->act_type)->quantize_row(x.data() + c * n, q.data(), n);
                    packed->prepare(q.data(), a + c * a_row, n);
                }
                for (const int64_t o0 : {(int64_t)R, (int64_t)3 * R}) {
                    if (o0 + R > n_out) continue;
                    std::vector<float> one(R * C);  // (C, R): rows o0.. one by one, GGUF layout
                    for (int c = 0; c < C; c++)
                        for (int o = 0; o < R; o++)
                            plain->tile(n, w.data() + (o0 + o) * w_row, w_row, a + c * a_row, a_row, 1, 1,
                                        &one[c * R + o], R);
                    const uint8_t* wt;
                    size_t ws;
                    packed->locate(r.data.get(), n_out, n, o0, &wt, &ws);
                    for (int nr = 1; nr <= R; nr++)
                        for (int nc = 1; nc <= C; nc++) {
                            std::vector<float> y(R * C, NAN);
                            packed->tile(n, wt, ws, a, a_row, nr, nc, y.data(), R);
                            for (int c = 0; c < C; c++)
                                for (int o = 0; o < R; o++) {
                                    if (c < nc && o < nr) {
                                        ASSERT_EQ(0, memcmp(&y[c * R + o], &one[c * R + o], 4))
                                            << ggml_type_name(t) << " " << path.name() << " n=" << n << " rows " << o0
                                            << " tile " << nr << "x" << nc << " o=" << o << " c=" << c;
                                    } else {
                                        ASSERT_TRUE(std::isnan(y[c * R + o]))
                                            << "tile wrote outside " << nr << "x" << nc;
                                    }
                                }
                        }
                    checked++;
                }
            }
    if (checked == 0) GTEST_SKIP() << "no AVX2 on this CPU: no tiles";
}

// An AVX2 tile and an AVX-512 tile give every output the same bits (same exact integer block sums, same
// float operations per lane): matmul on both ISAs, repacked weights, ragged shapes.
TEST(Repack, Avx2TilesEqualAvx512Tiles) {
    if (!have_repacking()) GTEST_SKIP() << "no AVX-512 on this CPU: nothing to compare the AVX2 tiles with";
    ThreadPool pool(2);
    for (GgmlType t : kRepackTypes)
        for (bool raw : {false, true}) {
            const int64_t n_out = 45, n_in = is_k(t) ? 512 : 288, n_tok = 7;
            const std::vector<uint8_t> w = make_weights(t, n_out, n_in, 90 + raw, raw);
            const RepackedWeight r = repack_on_avx512(t, w, n_out, n_in);
            const std::vector<float> x = random_floats(n_tok * n_in, 31, -3, 3);
            std::vector<float> y512(n_tok * n_out), y2(n_tok * n_out);
            {
                IsaScope scope(Isa::avx512);
                matmul(pool, t, r.data.get(), n_out, n_in, x.data(), n_tok, y512.data(), r.layout);
            }
            for (bool vnni : test::vnni_modes()) {
                IsaScope scope(Isa::avx2);
                test::VnniScope v(vnni);
                ASSERT_NE(gemm_kernel_for(t, WeightLayout::rows16), nullptr);
                matmul(pool, t, r.data.get(), n_out, n_in, x.data(), n_tok, y2.data(), r.layout);
                ASSERT_EQ(0, memcmp(y512.data(), y2.data(), y2.size() * 4))
                    << ggml_type_name(t) << " raw=" << raw << " vnni=" << vnni;
            }
        }
}

// The s16 sums of the AVX2 tiles must not saturate: every weight code at its largest (all quant bits set,
// or Q8_0's -128 and 127) against activations that all quantize to the same extreme (+127, or Q8_K's
// -128), so no product cancels another: the tiles agree with the scalar reference.
TEST(Repack, Avx2TilesDoNotSaturate) {
    if (cpu_isa_max() < Isa::avx2) GTEST_SKIP() << "no AVX2 on this CPU";
    ThreadPool pool(1);
    for (GgmlType t : kRepackTypes)
        for (uint8_t fill : {(uint8_t)0xFF, (uint8_t)0x80, (uint8_t)0x7F})
            for (float sign : {1.0f, -1.0f}) {
                const int64_t n_out = 16, n_in = is_k(t) ? 512 : 256, n_tok = 2;
                std::vector<uint8_t> w = make_weights(t, n_out, n_in, 5, true);
                std::vector<uint8_t> scales(w);  // keep the tame scales make_weights wrote
                memset(w.data(), fill, w.size());
                const size_t blk = ggml_type_info(t).type_size;
                for (size_t off = 0; off < w.size(); off += blk)
                    for (size_t so : scale_offsets(t)) memcpy(&w[off + so], &scales[off + so], 2);
                const std::vector<float> x(n_tok * n_in, sign);
                std::vector<float> want(n_tok * n_out), got(n_tok * n_out);
                {
                    IsaScope scope(Isa::scalar);
                    matmul(pool, t, w.data(), n_out, n_in, x.data(), n_tok, want.data());
                }
                IsaScope scope(Isa::avx2);
                const RepackedWeight r = repack_weight(t, w.data(), n_out, n_in);
                for (bool vnni : test::vnni_modes()) {
                    for (bool packed : {false, true}) {
                        test::VnniScope v(vnni);
                        if (packed) matmul(pool, t, r.data.get(), n_out, n_in, x.data(), n_tok, got.data(), r.layout);
                        else matmul(pool, t, w.data(), n_out, n_in, x.data(), n_tok, got.data());
                        for (size_t i = 0; i < got.size(); i++)
                            ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::fabs(want[i])))
                                << ggml_type_name(t) << " fill " << (int)fill << " sign " << sign << " packed "
                                << packed << " vnni " << vnni;
                    }
                }
            }
}

// The active ISA decides: AVX-512 and AVX2 repack Q4_0/Q4_1/Q5_0/Q5_1/Q8_0 and the K-quants Q2_K-Q6_K into
// rows16 (and have their tiles), scalar nothing.
TEST(Repack, PreferredLayoutFollowsTheIsa) {
    for (Isa isa : all_isas()) {
        IsaScope scope(isa);
        for (GgmlType t : kRepackTypes) {
            const bool packs = isa >= Isa::avx2;
            EXPECT_EQ(preferred_layout(t), packs ? WeightLayout::rows16 : WeightLayout::gguf) << isa_name(isa);
            EXPECT_EQ(gemm_kernel_for(t, WeightLayout::rows16) != nullptr, packs) << isa_name(isa);
            const std::vector<uint8_t> w = make_weights(t, 4, is_k(t) ? 256 : 64, 1, false);
            EXPECT_EQ(repack_weight(t, w.data(), 4, is_k(t) ? 256 : 64).data != nullptr, packs);
        }
        for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16})
            EXPECT_EQ(preferred_layout(t), WeightLayout::gguf) << ggml_type_name(t);
    }
}

}  // namespace
}  // namespace bee
