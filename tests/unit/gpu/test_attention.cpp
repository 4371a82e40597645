// tests/unit/gpu/test_attention: the residual add, scale and bias add, the f16 KV write and attention over an
// f16 KV cache (GQA, soft-cap, lists of 1 to several tiles) against kernels/ref and base/fp16, and a row's
// attention output alone vs in a batch, bit for bit.
#include <cmath>
#include <cstring>

#include "base/fp16.h"
#include "gpu_test_util.h"
#include "kernels/kernels.h"

namespace bee {
namespace {

using test::GpuTest;
using test::random_floats;

TEST_F(GpuTest, AddScaleAndBiasAreExact) {
    const int64_t rows = 5, cols = 77, stride = 96, n = rows * stride;
    std::vector<float> x = random_floats((size_t)n, 1), y = random_floats((size_t)n, 2),
                       b = random_floats((size_t)cols, 3);
    auto xa = upload_vec(x), xs = upload_vec(x), xb = upload_vec(x), yb = upload_vec(y), bb = upload_vec(b);
    cl->begin();
    ops->add(*cl, gpu::whole(*xa), gpu::whole(*yb), n);
    ops->scale(*cl, gpu::whole(*xs), 0.37f, n);
    ops->add_row(*cl, gpu::whole(*xb), gpu::whole(*bb), cols, rows, stride);
    cl->end();
    cl->submit_and_wait();
    const std::vector<float> ga = download(*xa, (size_t)n), gs = download(*xs, (size_t)n),
                             gb = download(*xb, (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        ASSERT_EQ(ga[(size_t)i], x[(size_t)i] + y[(size_t)i]) << i;
        ASSERT_EQ(gs[(size_t)i], x[(size_t)i] * 0.37f) << i;
        const int64_t c = i % stride;
        ASSERT_EQ(gb[(size_t)i], c < cols ? x[(size_t)i] + b[(size_t)c] : x[(size_t)i]) << i;
    }
}

TEST_F(GpuTest, KvWriteGivesTheCpuHalfBits) {
    const int n_rows = 3, n_embd = 70, stride = 96, n_cells = 8;
    std::vector<float> x = random_floats((size_t)(n_rows * stride), 4, -70000.0f, 70000.0f);
    const float edge[] = {0.0f,
                          -0.0f,
                          1e-8f,
                          -6e-8f,
                          3e-5f,
                          6.1e-5f,
                          65504.0f,
                          65520.0f,
                          1e9f,
                          -1e9f,
                          1.0f + 1.0f / 2048,
                          1.0f + 3.0f / 2048,
                          2.0f + 1.0f / 1024,
                          0.1f,
                          std::ldexp(1.0f, -25),
                          std::ldexp(3.0f, -26),
                          INFINITY,
                          -INFINITY};
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) x[i * 3] = edge[i];
    for (int i = 0; i < n_embd; i++) x[(size_t)stride + (size_t)i] *= 1e-6f;  // row 1: small and subnormal halves
    const uint32_t cells[n_rows] = {6, 1, 3};
    auto xb = upload_vec(x), cb = upload_bytes(cells, sizeof cells);
    gpu::Buffer kv(*dev, (size_t)n_cells * n_embd * 2, gpu::Memory::device);
    kv.zero();
    cl->begin();
    ops->kv_write(*cl, gpu::whole(*xb), stride, n_rows, gpu::whole(*cb), gpu::whole(kv), n_embd);
    cl->end();
    cl->submit_and_wait();
    std::vector<uint16_t> got((size_t)n_cells * n_embd);
    kv.download(got.data(), got.size() * 2);
    for (int r = 0; r < n_rows; r++)
        for (int i = 0; i < n_embd; i++)
            ASSERT_EQ(got[(size_t)cells[r] * n_embd + i], fp32_to_fp16(x[(size_t)r * stride + i]))
                << "row " << r << " value " << x[(size_t)r * stride + i];
    EXPECT_EQ(got[0], 0);  // cell 0 untouched
}

// A KV cache of random f16 rows, random queries and per-row visible lists of the given lengths.
struct AttnCase {
    int n_head = 4, n_head_kv = 2, head_dim = 64, n_cells = 300;
    float softcap = 0.0f;
    std::vector<int> lengths;
    std::vector<uint16_t> k, v;
    std::vector<float> q;
    std::vector<std::vector<int32_t>> visible;
    void fill(uint32_t seed) {
        const size_t kv_n = (size_t)n_cells * n_head_kv * head_dim;
        std::vector<float> kf = random_floats(kv_n, seed, -2, 2), vf = random_floats(kv_n, seed + 1);
        k.resize(kv_n);
        v.resize(kv_n);
        for (size_t i = 0; i < kv_n; i++) {
            k[i] = fp32_to_fp16(kf[i]);
            v[i] = fp32_to_fp16(vf[i]);
        }
        q = random_floats(lengths.size() * n_head * head_dim, seed + 2, -2, 2);
        std::mt19937 rng(seed + 3);
        for (int len : lengths) {  // a random subset of the cells, in a random (position) order
            std::vector<int32_t> all(n_cells);
            for (int c = 0; c < n_cells; c++) all[c] = c;
            std::shuffle(all.begin(), all.end(), rng);
            visible.emplace_back(all.begin(), all.begin() + len);
        }
    }
};

TEST_F(GpuTest, AttentionMatchesReferenceAndIsBatchInvariant) {
    const std::vector<int> lengths = {1, 5, 64, 65, 130, 300};
    for (int head_dim : {64, 48, 256})
        for (float softcap : {0.0f, 30.0f}) {
            AttnCase t;
            t.head_dim = head_dim;
            t.softcap = softcap;
            t.lengths = lengths;
            t.fill(10 + (uint32_t)head_dim);
            const int n_rows = (int)lengths.size(), hd = head_dim;
            const float scale = 1.0f / std::sqrt((float)hd);
            std::vector<uint32_t> off{0}, cells;
            for (const auto& l : t.visible) {
                cells.insert(cells.end(), l.begin(), l.end());
                off.push_back((uint32_t)cells.size());
            }
            auto qb = upload_vec(t.q), kb = upload_bytes(t.k.data(), t.k.size() * 2),
                 vb = upload_bytes(t.v.data(), t.v.size() * 2), ob = upload_bytes(off.data(), off.size() * 4),
                 cb = upload_bytes(cells.data(), cells.size() * 4);
            const int64_t out_stride = (int64_t)t.n_head * hd + 32;
            gpu::Buffer out(*dev, (size_t)n_rows * out_stride * 4, gpu::Memory::host);
            gpu::AttentionOp a;
            a.n_rows = n_rows;
            a.n_head = t.n_head;
            a.n_head_kv = t.n_head_kv;
            a.head_dim = hd;
            a.n_cells = t.n_cells;
            a.n_visible = (int64_t)cells.size();
            a.scale = scale;
            a.softcap = softcap;
            a.q = gpu::whole(*qb);
            a.k = gpu::whole(*kb);
            a.v = gpu::whole(*vb);
            a.offsets = gpu::whole(*ob);
            a.cells = gpu::whole(*cb);
            a.out = gpu::whole(out);
            a.out_stride = out_stride;
            cl->begin();
            ops->attention(*cl, a);
            cl->end();
            cl->submit_and_wait();
            const std::vector<float> got = download(out, (size_t)n_rows * out_stride);

            std::vector<const std::vector<int32_t>*> vis;
            for (const auto& l : t.visible) vis.push_back(&l);
            std::vector<float> want((size_t)n_rows * t.n_head * hd);
            AttentionArgs r;
            r.n_rows = n_rows;
            r.n_head = t.n_head;
            r.n_head_kv = t.n_head_kv;
            r.head_dim = hd;
            r.q = t.q.data();
            r.out = want.data();
            r.scale = scale;
            r.softcap = softcap;
            r.k_type = r.v_type = GgmlType::F16;
            r.k = (const uint8_t*)t.k.data();
            r.v = (const uint8_t*)t.v.data();
            r.k_cell_bytes = r.v_cell_bytes = (size_t)t.n_head_kv * hd * 2;
            r.visible = vis.data();
            ref::attention(r);
            for (int row = 0; row < n_rows; row++)
                for (int i = 0; i < t.n_head * hd; i++)
                    ASSERT_NEAR(got[(size_t)row * out_stride + i], want[(size_t)row * t.n_head * hd + i], 2e-5)
                        << "head_dim " << hd << " softcap " << softcap << " row " << row << " element " << i;

            expect_rows_alone_same(a, out, off, cells, t.q, (size_t)t.n_head * hd, got,
                                   "head_dim " + std::to_string(hd));  // the same bits alone
        }
}

TEST_F(GpuTest, AttentionRefusesBadShapes) {
    gpu::AttentionOp a;
    a.n_rows = 1;
    a.n_head = 3;
    a.n_head_kv = 2;
    a.head_dim = 64;
    a.n_cells = 1;
    a.out_stride = 192;
    EXPECT_THROW(ops->attention(*cl, a), Error);  // 3 heads over 2 KV heads
    a.n_head = 2;
    a.head_dim = 512;
    a.out_stride = 1024;
    EXPECT_THROW(ops->attention(*cl, a), Error);  // head wider than 256
}

}  // namespace
}  // namespace bee
