// tests/unit/kernels/test_gemm_float: the F32, F16 and BF16 weight tiles (kernels/x86/gemm_float_avx512.cpp,
// gemm_float_avx2.cpp). test_gemm.cpp holds every tile shape to the 1 × 1 tile and matmul to the reference;
// here: the tiles are offered on AVX2 and AVX-512, and on inputs whose dot products are exact in f32 (small integers times powers of two,
// every weight code's sign and exponent range exercised) they give exactly the true value, tails included,
// so neither conversion (vcvtph2ps, the bf16 shift) nor the masked tail loses or invents anything.
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

using test::IsaScope;

TEST(GemmFloat, Avx2AndAvx512OfferFloatTiles) {
    if (cpu_isa_max() < Isa::avx2) GTEST_SKIP() << "no AVX2 on this CPU";
    for (Isa isa : test::all_isas()) {
        if (isa < Isa::avx2) continue;
        IsaScope scope(isa);
        for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16}) {
            const GemmKernel* gk = gemm_kernel_for(t);
            ASSERT_NE(gk, nullptr) << ggml_type_name(t) << " " << isa_name(isa);
            EXPECT_EQ(gk->act_type, GgmlType::F32);  // activations stay f32: no bf16 rounding of them
        }
    }
}

// Weights ±i·2^e and activations ±j·2^f (i, j < 8, |e|, |f| <= 2): every product and partial sum is a
// multiple of 2^-4 below 2^18 (n_in <= 272), exact in f32 whatever the order, so y must equal the exact sum.
TEST(GemmFloat, ExactInputsGiveTheExactDotProduct) {
    ThreadPool pool(2);
    std::mt19937 rng(9);
    auto value = [&rng]() {
        const float v = std::ldexp((float)(rng() % 8), (int)(rng() % 5) - 2);
        return rng() % 2 ? -v : v;
    };
    for (Isa isa : test::all_isas()) {
        IsaScope scope(isa);
        for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16})
            for (int64_t n_in : {7, 16, 40, 272}) {
                const int64_t n_out = 9, n_tok = 6;
                std::vector<float> wf(n_out * n_in), x(n_tok * n_in);
                for (float& v : wf) v = value();
                for (float& v : x) v = value();
                std::vector<uint8_t> w(ggml_row_size(t, n_in) * n_out);
                if (t == GgmlType::F32) memcpy(w.data(), wf.data(), w.size());
                for (size_t i = 0; t != GgmlType::F32 && i < wf.size(); i++) {
                    const uint16_t h = t == GgmlType::F16 ? fp32_to_fp16(wf[i]) : fp32_to_bf16(wf[i]);
                    memcpy(&w[2 * i], &h, 2);
                }
                std::vector<float> y(n_tok * n_out);
                matmul(pool, t, w.data(), n_out, n_in, x.data(), n_tok, y.data());
                for (int64_t c = 0; c < n_tok; c++)
                    for (int64_t r = 0; r < n_out; r++) {
                        double exact = 0;
                        for (int64_t i = 0; i < n_in; i++) exact += (double)wf[r * n_in + i] * x[c * n_in + i];
                        ASSERT_EQ((double)y[c * n_out + r], exact) << ggml_type_name(t) << " " << isa_name(isa)
                                                                   << " n_in=" << n_in << " r=" << r << " c=" << c;
                    }
            }
    }
}

}  // namespace
}  // namespace bee
