// tests/unit/gpu/test_kv_quant: the device KV cache in the quantized types (gpu/ops.h KvFormat): kv_write's
// bytes against KvCache::write_k / write_v's (q8_0 and q4_0 rotated or not, the scalar TurboQuant types with
// the V norm alpha, TCQ; heads padded to a block; rows whose cells share 32-bit words), and attention over
// such rows (K and V of the same or different types, GQA, soft-cap, lists of one cell to several tiles) against
// the CPU attention kernel, each row alone the same bits as in the batch.
#include <cmath>
#include <cstring>

#include "base/thread_pool.h"
#include "gpu_test_util.h"
#include "kernels/kernels.h"
#include "kv/kv_cache.h"
#include "quant/turbo.h"

namespace bee {
namespace {

using test::GpuTest;
using test::random_floats;

struct WriteCase {
    GgmlType type;
    int head_dim;
    bool rotate;
};

// A one-layer KvCache with K and V of type t (so V gets the TurboQuant alpha), 3 kv heads.
KvCache one_layer_cache(GgmlType tk, GgmlType tv, int n_head_kv, int head_dim, int n_cells, bool rotate) {
    KvCacheParams kp;
    kp.n_layer = 1;
    kp.n_cells = n_cells;
    kp.n_head_kv = n_head_kv;
    kp.head_dim_k = kp.head_dim_v = head_dim;
    kp.n_embd_k = kp.n_embd_v = (int64_t)n_head_kv * head_dim;
    kp.type_k = tk;
    kp.type_v = tv;
    kp.rotate = rotate;
    return KvCache(kp);
}

TEST_F(GpuTest, KvWriteGivesTheCpuBytesPerType) {
    const WriteCase cases[] = {
        {GgmlType::Q8_0, 64, true},        {GgmlType::Q8_0, 128, true},       {GgmlType::Q8_0, 16, true},
        {GgmlType::Q8_0, 96, false},       {GgmlType::Q4_0, 128, true},       {GgmlType::Q4_0, 64, false},
        {GgmlType::TURBO3, 128, true},     {GgmlType::TURBO3, 16, true},      {GgmlType::TURBO3, 256, true},
        {GgmlType::TURBO2, 128, true},     {GgmlType::TURBO4, 64, true},      {GgmlType::TURBO3_64, 64, true},
        {GgmlType::TURBO4_64, 128, true},  {GgmlType::TURBO3_TCQ, 128, true}, {GgmlType::TURBO3_TCQ, 48, true},
        {GgmlType::TURBO2_TCQ, 256, true}, {GgmlType::Q4_1, 64, true},        {GgmlType::Q5_0, 128, true},
        {GgmlType::Q5_1, 64, true},        {GgmlType::Q5_0, 32, false},       {GgmlType::F32, 40, true},
        {GgmlType::BF16, 72, true},
    };
    const int n_head_kv = 3, n_cells = 10, n_rows = 8;
    const uint32_t cells[n_rows] = {6, 1, 3, 2, 7, 8, 0, 9};
    for (const WriteCase& wc : cases) {
        KvCache kv = one_layer_cache(wc.type, wc.type, n_head_kv, wc.head_dim, n_cells, wc.rotate);
        const int64_t n_embd = (int64_t)n_head_kv * wc.head_dim, stride = n_embd + 5;
        std::vector<float> x = random_floats((size_t)(n_rows * stride), 100 + (uint32_t)wc.head_dim, -1.0f, 1.0f);
        const float scales[n_rows] = {1.0f, 1e-3f, 37.0f, 0.0f, 2.5e-2f, 400.0f, 1.0f, 1.0f};  // row 3: all zeros
        for (int r = 0; r < n_rows; r++)
            for (int64_t i = 0; i < n_embd; i++) x[(size_t)(r * stride + i)] *= scales[r];
        // Rows 6 and 7: exact rounding ties of the unrotated legacy blocks (d = 1: 127 / 127, -8 / -8), values on
        // halves: q8_0 rounds them away from zero, q4_0 truncates x + 8.5 at an integer.
        for (int64_t i = 0; i < n_embd; i++) {
            const float half = 0.5f * (float)(i % 17) - 4.0f;
            x[(size_t)(6 * stride + i)] = i % 32 == 0 ? 127.0f : half;
            x[(size_t)(7 * stride + i)] = i % 32 == 0 ? -8.0f : half;
        }
        for (int r = 0; r < n_rows; r++) {
            kv.write_k(0, (int)cells[r], &x[(size_t)(r * stride)]);
            kv.write_v(0, (int)cells[r], &x[(size_t)(r * stride)]);
        }
        auto xb = upload_vec(x), cb = upload_bytes(cells, sizeof cells);
        for (bool is_v : {false, true}) {
            gpu::KvFormat f;
            f.type = wc.type;
            f.n_head_kv = n_head_kv;
            f.head_dim = wc.head_dim;
            f.rot = is_v ? kv.v_rot_group(0) : kv.k_rot_group();
            f.alpha = is_v ? turbo_v_alpha(wc.type) : 1.0f;
            const size_t row = f.row_bytes(), bytes = row * n_cells;
            ASSERT_EQ(row, is_v ? kv.v_row_bytes(0) : kv.k_row_bytes());
            gpu::Buffer buf(*dev, (bytes + 3) / 4 * 4, gpu::Memory::device);
            buf.zero();
            cl->begin();
            ops->kv_write(*cl, gpu::whole(*xb), stride, n_rows, gpu::whole(*cb), gpu::whole(buf), f);
            cl->end();
            cl->submit_and_wait();
            std::vector<uint8_t> got(bytes);
            buf.download(got.data(), bytes);
            const uint8_t* want = is_v ? kv.v_data(0) : kv.k_data(0);
            for (size_t i = 0; i < bytes; i++)
                ASSERT_EQ(got[i], want[i]) << ggml_type_name(wc.type) << " head_dim " << wc.head_dim
                                           << (is_v ? " V" : " K") << " cell " << i / row << " byte " << i % row;
        }
    }
}

struct AttnQCase {
    GgmlType k, v;
    int head_dim, n_head, n_head_kv;
    float softcap;
};

TEST_F(GpuTest, QuantizedKvAttentionMatchesTheCpuAndIsBatchInvariant) {
    const AttnQCase cases[] = {
        {GgmlType::Q8_0, GgmlType::Q8_0, 64, 4, 2, 0.0f},
        {GgmlType::Q8_0, GgmlType::Q8_0, 128, 8, 2, 30.0f},
        {GgmlType::Q8_0, GgmlType::Q8_0, 48, 4, 4, 0.0f},
        {GgmlType::Q4_0, GgmlType::Q4_0, 64, 4, 2, 0.0f},
        {GgmlType::F16, GgmlType::Q8_0, 64, 4, 2, 0.0f},
        {GgmlType::Q8_0, GgmlType::TURBO3, 128, 4, 1, 0.0f},
        {GgmlType::TURBO3, GgmlType::TURBO3, 64, 4, 2, 0.0f},
        {GgmlType::TURBO3, GgmlType::Q8_0, 256, 2, 1, 0.0f},
        {GgmlType::TURBO3_TCQ, GgmlType::TURBO3_TCQ, 128, 4, 2, 0.0f},
        {GgmlType::Q4_1, GgmlType::Q5_0, 64, 4, 2, 0.0f},
        {GgmlType::Q5_1, GgmlType::BF16, 64, 4, 2, 0.0f},
        {GgmlType::F32, GgmlType::Q8_0, 64, 4, 2, 0.0f},
    };
    const std::vector<int> lengths = {1, 5, 64, 65, 130, 300};
    const int n_cells = 300, n_rows = (int)lengths.size();
    ThreadPool pool(2);
    for (const AttnQCase& tc : cases) {
        const int hd = tc.head_dim;
        KvCache kv = one_layer_cache(tc.k, tc.v, tc.n_head_kv, hd, n_cells, true);
        const size_t n_embd = (size_t)tc.n_head_kv * hd;
        std::vector<float> kf = random_floats(n_embd * n_cells, 7 + (uint32_t)hd, -2, 2),
                           vf = random_floats(n_embd * n_cells, 8 + (uint32_t)hd);
        for (int c = 0; c < n_cells; c++) {
            kv.write_k(0, c, &kf[(size_t)c * n_embd]);
            kv.write_v(0, c, &vf[(size_t)c * n_embd]);
        }
        std::vector<float> q = random_floats((size_t)n_rows * tc.n_head * hd, 9, -2, 2);
        std::mt19937 rng(11);
        std::vector<std::vector<int32_t>> visible;
        for (int len : lengths) {  // a random subset of the cells in a random order (tree and window lists alike)
            std::vector<int32_t> all(n_cells);
            for (int c = 0; c < n_cells; c++) all[c] = c;
            std::shuffle(all.begin(), all.end(), rng);
            visible.emplace_back(all.begin(), all.begin() + len);
        }
        std::vector<uint32_t> off{0}, cells;
        for (const auto& l : visible) {
            cells.insert(cells.end(), l.begin(), l.end());
            off.push_back((uint32_t)cells.size());
        }
        const float scale = 1.0f / std::sqrt((float)hd);
        auto qb = upload_vec(q), kb = upload_bytes(kv.k_data(0), kv.k_row_bytes() * n_cells),
             vb = upload_bytes(kv.v_data(0), kv.v_row_bytes(0) * n_cells),
             ob = upload_bytes(off.data(), off.size() * 4), cb = upload_bytes(cells.data(), cells.size() * 4);
        const int64_t out_stride = (int64_t)tc.n_head * hd + 32;
        gpu::Buffer out(*dev, (size_t)n_rows * out_stride * 4, gpu::Memory::host);
        gpu::AttentionOp a;
        a.n_rows = n_rows;
        a.n_head = tc.n_head;
        a.n_head_kv = tc.n_head_kv;
        a.head_dim = hd;
        a.n_cells = n_cells;
        a.n_visible = (int64_t)cells.size();
        a.scale = scale;
        a.softcap = tc.softcap;
        a.q = gpu::whole(*qb);
        a.k = gpu::whole(*kb);
        a.v = gpu::whole(*vb);
        a.offsets = gpu::whole(*ob);
        a.cells = gpu::whole(*cb);
        a.out = gpu::whole(out);
        a.out_stride = out_stride;
        a.k_type = tc.k;
        a.v_type = tc.v;
        a.k_rot = kv.k_rot_group();
        a.v_rot = kv.v_rot_group(0);
        cl->begin();
        ops->attention(*cl, a);
        cl->end();
        cl->submit_and_wait();
        const std::vector<float> got = download(out, (size_t)n_rows * out_stride);

        std::vector<const std::vector<int32_t>*> vis;
        for (const auto& l : visible) vis.push_back(&l);
        std::vector<float> want((size_t)n_rows * tc.n_head * hd);
        AttentionArgs r;
        r.n_rows = n_rows;
        r.n_head = tc.n_head;
        r.n_head_kv = tc.n_head_kv;
        r.head_dim = hd;
        r.q = q.data();
        r.out = want.data();
        r.scale = scale;
        r.softcap = tc.softcap;
        r.k_type = tc.k;
        r.v_type = tc.v;
        r.k = kv.k_data(0);
        r.v = kv.v_data(0);
        r.k_cell_bytes = kv.k_row_bytes();
        r.v_cell_bytes = kv.v_row_bytes(0);
        r.k_rot_group = kv.k_rot_group();
        r.v_rot_group = kv.v_rot_group(0);
        r.visible = vis.data();
        attention(pool, r);
        const std::string what =
            std::string(ggml_type_name(tc.k)) + "/" + ggml_type_name(tc.v) + " head_dim " + std::to_string(hd);
        for (int row = 0; row < n_rows; row++)
            for (int i = 0; i < tc.n_head * hd; i++)
                ASSERT_NEAR(got[(size_t)row * out_stride + i], want[(size_t)row * tc.n_head * hd + i], 5e-5)
                    << what << " row " << row << " element " << i;

        expect_rows_alone_same(a, out, off, cells, q, (size_t)tc.n_head * hd, got, what);  // the same bits alone
    }
}

TEST_F(GpuTest, KvWriteRefusesWhatTheDeviceCannotStore) {
    for (GgmlType t :
         {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q4_1, GgmlType::Q5_1, GgmlType::TURBO3_TCQ})
        EXPECT_TRUE(gpu::Ops::supports_kv(t)) << ggml_type_name(t);
    EXPECT_FALSE(gpu::Ops::supports_kv(GgmlType::Q4_K));
    gpu::KvFormat f;
    f.type = GgmlType::Q4_K;
    f.n_head_kv = 1;
    f.head_dim = 256;
    gpu::Buffer b(*dev, 4096, gpu::Memory::device);
    EXPECT_THROW(ops->kv_write(*cl, gpu::whole(b), 256, 1, gpu::whole(b), gpu::whole(b), f), Error);
    f.type = GgmlType::Q8_0;
    f.head_dim = 512;  // wider than a workgroup's 256
    EXPECT_THROW(ops->kv_write(*cl, gpu::whole(b), 512, 1, gpu::whole(b), gpu::whole(b), f), Error);
    f.head_dim = 96;
    f.rot = 64;  // not a divisor of the head
    EXPECT_THROW(ops->kv_write(*cl, gpu::whole(b), 96, 1, gpu::whole(b), gpu::whole(b), f), Error);
    gpu::AttentionOp a;
    a.n_rows = 1;
    a.n_head = a.n_head_kv = 1;
    a.head_dim = 96;
    a.n_cells = 1;
    a.out_stride = 96;
    a.k_type = GgmlType::Q8_0;
    a.k_rot = 64;
    a.q = a.k = a.v = a.offsets = a.cells = a.out = gpu::whole(b);
    EXPECT_THROW(ops->attention(*cl, a), Error);
    a.k_rot = 0;
    a.v_type = GgmlType::Q4_K;  // not a KV type
    EXPECT_THROW(ops->attention(*cl, a), Error);
}

}  // namespace
}  // namespace bee
