// tests/unit/kernels/test_gdn: the Gated DeltaNet kernels (conv1d_step, gdn_step, l2_norm, sigmoid_mul) on
// every ISA against double-precision formulas written out here, and the properties the recurrent state's
// replay relies on: a channel split or a different call sequence gives the same bits.
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

TEST(Conv1dStep, MatchesDoubleAndShiftsTheState) {
    for (Isa isa : all_isas()) {
        IsaScope scope(isa);
        for (int k : {2, 4, 5})
            for (int64_t n : {1, 7, 16, 33, 100}) {
                const int64_t ld = n + 3;  // rows of state and taps are ld apart
                std::vector<float> state = random_floats((size_t)(k - 1) * ld, 1, -2, 2), state0 = state;
                const std::vector<float> taps = random_floats((size_t)k * ld, 2), x = random_floats(n, 3, -2, 2);
                std::vector<float> y(n), yr(n), sr = state;
                conv1d_step(state.data(), taps.data(), k, ld, x.data(), y.data(), n);
                ref::conv1d_step(sr.data(), taps.data(), k, ld, x.data(), yr.data(), n);
                for (int64_t c = 0; c < n; c++) {
                    double want = (double)taps[(size_t)(k - 1) * ld + c] * x[c];
                    for (int i = 0; i + 1 < k; i++)
                        want += (double)taps[(size_t)i * ld + c] * state0[(size_t)i * ld + c];
                    ASSERT_NEAR(y[c], want, 1e-5) << isa_name(isa) << " k=" << k << " n=" << n << " c=" << c;
                    ASSERT_NEAR(yr[c], want, 1e-5);
                    for (int i = 0; i + 2 < k; i++)
                        ASSERT_EQ(state[(size_t)i * ld + c], state0[(size_t)(i + 1) * ld + c]);
                    ASSERT_EQ(state[(size_t)(k - 2) * ld + c], x[c]);
                }
                EXPECT_EQ(0, memcmp(state.data(), sr.data(), state.size() * 4));
            }
    }
}

// The forward runs the conv in channel blocks on several threads, the replay in one call: same bits.
TEST(Conv1dStep, ChannelSplitGivesTheSameBits) {
    for (Isa isa : all_isas()) {
        IsaScope scope(isa);
        const int k = 4;
        const int64_t n = 203;
        std::vector<float> s1 = random_floats((size_t)(k - 1) * n, 4), s2 = s1;
        const std::vector<float> taps = random_floats((size_t)k * n, 5), x = random_floats(n, 6);
        std::vector<float> y1(n), y2(n);
        conv1d_step(s1.data(), taps.data(), k, n, x.data(), y1.data(), n);
        const int64_t cuts[] = {0, 13, 51, 64, 130, n};  // uneven blocks
        for (int b = 0; b + 1 < 6; b++)
            conv1d_step(s2.data() + cuts[b], taps.data() + cuts[b], k, n, x.data() + cuts[b], y2.data() + cuts[b],
                        cuts[b + 1] - cuts[b]);
        EXPECT_EQ(0, memcmp(y1.data(), y2.data(), n * 4)) << isa_name(isa);
        EXPECT_EQ(0, memcmp(s1.data(), s2.data(), s1.size() * 4)) << isa_name(isa);
    }
}

// S (dk x dv, S[i][j]) in double: S *= e^g; delta = beta (v - S^T k); S += k delta^T; o = scale S^T q.
void gdn_double(std::vector<double>& S, int dk, int dv, const float* q, const float* k, const float* v, float g,
                float beta, float scale, std::vector<double>& o) {
    const double e = std::exp((double)g);
    for (double& s : S) s *= e;
    std::vector<double> delta(dv);
    for (int j = 0; j < dv; j++) {
        double s = 0;
        for (int i = 0; i < dk; i++) s += S[(size_t)i * dv + j] * k[i];
        delta[j] = beta * (v[j] - s);
    }
    for (int i = 0; i < dk; i++)
        for (int j = 0; j < dv; j++) S[(size_t)i * dv + j] += k[i] * delta[j];
    o.assign(dv, 0);
    for (int j = 0; j < dv; j++) {
        double s = 0;
        for (int i = 0; i < dk; i++) s += S[(size_t)i * dv + j] * q[i];
        o[j] = scale * s;
    }
}

TEST(GdnStep, MatchesDoubleOverManyTokens) {
    for (Isa isa : all_isas()) {
        IsaScope scope(isa);
        for (int d : {8, 16, 24, 37, 128}) {
            std::vector<float> M((size_t)d * d, 0.0f), Mr = M;  // transposed: M[j][i] = S[i][j]
            std::vector<double> S((size_t)d * d, 0.0);
            const float scale = 1.0f / std::sqrt((float)d);
            for (int t = 0; t < 12; t++) {
                std::vector<float> q = random_floats(d, 10 + t), k = random_floats(d, 30 + t),
                                   v = random_floats(d, 50 + t, -2, 2);
                double nq = 0, nk = 0;  // unit q and k, as the layer gives them
                for (int i = 0; i < d; i++) nq += (double)q[i] * q[i], nk += (double)k[i] * k[i];
                for (int i = 0; i < d; i++) q[i] /= (float)std::sqrt(nq), k[i] /= (float)std::sqrt(nk);
                const float g = -0.05f - 0.3f * (float)(t % 4), beta = 0.2f + 0.06f * (float)t;
                std::vector<float> o(d), orf(d);
                std::vector<double> od;
                gdn_step(M.data(), d, d, q.data(), k.data(), v.data(), g, beta, scale, o.data());
                ref::gdn_step(Mr.data(), d, d, q.data(), k.data(), v.data(), g, beta, scale, orf.data());
                gdn_double(S, d, d, q.data(), k.data(), v.data(), g, beta, scale, od);
                for (int j = 0; j < d; j++) {
                    ASSERT_NEAR(o[j], od[j], 2e-5) << isa_name(isa) << " d=" << d << " t=" << t << " j=" << j;
                    ASSERT_NEAR(orf[j], od[j], 2e-5);
                }
            }
            for (int i = 0; i < d; i++)
                for (int j = 0; j < d; j++) ASSERT_NEAR(M[(size_t)j * d + i], S[(size_t)i * d + j], 2e-5);
        }
    }
}

