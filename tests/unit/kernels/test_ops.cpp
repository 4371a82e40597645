// tests/unit/kernels/test_ops: rms_norm, rope, activations, softmax, softcap and get_rows on every ISA,
// against kernels/ref and against double-precision formulas written out here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/kernels.h"
#include "kernels_test_util.h"

namespace bee {
namespace {

using test::all_isas;
using test::IsaScope;
using test::random_floats;

// Lengths that exercise full vectors and every tail size.
const int64_t kLengths[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 64, 100, 896, 1027};

TEST(RmsNorm, MatchesDouble) {
    for (Isa isa : all_isas()) {
        IsaScope scope(isa);
        for (int64_t n : kLengths) {
            std::vector<float> x = random_floats(n, 1 + (uint32_t)n, -3, 3), w = random_floats(n, 2, 0.5f, 1.5f);
            std::vector<float> y(n), yr(n), y_inplace = x;
            rms_norm(x.data(), w.data(), y.data(), n, 1e-6f);
            ref::rms_norm(x.data(), w.data(), yr.data(), n, 1e-6f);
            rms_norm(y_inplace.data(), w.data(), y_inplace.data(), n, 1e-6f);  // x and y alias
            EXPECT_EQ(0, memcmp(y.data(), y_inplace.data(), n * 4));
            double ss = 0;
            for (float v : x) ss += (double)v * v;
            const double s = 1.0 / std::sqrt(ss / n + 1e-6);
            for (int64_t i = 0; i < n; i++) {
                const double want = x[i] * s * w[i];
                // bound: 4 float roundings (mean, sqrt, two multiplies) ~ 5e-7 relative
                ASSERT_NEAR(y[i], want, 5e-7 * std::fabs(want) + 1e-30) << isa_name(isa) << " n=" << n << " i=" << i;
                ASSERT_NEAR(yr[i], want, 5e-7 * std::fabs(want) + 1e-30);
            }
            std::vector<float> y_nw(n);
            rms_norm(x.data(), nullptr, y_nw.data(), n, 1e-6f);
            for (int64_t i = 0; i < n; i++) ASSERT_NEAR(y_nw[i], x[i] * s, 5e-7 * std::fabs(x[i] * s) + 1e-30);
        }
    }
}

// Direct double-precision rope: theta_i = pos * freq_scale * base^(-2i/n_rot) / ff_i.
void rope_double(std::vector<double>& x, int n_head, int head_dim, int pos, const RopeParams& p) {
    const int half = p.n_rot / 2;
    for (int h = 0; h < n_head; h++) {
        double* v = x.data() + h * head_dim;
        for (int i = 0; i < half; i++) {
            double th = pos * (double)p.freq_scale * std::pow((double)p.freq_base, -2.0 * i / p.n_rot);
            if (p.freq_factors) th /= p.freq_factors[i];
            const int i0 = p.mode == RopeMode::neox ? i : 2 * i;
            const int i1 = p.mode == RopeMode::neox ? i + half : 2 * i + 1;
            const double x0 = v[i0], x1 = v[i1];
            v[i0] = x0 * std::cos(th) - x1 * std::sin(th);
            v[i1] = x0 * std::sin(th) + x1 * std::cos(th);
        }
    }
}

TEST(Rope, NormalAndNeoxMatchDouble) {
    const int n_head = 3, head_dim = 64;
    std::vector<float> ff = random_floats(32, 7, 1.0f, 8.0f);  // rope_freqs-like divisors
    for (Isa isa : all_isas()) {
        IsaScope scope(isa);
        for (RopeMode mode : {RopeMode::normal, RopeMode::neox}) {
            for (int n_rot : {64, 32}) {  // 32: partial rotary, dims >= n_rot untouched
                for (float freq_scale : {1.0f, 0.25f}) {
                    for (bool use_ff : {false, true}) {
                        for (int pos : {0, 1, 17, 1000, 4095, 32000}) {
                            RopeParams p;
                            p.n_rot = n_rot;
                            p.freq_base = 10000.0f;
                            p.freq_scale = freq_scale;
                            p.mode = mode;
                            p.freq_factors = use_ff ? ff.data() : nullptr;
                            std::vector<float> x = random_floats(n_head * head_dim, 11 + pos), xr = x;
                            std::vector<double> xd(x.begin(), x.end());
                            rope(x.data(), n_head, head_dim, pos, p);
                            ref::rope(xr.data(), n_head, head_dim, pos, p);
                            rope_double(xd, n_head, head_dim, pos, p);
                            // same float arithmetic as the reference: bit-identical
                            ASSERT_EQ(0, memcmp(x.data(), xr.data(), x.size() * 4));
                            // bound: ggml builds base^(-2i/n_rot) by repeated float products, so angle i
                            // carries ~(i+2) ulps of relative error; θ_i shrinks faster than that grows, so
                            // |Δθ| stays below pos·fs·1e-7 (measured max |error| = pos·fs·2.8e-8, |x| <= 1)
                            const double tol = 2e-6 + pos * freq_scale * 2e-7;
                            for (size_t i = 0; i < x.size(); i++) {
                                ASSERT_NEAR(x[i], xd[i], tol) << isa_name(isa) << " mode=" << (int)mode
                                                              << " n_rot=" << n_rot << " pos=" << pos << " i=" << i;
                                if ((int)(i % head_dim) >= n_rot) {
                                    ASSERT_EQ(x[i], (float)xd[i]);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

// rope() reuses cos/sin tables across calls (a per-thread cache keyed by position and parameters): hits,
// misses and evictions all give ref::rope's bits.
TEST(Rope, CachedTablesGiveTheReferenceBits) {
    std::vector<float> ff = random_floats(32, 7, 1.0f, 8.0f);
    RopeParams a, b;
    a.n_rot = 64;
    b.n_rot = 64;
    b.freq_base = 1e6f;
    b.freq_factors = ff.data();
    for (int round = 0; round < 3; round++)
        for (int pos = 0; pos < 40; pos += (round == 1 ? 3 : 1))
            for (const RopeParams* p : {&a, &b, &a}) {
                std::vector<float> x = random_floats(2 * 64, 100 + pos), want = x;
                rope(x.data(), 2, 64, pos, *p);
                ref::rope(want.data(), 2, 64, pos, *p);
                ASSERT_EQ(0, memcmp(x.data(), want.data(), x.size() * sizeof(float))) << "pos " << pos;
            }
}

// YaRN against the HF transformers formula (`_compute_yarn_parameters` with the rotation of llama.cpp's
// permuted pairs), in double: each inverse frequency blends the interpolated (/ factor) and the
// extrapolated one by a linear ramp between the correction dims, and cos/sin scale by 0.1 ln(factor) + 1.
TEST(Rope, YarnMatchesTheHfFormula) {
    const int head_dim = 64, n_rot = 64, orig = 2048;
    const double base = 10000.0, factor = 4.0;
    RopeParams p;
    p.n_rot = n_rot;
    p.freq_base = (float)base;
    p.freq_scale = (float)(1.0 / factor);
    p.yarn = rope_yarn_params(n_rot, orig, (float)base, (float)factor, 1.0f, 32.0f, 1.0f, 0.0f, -1.0f);
    auto corr = [&](double rot) { return n_rot * std::log(orig / (rot * 2 * M_PI)) / (2 * std::log(base)); };
    const double lo = std::max(0.0, std::floor(corr(32))), hi = std::min(n_rot - 1.0, std::ceil(corr(1)));
    EXPECT_EQ(p.yarn.corr_lo, (float)lo);
    EXPECT_EQ(p.yarn.corr_hi, (float)hi);
    ASSERT_LT(lo, hi);
    const double mscale = 0.1 * std::log(factor) + 1.0;
    for (Isa isa : all_isas()) {
        IsaScope scope(isa);
        for (int pos : {0, 1, 17, 1000, 6000}) {
            std::vector<float> x = random_floats(2 * head_dim, 5 + pos), xr = x;
            std::vector<double> want(x.begin(), x.end());
            for (int h = 0; h < 2; h++)
                for (int i = 0; i < n_rot / 2; i++) {
                    const double extrap = std::pow(base, -2.0 * i / n_rot), interp = extrap / factor;
                    const double ramp = std::min(1.0, std::max(0.0, (i - lo) / (hi - lo)));
                    const double inv = interp * ramp + extrap * (1 - ramp), th = pos * inv;
                    double* v = want.data() + h * head_dim + 2 * i;
                    const double x0 = v[0], x1 = v[1];
                    v[0] = (x0 * std::cos(th) - x1 * std::sin(th)) * mscale;
                    v[1] = (x0 * std::sin(th) + x1 * std::cos(th)) * mscale;
                }
            rope(x.data(), 2, head_dim, pos, p);
            ref::rope(xr.data(), 2, head_dim, pos, p);
            ASSERT_EQ(0, memcmp(x.data(), xr.data(), x.size() * 4));
            for (size_t i = 0; i < x.size(); i++)
                ASSERT_NEAR(x[i], want[i], 2e-6 + pos * 2e-7) << isa_name(isa) << " pos=" << pos << " i=" << i;
        }
    }
    // No YaRN: the default settings leave plain rope's bits (the scale is exactly 1).
    EXPECT_EQ(rope_yarn_params(n_rot, orig, 10000.0f, 1.0f, 0.0f, 32.0f, 1.0f, 0.0f, -1.0f), RopeYarn{});
}

TEST(Rope, NeoxPairsDifferFromNormal) {
    RopeParams p;
    p.n_rot = 8;
    std::vector<float> a = random_floats(8, 3), b = a;
    rope(a.data(), 1, 8, 5, p);
    p.mode = RopeMode::neox;
    rope(b.data(), 1, 8, 5, p);
    EXPECT_NE(0, memcmp(a.data(), b.data(), 32));
}

// Checks op against a double formula for inputs in [lo, hi] on every ISA; tol(x, want) gives the bound.
template <typename Op, typename Ref, typename Want, typename Tol>
void check_unary(const char* name, Op op, Ref ref_op, Want want_fn, Tol tol, float lo, float hi) {
    for (Isa isa : all_isas()) {
        IsaScope scope(isa);
        for (int64_t n : kLengths) {
            std::vector<float> x = random_floats(n, 5 + (uint32_t)n, lo, hi), y = x, yr = x;
            op(y.data(), n);
            ref_op(yr.data(), n);
            for (int64_t i = 0; i < n; i++) {
                const double want = want_fn((double)x[i]);
                ASSERT_NEAR(y[i], want, tol(x[i], want)) << name << " " << isa_name(isa) << " x=" << x[i];
                ASSERT_NEAR(yr[i], want, tol(x[i], want)) << name << " ref x=" << x[i];
            }
        }
    }
}

TEST(Activations, SiluMatchesDouble) {
    // bound: exp within 2 ulp, one add, one divide: 1e-6 relative
    check_unary(
        "silu", silu, ref::silu, [](double x) { return x / (1 + std::exp(-x)); },
        [](float, double w) { return 1e-6 * std::fabs(w) + 1e-37; }, -60, 60);
}

TEST(Activations, GeluTanhMatchesDouble) {
    // 0.5·x·(1 + tanh(u)) written as x / (1 + exp(-2u)) so the double value does not cancel for x << 0
    auto u_of = [](double x) { return 0.7978845608028654 * x * (1 + 0.044715 * x * x); };
    auto want = [u_of](double x) { return x / (1 + std::exp(-2 * u_of(x))); };
    // bound: relative 1e-6, plus the float rounding of 2u (moves exp(-2u) by |2u|·2^-24 relative), plus
    // |x|·3e-7 absolute: the reference's 1 + tanhf(u) cancels for x << 0 (measured: 1.2e-7·|x|)
    check_unary(
        "gelu", gelu_tanh, ref::gelu_tanh, want,
        [u_of](float x, double w) { return (1e-6 + 1.2e-7 * std::fabs(u_of(x))) * std::fabs(w) + 3e-7 * std::fabs(x); },
        -12, 12);
}

// The fused gated activations give exactly the bits of the activation pass followed by mul().
TEST(Activations, GatedFormsEqualActivationThenMul) {
    for (Isa isa : all_isas()) {
        IsaScope scope(isa);
        for (int64_t n : kLengths) {
            const std::vector<float> x = random_floats(n, 11 + (uint32_t)n, -12, 12), y = random_floats(n, 13, -3, 3);
            for (int gelu = 0; gelu < 2; gelu++) {
                std::vector<float> fused = x, want = x;
                if (gelu) gelu_tanh_mul(fused.data(), y.data(), n), gelu_tanh(want.data(), n);
                else silu_mul(fused.data(), y.data(), n), silu(want.data(), n);
                mul(want.data(), y.data(), n);
                ASSERT_EQ(0, memcmp(fused.data(), want.data(), n * sizeof(float)))
                    << isa_name(isa) << " n=" << n << " gelu=" << gelu;
            }
        }
    }
}

TEST(Softmax, MatchesDouble) {
    for (Isa isa : all_isas()) {
        IsaScope scope(isa);
        for (int64_t n : kLengths) {
            std::vector<float> x = random_floats(n, 9 + (uint32_t)n, -20, 20), y = x, yr = x;
            softmax(y.data(), n);
            ref::softmax(yr.data(), n);
            double mx = -1e300, sum = 0;
            for (float v : x) mx = std::max(mx, (double)v);
            for (float v : x) sum += std::exp(v - mx);
            for (int64_t i = 0; i < n; i++) {
                const double want = std::exp(x[i] - mx) / sum;
                // bound: exp 2 ulp + scale: 1e-6 relative, plus the float rounding of x - max, which
                // moves exp by up to |x - max|·2^-24 relative (x2 margin); values below ~1e-38 flush to 0
                const double tol = (1e-6 + 1.5e-7 * (mx - x[i])) * want + 1e-37;
                ASSERT_NEAR(y[i], want, tol) << isa_name(isa) << " n=" << n;
                ASSERT_NEAR(yr[i], want, tol);
            }
        }
    }
}

TEST(Elementwise, MulAddScaleSoftcap) {
    const int64_t n = 37;
    std::vector<float> a = random_floats(n, 1, -5, 5), b = random_floats(n, 2, -5, 5);
    std::vector<float> m = a, s = a, sc = a, c = a;
    mul(m.data(), b.data(), n);
    add(s.data(), b.data(), n);
    scale(sc.data(), 0.5f, n);
    softcap(c.data(), 3.0f, n);
    for (int64_t i = 0; i < n; i++) {
        EXPECT_EQ(m[i], a[i] * b[i]);
        EXPECT_EQ(s[i], a[i] + b[i]);
        EXPECT_EQ(sc[i], a[i] * 0.5f);
        EXPECT_NEAR(c[i], 3.0 * std::tanh(a[i] / 3.0), 1e-6);
    }
}

TEST(GetRows, DequantizesSelectedRows) {
    const int64_t n_rows = 10, n = 256;
    std::vector<float> w = random_floats(n_rows * n, 4);
    const int32_t ids[] = {3, 0, 9, 3};
    for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_K}) {
        std::vector<uint8_t> q(ggml_row_size(t, n) * n_rows);
        quantize_matrix(t, w.data(), q.data(), n_rows, n);
        std::vector<float> got(4 * n), want(n);
        get_rows(t, q.data(), n, ids, 4, got.data());
        for (int i = 0; i < 4; i++) {
            quant_traits(t)->dequantize_row(q.data() + ids[i] * ggml_row_size(t, n), want.data(), n);
            EXPECT_EQ(0, memcmp(got.data() + i * n, want.data(), n * 4)) << ggml_type_name(t);
        }
    }
}

}  // namespace
}  // namespace bee
