// tests/unit/gpu/test_ops: rms_norm, rope (normal, neox, freq factors, partial rotation), act_mul (SiLU, GELU) and softmax
// (with and without soft-cap) shaders against kernels/ref on random rows of several lengths.
#include <cmath>
#include <cstring>

#include "gpu_test_util.h"
#include "kernels/kernels.h"

namespace bee {
namespace {

using test::GpuTest;
using test::random_floats;

// Row lengths: shorter than a workgroup, not a multiple of it, and long.
const int64_t kLengths[] = {1, 7, 100, 129, 896, 2053};

// The fused residual add and norm gives add()'s x and rms_norm()'s output bit for bit.
TEST_F(GpuTest, AddRmsNormIsAddThenRmsNorm) {
    for (int64_t n : kLengths)
        for (bool with_w : {true, false}) {
            const int64_t rows = 3, stride = n + 7;
            const std::vector<float> x = random_floats((size_t)(rows * stride), 5 + (uint32_t)n, -3, 3),
                                     y = random_floats((size_t)(rows * stride), 6, -1, 1),
                                     w = random_floats((size_t)n, 7, 0.5f, 1.5f);
            auto x1 = upload_vec(x), x2 = upload_vec(x), yb = upload_vec(y), wb = upload_vec(w);
            auto n1 = upload_vec(std::vector<float>(x.size())), n2 = upload_vec(std::vector<float>(x.size()));
            const gpu::BufferRange wr = with_w ? gpu::whole(*wb) : gpu::BufferRange{};
            cl->begin();
            ops->add(*cl, gpu::whole(*x1), gpu::whole(*yb), rows * stride);
            ops->rms_norm(*cl, gpu::whole(*x1), wr, gpu::whole(*n1), n, rows, stride, 1e-6f);
            ops->add_rms_norm(*cl, gpu::whole(*x2), gpu::whole(*yb), wr, gpu::whole(*n2), n, rows, stride, 1e-6f);
            cl->end();
            cl->submit_and_wait();
            const std::vector<float> a1 = download(*x1, x.size()), a2 = download(*x2, x.size()),
                                     m1 = download(*n1, x.size()), m2 = download(*n2, x.size());
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t i = 0; i < n; ++i) {
                    const size_t j = (size_t)(r * stride + i);
                    ASSERT_EQ(0, memcmp(&a1[j], &a2[j], 4)) << "x, n " << n << " row " << r << " i " << i;
                    ASSERT_EQ(0, memcmp(&m1[j], &m2[j], 4)) << "norm, n " << n << " row " << r << " i " << i;
                }
        }
}

TEST_F(GpuTest, RmsNormMatchesReference) {
    for (int64_t n : kLengths)
        for (bool with_w : {true, false}) {
            const int64_t rows = 3, stride = n + 5;
            std::vector<float> x = random_floats((size_t)(rows * stride), 1 + (uint32_t)n, -3, 3),
                               w = random_floats((size_t)n, 2, 0.5f, 1.5f);
            auto xb = upload_vec(x), wb = upload_vec(w);
            gpu::Buffer yb(*dev, x.size() * 4, gpu::Memory::host);
            cl->begin();
            ops->rms_norm(*cl, gpu::whole(*xb), with_w ? gpu::whole(*wb) : gpu::BufferRange{}, gpu::whole(yb), n, rows,
                          stride, 1e-6f);
            ops->rms_norm(*cl, gpu::whole(*xb), with_w ? gpu::whole(*wb) : gpu::BufferRange{}, gpu::whole(*xb), n, rows,
                          stride, 1e-6f);  // in place
            cl->end();
            cl->submit_and_wait();
            const std::vector<float> y = download(yb, x.size()), y_inplace = download(*xb, x.size());
            for (int64_t r = 0; r < rows; ++r) {
                std::vector<float> want((size_t)n);
                ref::rms_norm(&x[(size_t)(r * stride)], with_w ? w.data() : nullptr, want.data(), n, 1e-6f);
                for (int64_t i = 0; i < n; ++i) {
                    const float got = y[(size_t)(r * stride + i)];
                    ASSERT_NEAR(got, want[(size_t)i], 2e-6 * std::fabs(want[(size_t)i]) + 1e-7)
                        << "n " << n << " row " << r;
                    ASSERT_EQ(got, y_inplace[(size_t)(r * stride + i)]);
                }
            }
        }
}

TEST_F(GpuTest, RopeMatchesReference) {
    struct Case {
        int n_head, head_dim, n_rot;
        bool neox, factors;
        float freq_scale;
    };
    const Case cases[] = {{4, 64, 64, false, false, 1.0f},
                          {3, 128, 128, true, false, 1.0f},
                          {2, 80, 32, false, false, 0.5f},
                          {5, 64, 48, true, true, 1.0f}};
    const int32_t positions[] = {0, 1, 17, 511, 4095, 32767};
    const int n_rows = (int)(sizeof positions / sizeof positions[0]);
    for (const Case& c : cases) {
        const size_t row = (size_t)c.n_head * (size_t)c.head_dim;
        std::vector<float> x = random_floats(row * n_rows, (uint32_t)c.head_dim + (uint32_t)c.n_rot, -2, 2);
        std::vector<float> factors = random_floats((size_t)c.n_rot / 2, 9, 1.0f, 8.0f);
        gpu::RopeArgs a;
        a.n_rot = c.n_rot;
        a.freq_base = 10000.0f;
        a.freq_scale = c.freq_scale;
        a.neox = c.neox;
        a.freq_factors = c.factors ? factors.data() : nullptr;
        std::vector<float> cs((size_t)n_rows * (size_t)c.n_rot);  // (n_rows, n_rot / 2, 2)
        gpu::Ops::rope_table(positions, n_rows, a, cs.data());
        auto xb = upload_vec(x), csb = upload_vec(cs);
        cl->begin();
        ops->rope(*cl, gpu::whole(*xb), gpu::whole(*csb), n_rows, c.n_head, c.head_dim, a);
        cl->end();
        cl->submit_and_wait();
        const std::vector<float> got = download(*xb, x.size());

        RopeParams rp;
        rp.n_rot = c.n_rot;
        rp.freq_base = 10000.0f;
        rp.freq_scale = c.freq_scale;
        rp.mode = c.neox ? RopeMode::neox : RopeMode::normal;
        rp.freq_factors = c.factors ? factors.data() : nullptr;
        for (int r = 0; r < n_rows; ++r) {
            std::vector<float> want(x.begin() + (long)(r * row), x.begin() + (long)((r + 1) * row));
            ref::rope(want.data(), c.n_head, c.head_dim, positions[r], rp);
            // note: the same cos/sin floats and the same unfused products, so equal up to a driver that fuses
            // anyway: 5e-7 is two ulp of the inputs' scale (|x| < 2). Angles computed on the device (NVIDIA,
            // pos 511: 2.2e-5 off) fail this.
            for (size_t i = 0; i < row; ++i)
                ASSERT_NEAR(got[r * row + i], want[i], 5e-7)
                    << "head_dim " << c.head_dim << " n_rot " << c.n_rot << " pos " << positions[r] << " i " << i;
        }
    }
}

TEST_F(GpuTest, GatedActivationsMatchReference) {
    for (gpu::Activation act : {gpu::Activation::silu, gpu::Activation::gelu_tanh})
        for (int64_t n : kLengths) {
            std::vector<float> gate = random_floats((size_t)n, 3, -12, 12), up = random_floats((size_t)n, 4, -2, 2);
            auto gb = upload_vec(gate), ub = upload_vec(up);
            cl->begin();
            ops->act_mul(*cl, act, gpu::whole(*gb), gpu::whole(*ub), n);
            cl->end();
            cl->submit_and_wait();
            const std::vector<float> got = download(*gb, (size_t)n);
            std::vector<float> want = gate;
            if (act == gpu::Activation::silu) {
                ref::silu(want.data(), n);
            } else {
                ref::gelu_tanh(want.data(), n);
            }
            for (int64_t i = 0; i < n; ++i) {
                want[(size_t)i] *= up[(size_t)i];
                ASSERT_NEAR(got[(size_t)i], want[(size_t)i], 4e-6 * std::fabs(want[(size_t)i]) + 1e-6)
                    << (act == gpu::Activation::silu ? "silu" : "gelu_tanh") << " n " << n << " x " << gate[(size_t)i];
            }
        }
}

TEST_F(GpuTest, SoftmaxMatchesReference) {
    for (int64_t n : kLengths)
        for (float cap : {0.0f, 30.0f}) {
            const int64_t rows = 2, stride = n + 3;
            std::vector<float> x = random_floats((size_t)(rows * stride), 5 + (uint32_t)n, -40, 40);
            auto xb = upload_vec(x);
            cl->begin();
            ops->softmax(*cl, gpu::whole(*xb), n, rows, stride, cap);
            cl->end();
            cl->submit_and_wait();
            const std::vector<float> got = download(*xb, x.size());
            for (int64_t r = 0; r < rows; ++r) {
                std::vector<float> want(x.begin() + (long)(r * stride), x.begin() + (long)(r * stride + n));
                if (cap > 0) softcap(want.data(), cap, n);
                ref::softmax(want.data(), n);
                for (int64_t i = 0; i < n; ++i)
                    ASSERT_NEAR(got[(size_t)(r * stride + i)], want[(size_t)i], 1e-5 * want[(size_t)i] + 1e-9)
                        << "n " << n << " cap " << cap;
                for (int64_t i = n; i < stride; ++i)  // the gap between rows is not touched
                    ASSERT_EQ(got[(size_t)(r * stride + i)], x[(size_t)(r * stride + i)]);
            }
        }
}

}  // namespace
}  // namespace bee