TEST(GdnStep, RowsAreIndependent) {  // one call over dv rows == dv calls of one row each
    for (Isa isa : all_isas()) {
        IsaScope scope(isa);
        const int dk = 40, dv = 24;
        std::vector<float> M = random_floats((size_t)dk * dv, 7), M1 = M;
        const std::vector<float> q = random_floats(dk, 8), k = random_floats(dk, 9), v = random_floats(dv, 10);
        std::vector<float> o(dv), o1(dv);
        gdn_step(M.data(), dk, dv, q.data(), k.data(), v.data(), -0.4f, 0.7f, 0.25f, o.data());
        for (int j = 0; j < dv; j++)
            gdn_step(M1.data() + (size_t)j * dk, dk, 1, q.data(), k.data(), v.data() + j, -0.4f, 0.7f, 0.25f, &o1[j]);
        EXPECT_EQ(0, memcmp(o.data(), o1.data(), dv * 4)) << isa_name(isa);
        EXPECT_EQ(0, memcmp(M.data(), M1.data(), M.size() * 4)) << isa_name(isa);
    }
}

// Several tokens in one call (rows kept in registers through a chunk) give the bits of one call per token,
// with strided inputs, on every ISA and for 128-wide heads (the register path) and others.
TEST(GdnSteps, SameBitsAsOneTokenAtATime) {
    for (Isa isa : all_isas()) {
        IsaScope scope(isa);
        for (int d : {128, 40})
            for (int n : {1, 5, 16, 37}) {
                const int64_t qs = 3 * d + 5, vs = d + 3, gs = 2, os = d + 1;  // strides of the token rows
                const std::vector<float> qk = random_floats((size_t)n * qs, 20 + n),
                                         vv = random_floats((size_t)n * vs, 21);
                std::vector<float> gb((size_t)n * gs);
                for (int t = 0; t < n; t++) gb[(size_t)t * gs] = -0.1f * (float)(t % 7), gb[(size_t)t * gs + 1] = 0.3f;
                std::vector<float> M = random_floats((size_t)d * d, 22, -0.2f, 0.2f), M1 = M;
                std::vector<float> o((size_t)n * os, 0.0f), o1 = o;
                GdnTokens t;
                t.n = n;
                t.q = qk.data();
                t.k = qk.data() + d + 2;
                t.v = vv.data();
                t.g = gb.data();
                t.beta = gb.data() + 1;
                t.qk_stride = qs;
                t.v_stride = vs;
                t.gb_stride = gs;
                t.o = o.data();
                t.o_stride = os;
                gdn_steps(M.data(), d, d, t, 0.125f);
                for (int i = 0; i < n; i++)
                    gdn_step(M1.data(), d, d, t.q + i * qs, t.k + i * qs, t.v + i * vs, gb[(size_t)i * gs],
                             gb[(size_t)i * gs + 1], 0.125f, o1.data() + i * os);
                EXPECT_EQ(0, memcmp(M.data(), M1.data(), M.size() * 4)) << isa_name(isa) << " d=" << d << " n=" << n;
                EXPECT_EQ(0, memcmp(o.data(), o1.data(), o.size() * 4)) << isa_name(isa) << " d=" << d << " n=" << n;
            }
    }
}

TEST(L2Norm, MatchesDouble) {
    for (int64_t n : {1, 5, 16, 128}) {
        std::vector<float> x = random_floats(n, 11, -3, 3), y(n);
        l2_norm(x.data(), y.data(), n, 1e-6f);
        double ss = 0;
        for (float v : x) ss += (double)v * v;
        for (int64_t i = 0; i < n; i++) ASSERT_NEAR(y[i], x[i] / std::sqrt(ss), 1e-6);
    }
    std::vector<float> z(8, 0.0f), out(8, 1.0f);  // below eps: divided by eps, no NaN
    l2_norm(z.data(), out.data(), 8, 1e-6f);
    for (float v : out) EXPECT_EQ(v, 0.0f);
}

TEST(SigmoidMul, MatchesDouble) {
    for (Isa isa : all_isas()) {
        IsaScope scope(isa);
        for (int64_t n : {1, 7, 8, 9, 100}) {
            const std::vector<float> x = random_floats(n, 12, -3, 3), g = random_floats(n, 13, -8, 8);
            std::vector<float> y = x;
            sigmoid_mul(y.data(), g.data(), n);
            for (int64_t i = 0; i < n; i++) {
                const double want = x[i] / (1.0 + std::exp(-(double)g[i]));
                ASSERT_NEAR(y[i], want, 1e-6 * std::fabs(want) + 1e-7) << isa_name(isa) << " n=" << n;
            }
        }
    }
}

}  // namespace
}  // namespace bee
