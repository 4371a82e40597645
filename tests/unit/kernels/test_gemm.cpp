// tests/unit/kernels/test_gemm: the blocked matmul tile kernels (kernels/gemm.h) of every ISA that has
// them: each tile shape against the 1 × 1 tile bit for bit, odd block counts and ragged edges against
// ref::matmul, raw weight bytes a quantizer never writes, and batch invariance through matmul().
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/fp16.h"
#include "kernels/gemm.h"
#include "kernels/kernels.h"
#include "kernels_test_util.h"

namespace bee {
namespace {

using test::all_isas;
using test::IsaScope;
using test::random_floats;

const GgmlType kTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0, GgmlType::Q4_1,
                           GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q2_K, GgmlType::Q3_K,
                           GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

// Row lengths covering one block, an odd and an even number of blocks (tile kernels pair blocks).
std::vector<int64_t> lengths_for(GgmlType t) {
    const int64_t bs = ggml_type_info(t).block_size;
    if (bs == 1) return {8, 40, 576};
    return {bs, 3 * bs, 4 * bs, 9 * bs};
}

// Weights quantized from random floats; raw = random bytes with tame fp16 scales at the block starts.
std::vector<uint8_t> make_weights(GgmlType t, int64_t n_out, int64_t n_in, uint32_t seed) {
    std::vector<float> f = random_floats((size_t)(n_out * n_in), seed);
    for (size_t i = 0; i < f.size(); i += 53) f[i] *= 6.0f;  // outliers
    std::vector<uint8_t> w(ggml_row_size(t, n_in) * n_out);
    quantize_matrix(t, f.data(), w.data(), n_out, n_in);
    return w;
}

// Σ|w·a| of each output (dequantized operands, activations as the reference quantizes them).
std::vector<double> magnitudes(GgmlType t, const std::vector<uint8_t>& w, const std::vector<float>& x, int64_t n_out,
                               int64_t n_in, int64_t n_tok) {
    const QuantTraits* tr = quant_traits(t);
    std::vector<float> wd(n_in), ad(n_in);
    std::vector<uint8_t> aq(ggml_row_size(tr->vec_dot_type, n_in));
    std::vector<double> mag(n_tok * n_out);
    for (int64_t c = 0; c < n_tok; c++) {
        if (tr->vec_dot_type == GgmlType::F32) {
            memcpy(ad.data(), x.data() + c * n_in, n_in * 4);
        } else {
            quant_traits(tr->vec_dot_type)->quantize_row(x.data() + c * n_in, aq.data(), n_in);
            quant_traits(tr->vec_dot_type)->dequantize_row(aq.data(), ad.data(), n_in);
        }
        for (int64_t r = 0; r < n_out; r++) {
            tr->dequantize_row(w.data() + r * ggml_row_size(t, n_in), wd.data(), n_in);
            double m = 0;
            for (int64_t i = 0; i < n_in; i++) m += std::fabs((double)wd[i] * ad[i]);
            mag[c * n_out + r] = m;
        }
    }
    return mag;
}

// Every tile shape gives each output exactly what the 1 × 1 tile gives it.
TEST(Gemm, EveryTileShapeEqualsOneByOne) {
    for (Isa isa : all_isas()) {
        IsaScope scope(isa);
        for (GgmlType t : kTypes) {
            const GemmKernel* gk = gemm_kernel_for(t);
            if (!gk) continue;
            for (int64_t n : lengths_for(t)) {
                const int R = gk->max_rows, C = gk->max_cols;
                const std::vector<uint8_t> w = make_weights(t, R, n, 7 + (uint32_t)n);
                const std::vector<float> x = random_floats(C * n, 11 + (uint32_t)n, -2, 2);
                const size_t w_row = ggml_row_size(t, n), a_row = gk->prepared_row_bytes(n);
                std::vector<uint8_t> q(ggml_row_size(gk->act_type, n));
                std::vector<uint8_t> a_buf(a_row * C + 64);
                uint8_t* a = (uint8_t*)(((uintptr_t)a_buf.data() + 63) & ~(uintptr_t)63);
                for (int c = 0; c < C; c++) {
                    quant_traits(gk->act_type)->quantize_row(x.data() + c * n, q.data(), n);
                    gk->prepare(q.data(), a + c * a_row, n);
                }
                std::vector<float> one(R * C);  // (C, R)
                for (int c = 0; c < C; c++)
                    for (int r = 0; r < R; r++)
                        gk->tile(n, w.data() + r * w_row, w_row, a + c * a_row, a_row, 1, 1, &one[c * R + r], R);
                for (int nr = 1; nr <= R; nr++)
                    for (int nc = 1; nc <= C; nc++) {
                        std::vector<float> y(R * C, NAN);
                        gk->tile(n, w.data(), w_row, a, a_row, nr, nc, y.data(), R);
                        for (int c = 0; c < nc; c++)
                            for (int r = 0; r < nr; r++)
                                ASSERT_EQ(0, memcmp(&y[c * R + r], &one[c * R + r], 4))
                                    << ggml_type_name(t) << " " << isa_name(isa) << " n=" << n << " tile " << nr << "x"
                                    << nc << " r=" << r << " c=" << c;
                    }
            }
        }
    }
}

// matmul over ragged shapes (rows not a multiple of the tile, odd block counts) against ref::matmul,
// and each token alone against the whole batch, bit for bit, with 1 and 2 threads.
TEST(Gemm, RaggedShapesMatchReferenceAndAreBatchInvariant) {
    ThreadPool pool1(1), pool2(2);
    for (Isa isa : all_isas()) {
        IsaScope scope(isa);
        for (GgmlType t : kTypes) {
            if (!gemm_kernel_for(t)) continue;
            for (int64_t n_in : lengths_for(t)) {
                const int64_t n_out = 23, n_tok = 11;
                const std::vector<uint8_t> w = make_weights(t, n_out, n_in, 100 + (uint32_t)n_in);
                const std::vector<float> x = random_floats(n_tok * n_in, 200 + (uint32_t)n_in, -2, 2);
                std::vector<float> y_ref(n_tok * n_out), y(n_tok * n_out), alone(n_out);
                ref::matmul(t, w.data(), n_out, n_in, x.data(), n_tok, y_ref.data());
                const std::vector<double> mag = magnitudes(t, w, x, n_out, n_in, n_tok);
                for (ThreadPool* pool : {&pool1, &pool2}) {
                    matmul(*pool, t, w.data(), n_out, n_in, x.data(), n_tok, y.data());
                    for (int64_t i = 0; i < n_tok * n_out; i++)
                        ASSERT_NEAR(y[i], y_ref[i], 5e-7 * mag[i] + 1e-30)
                            << ggml_type_name(t) << " " << isa_name(isa) << " n_in=" << n_in << " i=" << i;
                    for (int64_t c = 0; c < n_tok; c++) {
                        matmul(pool1, t, w.data(), n_out, n_in, x.data() + c * n_in, 1, alone.data());
                        ASSERT_EQ(0, memcmp(alone.data(), y.data() + c * n_out, n_out * 4))
                            << ggml_type_name(t) << " " << isa_name(isa) << " n_in=" << n_in << " token " << c;
                    }
                }
            }
        }
    }
}

// Random weight bytes (every quant and sub-block scale code, Q8_0's -128 included) with tame fp16
// super-block scales: still within tolerance of the reference.
struct RawCase {
    GgmlType type;
    std::vector<size_t> scale_offsets;  // byte offsets of the fp16 scales inside a block
};

TEST(Gemm, RawWeightBytesMatchReference) {
    ThreadPool pool(1);
    std::mt19937 rng(5);
    const RawCase cases[] = {{GgmlType::Q4_0, {0}},    {GgmlType::Q4_1, {0, 2}}, {GgmlType::Q5_0, {0}},
                             {GgmlType::Q5_1, {0, 2}}, {GgmlType::Q8_0, {0}},    {GgmlType::Q4_K, {0, 2}},
                             {GgmlType::Q5_K, {0, 2}}, {GgmlType::Q6_K, {208}},  {GgmlType::Q2_K, {80, 82}},
                             {GgmlType::Q3_K, {108}}};
    for (Isa isa : all_isas()) {
        IsaScope scope(isa);
        for (const RawCase& rc : cases) {
            const GgmlType t = rc.type;
            if (!gemm_kernel_for(t)) continue;
            const int64_t n_out = 9, n_in = 5 * ggml_type_info(t).block_size, n_tok = 5;
            const size_t blk = ggml_type_info(t).type_size;
            std::vector<uint8_t> w(ggml_row_size(t, n_in) * n_out);
            for (uint8_t& b : w) b = (uint8_t)rng();
            for (size_t off = 0; off < w.size(); off += blk) {
                for (size_t so : rc.scale_offsets) {
                    const fp16_t s = fp32_to_fp16(std::ldexp(1.0f + (rng() % 100) / 100.0f, -(int)(rng() % 8) - 4));
                    memcpy(&w[off + so], &s, 2);
                }
            }
            const std::vector<float> x = random_floats(n_tok * n_in, 77, -2, 2);
            std::vector<float> y_ref(n_tok * n_out), y(n_tok * n_out);
            ref::matmul(t, w.data(), n_out, n_in, x.data(), n_tok, y_ref.data());
            matmul(pool, t, w.data(), n_out, n_in, x.data(), n_tok, y.data());
            const std::vector<double> mag = magnitudes(t, w, x, n_out, n_in, n_tok);
            for (int64_t i = 0; i < n_tok * n_out; i++)
                ASSERT_NEAR(y[i], y_ref[i], 5e-7 * mag[i] + 1e-30) << ggml_type_name(t) << " " << isa_name(isa);
        }
    }
}

// Where the CPU has AVX2 or AVX-512, these types must take the blocked path (a silent fallback would pass
// the other tests while losing the speed).
TEST(Gemm, DispatchOffersTilesWhereExpected) {
    {
        IsaScope scope(Isa::scalar);
        for (GgmlType t : kTypes) EXPECT_EQ(gemm_kernel_for(t), nullptr) << ggml_type_name(t);
    }
    if (cpu_isa_max() < Isa::avx2) GTEST_SKIP() << "no AVX2 on this CPU";
    for (Isa isa : all_isas()) {
        if (isa < Isa::avx2) continue;
        IsaScope scope(isa);
        for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0,
                           GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
                           GgmlType::F32, GgmlType::F16, GgmlType::BF16})
            EXPECT_NE(gemm_kernel_for(t), nullptr) << ggml_type_name(t) << " " << isa_name(isa);
    }
}

}  // namespace
}  // namespace bee
