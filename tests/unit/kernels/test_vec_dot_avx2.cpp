// tests/unit/kernels/test_vec_dot_avx2: the AVX2 vec_dot of every weight type and the AVX2 activation
// quantizers, held to the scalar references in quant/ (dots within a tolerance, quantizers byte for byte).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/x86/avx2.h"
#include "kernels/x86/avx512.h"
#include "kernels_test_util.h"
#include "quant/blocks.h"

namespace bee {
namespace {

using test::IsaScope;

// |avx2 - ref| <= kDotTol * Σ|w_i·a_i| (dequantized operands): only the float summation order differs.
constexpr double kDotTol = 1e-5;

const GgmlType kWeightTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0, GgmlType::Q4_1,
                                 GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q2_K, GgmlType::Q3_K,
                                 GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};
const GgmlType kActivationTypes[] = {GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K};

bool have_avx2() { return cpu_isa_max() >= Isa::avx2; }

int64_t block_size(GgmlType t) { return ggml_type_info(t).block_size; }

// A finite fp16 scale of random magnitude in [2^-12, 2^-2) and random sign.
fp16_t random_scale(std::mt19937& rng) {
    std::uniform_real_distribution<float> e(-12.0f, -2.0f);
    const float v = std::exp2(e(rng)) * ((rng() & 1) ? -1.0f : 1.0f);
    return fp32_to_fp16(v);
}

// Overwrites the fp16 scale fields (d, and m or dmin where the block has one) of every block of a row.
template <typename Block>
void fix_scales(std::vector<uint8_t>& row, std::mt19937& rng) {
    Block* b = (Block*)row.data();
    for (size_t i = 0; i < row.size() / sizeof(Block); ++i) {
        b[i].d = random_scale(rng);
        if constexpr (requires { b[i].m; }) b[i].m = random_scale(rng);
        if constexpr (requires { b[i].dmin; }) b[i].dmin = random_scale(rng);
    }
}

// A weight row of n elements: quantized from random floats with the reference quantizer, or (raw) random
// bytes with sane fp16 scales, which reach bit patterns a quantizer never writes (all scale codes, ...).
std::vector<uint8_t> make_weights(GgmlType t, int64_t n, uint32_t seed, bool raw) {
    std::vector<uint8_t> row(ggml_row_size(t, n));
    std::mt19937 rng(seed);
    const bool is_float = t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16;
    if (!raw || is_float) {
        std::vector<float> f = test::random_floats((size_t)n, seed, -1.0f, 1.0f);
        for (size_t i = 0; i < f.size(); i += 97) f[i] *= 8.0f;  // a few outliers per block
        quant_traits(t)->quantize_row(f.data(), row.data(), n);
        return row;
    }
    for (uint8_t& b : row) b = (uint8_t)rng();
    switch (t) {
        case GgmlType::Q4_0: fix_scales<BlockQ4_0>(row, rng); break;
        case GgmlType::Q4_1: fix_scales<BlockQ4_1>(row, rng); break;
        case GgmlType::Q5_0: fix_scales<BlockQ5_0>(row, rng); break;
        case GgmlType::Q5_1: fix_scales<BlockQ5_1>(row, rng); break;
        case GgmlType::Q8_0: {
            fix_scales<BlockQ8_0>(row, rng);
            // a Q8_0 quantizer never writes -128 (|q| <= 127); the AVX2 dot relies on that
            for (BlockQ8_0* b = (BlockQ8_0*)row.data(); b < (BlockQ8_0*)(row.data() + row.size()); ++b)
                for (int8_t& q : b->qs) q = q == -128 ? -127 : q;
            break;
        }
        case GgmlType::Q2_K: fix_scales<BlockQ2_K>(row, rng); break;
        case GgmlType::Q3_K: fix_scales<BlockQ3_K>(row, rng); break;
        case GgmlType::Q4_K: fix_scales<BlockQ4_K>(row, rng); break;
        case GgmlType::Q5_K: fix_scales<BlockQ5_K>(row, rng); break;
        case GgmlType::Q6_K: fix_scales<BlockQ6_K>(row, rng); break;
        default: ADD_FAILURE() << "no raw generator for " << ggml_type_name(t);
    }
    return row;
}

// Activations in the weight type's vec_dot_type, quantized by the reference.
std::vector<uint8_t> make_activations(GgmlType wt, int64_t n, uint32_t seed) {
    const GgmlType at = quant_traits(wt)->vec_dot_type;
    std::vector<float> f = test::random_floats((size_t)n, seed, -2.0f, 2.0f);
    for (size_t i = 3; i < f.size(); i += 61) f[i] *= 10.0f;
    std::vector<uint8_t> row(ggml_row_size(at, n));
    quant_traits(at)->quantize_row(f.data(), row.data(), n);
    return row;
}

// Σ|w_i·a_i| over the dequantized operands, in double.
double abs_product_sum(GgmlType wt, const std::vector<uint8_t>& w, const std::vector<uint8_t>& a, int64_t n) {
    const GgmlType at = quant_traits(wt)->vec_dot_type;
    std::vector<float> wf((size_t)n), af((size_t)n);
    quant_traits(wt)->dequantize_row(w.data(), wf.data(), n);
    quant_traits(at)->dequantize_row(a.data(), af.data(), n);
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += std::fabs((double)wf[i] * (double)af[i]);
    return s;
}

std::vector<int64_t> sizes_for(GgmlType t) {
    if (block_size(t) == 1) return {1, 7, 8, 31, 32, 33, 100, 4096, 4099, 4864};
    const int64_t bs = block_size(t);
    if (bs == 32) return {32, 64, 96, 4096, 4864};
    return {256, 512, 4096, 4864};
}

TEST(VecDotAvx2, DispatchPicksAvx2OnlyWhenAvailable) {
    for (GgmlType t : kWeightTypes) {
        const VecDotFn scalar = quant_traits(t)->vec_dot;
        {
            IsaScope isa(Isa::scalar);
            EXPECT_EQ(vec_dot_for(t), scalar) << ggml_type_name(t);
        }
        if (!have_avx2()) {
            IsaScope isa(cpu_isa_max());
            EXPECT_NE(vec_dot_for(t), avx2::vec_dot(t)) << ggml_type_name(t) << ": AVX2 chosen without AVX2";
            continue;
        }
        ASSERT_NE(avx2::vec_dot(t), nullptr) << ggml_type_name(t);
        IsaScope isa(Isa::avx2);
        EXPECT_EQ(vec_dot_for(t), avx2::vec_dot(t)) << ggml_type_name(t);
    }
    for (GgmlType t : kActivationTypes) {
        if (!have_avx2()) {
            IsaScope isa(cpu_isa_max());
            EXPECT_NE(quantize_activation_for(t), avx2::quantize_activation(t)) << ggml_type_name(t);
            continue;
        }
        ASSERT_NE(avx2::quantize_activation(t), nullptr) << ggml_type_name(t);
        IsaScope isa(Isa::avx2);
        EXPECT_EQ(quantize_activation_for(t), avx2::quantize_activation(t)) << ggml_type_name(t);
    }
    EXPECT_EQ(avx2::vec_dot(GgmlType::IQ2_XXS), nullptr);
    EXPECT_EQ(avx2::quantize_activation(GgmlType::Q4_0), nullptr);
}

// Every pair at one block and many blocks, quantized and raw weights: within kDotTol of the reference.
TEST(VecDotAvx2, MatchesReferenceEveryType) {
    if (!have_avx2()) {
        SUCCEED() << "no AVX2 on this CPU";
        return;
    }
    for (GgmlType t : kWeightTypes) {
        const VecDotFn ref = quant_traits(t)->vec_dot;
        const VecDotFn fast = avx2::vec_dot(t);
        double worst = 0;
        for (int64_t n : sizes_for(t)) {
            for (uint32_t trial = 0; trial < 6; ++trial) {
                const bool raw = trial % 2 == 1;
                const uint32_t seed = 1000u * (uint32_t)t + 17u * (uint32_t)n + trial;
                const std::vector<uint8_t> w = make_weights(t, n, seed, raw);
                const std::vector<uint8_t> a = make_activations(t, n, seed + 7);
                float r = 0, f = 0;
                ref(n, w.data(), a.data(), &r);
                fast(n, w.data(), a.data(), &f);
                const double scale = abs_product_sum(t, w, a, n);
                const double err = std::fabs((double)f - (double)r) / (scale > 0 ? scale : 1.0);
                worst = std::max(worst, err);
                EXPECT_LE(err, kDotTol) << ggml_type_name(t) << " n=" << n << " raw=" << raw << " ref=" << r
                                        << " avx2=" << f << " Σ|w·a|=" << scale;
            }
        }
        printf("[ avx2 dot ] %-5s max |avx2 - ref| / Σ|w·a| = %.2e\n", ggml_type_name(t), worst);
    }
}

// Same inputs, same bits: repeated calls and copies of the operands at other alignments agree exactly.
TEST(VecDotAvx2, DeterministicAcrossCallsAndAlignment) {
    if (!have_avx2()) {
        SUCCEED() << "no AVX2 on this CPU";
        return;
    }
    for (GgmlType t : kWeightTypes) {
        const int64_t n = block_size(t) == 1 ? 4099 : 4864;
        const std::vector<uint8_t> w = make_weights(t, n, 42, false);
        const std::vector<uint8_t> a = make_activations(t, n, 43);
        float first = 0;
        avx2::vec_dot(t)(n, w.data(), a.data(), &first);
        // offsets stay multiples of 4 (rows are at least that aligned in practice: every block size is)
        for (size_t off = 0; off < 32; off += 4) {
            std::vector<uint8_t> wb(w.size() + 128), ab(a.size() + 128);
            const size_t off_a = (3 * off) % 32;
            memcpy(wb.data() + off, w.data(), w.size());
            memcpy(ab.data() + off_a, a.data(), a.size());
            float again = 0;
            avx2::vec_dot(t)(n, wb.data() + off, ab.data() + off_a, &again);
            EXPECT_EQ(fp32_to_bits(again), fp32_to_bits(first)) << ggml_type_name(t) << " offset " << off;
        }
    }
}

// Rows that exercise the activation quantizers' corner cases, each a multiple of 256 floats.
std::vector<std::vector<float>> edge_rows() {
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<std::vector<float>> rows;
    auto add = [&](auto fill) {
        std::vector<float> r(512, 0.0f);
        fill(r);
        rows.push_back(r);
    };
    add([](std::vector<float>&) {});  // all zeros
    add([](std::vector<float>& r) {
        for (float& x : r) x = -0.0f;
    });                              // negative zeros
    add([](std::vector<float>& r) {  // exact .5 ties: with absmax 127 the scale is 1 (Q8_0) / -1 (Q8_K)
        for (size_t i = 0; i < r.size(); ++i) r[i] = (float)((int)(i % 255) - 127) + ((i % 3) ? 0.5f : 0.0f);
        for (size_t b = 0; b < r.size(); b += 32) r[b + 5] = (b / 32) % 2 ? 127.0f : -127.0f;
    });
    add([](std::vector<float>& r) {  // ties of the largest magnitude with both signs: the first wins
        for (size_t i = 0; i < r.size(); ++i) r[i] = 0.25f * (float)(i % 7);
        for (size_t b = 0; b < r.size(); b += 32) {
            r[b + 3] = (b / 32) % 2 ? 5.0f : -5.0f;
            r[b + 9] = -r[b + 3];
        }
    });
    add([](std::vector<float>& r) {  // huge values (the fp16 scale overflows to inf)
        for (size_t i = 0; i < r.size(); ++i) r[i] = (i % 2 ? 3e38f : -1e30f) * (float)((i % 5) + 1) / 5.0f;
        r[100] = std::numeric_limits<float>::max();
        r[300] = -std::numeric_limits<float>::max();
    });
    add([](std::vector<float>& r) {  // tiny and subnormal values (1 / d overflows)
        for (size_t i = 0; i < r.size(); ++i) r[i] = (i % 2 ? 1e-40f : -3e-39f) * (float)(i % 9);
        for (size_t i = 256; i < r.size(); ++i) r[i] = 1e-30f * (float)((int)(i % 11) - 5);
    });
    add([&](std::vector<float>& r) {  // inf and NaN mixed into ordinary values
        std::vector<float> f = test::random_floats(r.size(), 5);
        r = f;
        r[2] = inf;
        r[40] = -inf;
        r[41] = nan;
        r[77] = -nan;
        r[260] = nan;
        r[300] = inf;
        uint32_t payload = 0x7fa12345u;  // a signalling NaN with a payload
        memcpy(&r[400], &payload, 4);
        for (size_t i = 64; i < 96; ++i) r[i] = nan;  // a whole NaN block
    });
    add([&](std::vector<float>& r) {  // NaN everywhere but one value in the second 256
        for (float& x : r) x = nan;
        r[300] = -0.75f;
    });
    add([](std::vector<float>& r) {  // values a hair either side of .5 after scaling
        for (size_t i = 0; i < r.size(); ++i) {
            const float base = (float)((int)(i % 200) - 100) + 0.5f;
            r[i] = i % 4 == 0 ? base : i % 4 == 1 ? std::nextafter(base, 1e9f) : std::nextafter(base, -1e9f);
        }
        for (size_t b = 0; b < r.size(); b += 32) r[b] = 127.0f;
    });
    for (int s = 0; s < 6; ++s) {  // random rows at several magnitudes
        std::vector<float> r = test::random_floats(4864, 77 + s, -1.0f, 1.0f);
        for (float& x : r) x *= std::exp2((float)(s * 9 - 20));
        rows.push_back(r);
    }
    return rows;
}

// The fast quantizers of every ISA this CPU has (AVX2, and AVX-512 where it has its own) for type t.
std::vector<std::pair<const char*, QuantizeRowFn>> fast_quantizers(GgmlType t) {
    std::vector<std::pair<const char*, QuantizeRowFn>> out;
    if (have_avx2()) out.push_back({"avx2", avx2::quantize_activation(t)});
    if (cpu_isa_max() >= Isa::avx512 && avx512::quantize_activation(t))
        out.push_back({"avx512", avx512::quantize_activation(t)});
    return out;
}

TEST(QuantizeActivationAvx2, BytesMatchReference) {
    if (!have_avx2()) {
        SUCCEED() << "no AVX2 on this CPU";
        return;
    }
    constexpr size_t kGuard = 64;
    for (GgmlType t : kActivationTypes) {
        const QuantizeRowFn ref = quant_traits(t)->quantize_row;
        for (const auto& [isa, fast] : fast_quantizers(t)) {
            int rows = 0;
            for (const std::vector<float>& x : edge_rows()) {
                for (int64_t n : {block_size(t), 5 * block_size(t), (int64_t)x.size()}) {  // 5: groups + a tail
                    if (n > (int64_t)x.size()) continue;
                    const size_t bytes = ggml_row_size(t, n);
                    std::vector<uint8_t> want(bytes + kGuard, 0xA5), got(bytes + kGuard, 0xA5);
                    ref(x.data(), want.data(), n);
                    fast(x.data(), got.data(), n);
                    ++rows;
                    ASSERT_EQ(memcmp(want.data(), got.data(), bytes + kGuard), 0)
                        << isa << " " << ggml_type_name(t) << " row " << rows << " n=" << n;
                }
            }
            printf("[ %s q8 ] %-4s %d rows byte-identical to the reference\n", isa, ggml_type_name(t), rows);
        }
    }
}

// Many random blocks whose values sit on or next to rounding ties.
TEST(QuantizeActivationAvx2, BytesMatchReferenceNearTies) {
    if (!have_avx2()) {
        SUCCEED() << "no AVX2 on this CPU";
        return;
    }
    std::mt19937 rng(9);
    const int64_t n = 256 * 64;
    std::vector<float> x((size_t)n);
    for (int rep = 0; rep < 20; ++rep) {
        for (size_t i = 0; i < x.size(); ++i) {
            const float base = (float)((int)(rng() % 255) - 127) + 0.5f * (float)(rng() % 2);
            const int nudge = (int)(rng() % 3) - 1;
            x[i] = nudge == 0 ? base : std::nextafter(base, nudge > 0 ? 1e9f : -1e9f);
            x[i] *= rep % 2 ? 1.0f : 0.37f;  // scale 1 gives exact ties, 0.37 rounded ones
        }
        for (GgmlType t : kActivationTypes) {
            const size_t bytes = ggml_row_size(t, n);
            std::vector<uint8_t> want(bytes), got(bytes);
            quant_traits(t)->quantize_row(x.data(), want.data(), n);
            for (const auto& [isa, fast] : fast_quantizers(t)) {
                fast(x.data(), got.data(), n);
                ASSERT_EQ(memcmp(want.data(), got.data(), bytes), 0)
                    << isa << " " << ggml_type_name(t) << " rep " << rep;
            }
        }
    }
}

// Not an assertion: ns per call (best batch of 32 calls, so other load on the machine counts less) and
// GB/s of weight bytes for n = 4096, operands in L1, AVX2 vs the reference.
TEST(VecDotAvx2, ThroughputReport) {
    if (!have_avx2()) {
        SUCCEED() << "no AVX2 on this CPU";
        return;
    }
    const int64_t n = 4096;
    for (GgmlType t : kWeightTypes) {
        const std::vector<uint8_t> w = make_weights(t, n, 11, false);
        const std::vector<uint8_t> a = make_activations(t, n, 12);
        const VecDotFn fns[2] = {quant_traits(t)->vec_dot, avx2::vec_dot(t)};
        double ns[2];
        for (int k = 0; k < 2; ++k) {
            float sink = 0, out = 0;
            double best = 1e30;
            for (int batch = 0; batch < 40; ++batch) {
                const auto t0 = std::chrono::steady_clock::now();
                for (int i = 0; i < 32; ++i) {
                    fns[k](n, w.data(), a.data(), &out);
                    sink += out;
                }
                const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                best = std::min(best, dt * 1e9 / 32);
            }
            ns[k] = best;
            EXPECT_TRUE(std::isfinite(sink));
        }
        printf("[ avx2 tput ] %-5s n=%lld: ref %8.1f ns  avx2 %7.1f ns  (x%.1f, %.1f GB/s of weights)\n",
               ggml_type_name(t), (long long)n, ns[0], ns[1], ns[0] / ns[1], (double)w.size() / ns[1]);
    }
}

}  // namespace
}  // namespace bee
